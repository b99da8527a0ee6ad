package tools

import (
	"context"
	"errors"
)

// ClientFiles reaches the ACP client's file methods for a tool call: the
// file as the editor holds it (unsaved changes included), and a write the
// editor sees at once. A session's Files is nil when the client offers
// neither method; a method the client lacks returns ErrClientLacks.
type ClientFiles interface {
	// ReadTextFile is fs/read_text_file: the file at path (absolute).
	ReadTextFile(ctx context.Context, path string) (string, error)
	// WriteTextFile is fs/write_text_file.
	WriteTextFile(ctx context.Context, path, content string) error
}

// ErrClientLacks is the error of a client method the client did not
// advertise at initialize.
var ErrClientLacks = errors.New("the client does not offer this method")
