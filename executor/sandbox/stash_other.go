//go:build !linux

package sandbox

import "errors"

// renameNoReplace is Linux's renameat2 RENAME_NOREPLACE; elsewhere there is
// none, and placeholders are made and removed in place.
func renameNoReplace(from, to string) error {
	return errors.New("renameat2: not on this system")
}
