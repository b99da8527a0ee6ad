package engine

import (
	"errors"
	"fmt"
)

// ErrSpillTooLarge is returned by SpillText for data longer than
// Config.SpillCap.
var ErrSpillTooLarge = errors.New("text is larger than the spill cap")

// SpillText writes data as a complete spill file for owner (a session's
// token), named after base ("mcp-github-3"), beside the spill files of
// command output and with the same protections: a 0600 file created
// O_EXCL|O_NOFOLLOW in the owner's 0700 directory, reached through the
// spill root, removed by the same age sweep. It returns the file's
// absolute path. Bytes of base outside [A-Za-z0-9._-] become '_', so the
// name stays one path element. Data longer than Config.SpillCap is refused with
// ErrSpillTooLarge; a failed write removes the partial file. It never
// blocks on a running command.
func (e *Engine) SpillText(owner, base string, data []byte) (string, error) {
	if int64(len(data)) > e.cfg.SpillCap {
		return "", fmt.Errorf("spill %s: %w", base, ErrSpillTooLarge)
	}
	f, abs, err := e.spills.create(owner, safeBase(base))
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = f.Remove()
		return "", fmt.Errorf("spill %s: %w", base, werr)
	}
	return abs, nil
}

// safeBase is base with every byte outside [A-Za-z0-9._-] replaced by '_',
// at most 64 bytes, "spill" when empty.
func safeBase(base string) string {
	b := []byte(base)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			b[i] = '_'
		}
	}
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return "spill"
	}
	return string(b)
}
