package replay

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// maxIDLen bounds a session id (and so a journal's file name).
const maxIDLen = 128

// NewSessionID returns a new session id: the UTC creation time to the
// microsecond followed by 64 random bits, e.g.
// "20260501T120304.123456Z-9f86d081884c7d65". Ids sort by creation time,
// are unique, and are safe as file names.
func NewSessionID() string {
	return newSessionID(time.Now())
}

func newSessionID(now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return now.UTC().Format("20060102T150405.000000Z") + "-" + hex.EncodeToString(b[:])
}

// ValidID reports (as an error wrapping ErrBadID) whether id is not a safe
// session id: 1 to 128 characters of [A-Za-z0-9._-], starting with a letter
// or digit. Ids of that form cannot name a path outside the sessions
// directory. Ids from NewSessionID are always valid.
func ValidID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("%w: %q: must be 1 to %d characters", ErrBadID, id, maxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum || i > 0 && (c == '.' || c == '_' || c == '-') {
			continue
		}
		return fmt.Errorf("%w: %q: only letters, digits, '.', '_' and '-', starting with a letter or digit", ErrBadID, id)
	}
	return nil
}

// fileName is the journal file of a valid id.
func fileName(id string) string { return id + ext }

const ext = ".jsonl"
