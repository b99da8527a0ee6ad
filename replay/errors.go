package replay

import "errors"

var (
	// ErrLocked is returned when another writer (in this process or
	// another) holds the session's journal open for writing.
	ErrLocked = errors.New("session journal is open for writing elsewhere (another dsh-acp is serving this session)")

	// ErrBadID is returned for a session id that is not of the safe form
	// (see ValidID).
	ErrBadID = errors.New("invalid session id")

	// ErrUnsafe is returned when the sessions directory or a journal file
	// is not safe to use: a symlink, not a directory or regular file,
	// owned by another user, or (the directory) writable by others.
	ErrUnsafe = errors.New("unsafe session storage")

	// ErrNoHeader is returned when a journal holds no session header and
	// no event: it is not a session journal (or its creation was torn).
	ErrNoHeader = errors.New("not a session journal: no session header")

	// ErrClosed is returned by a Journal's methods after Close.
	ErrClosed = errors.New("session journal is closed")
	// ErrKept is wrapped by an Append whose write failed: the record is
	// kept in memory and written, in order, by the next Append or Close.
	ErrKept = errors.New("the record is kept until the disk takes it")
	// ErrShortened is wrapped by an Append whose record could not be
	// written whole and was written compact: its large texts cut to
	// their tails behind a line saying so (see Journal.Append).
	ErrShortened = errors.New("the record was saved shortened")
	// ErrDropped is wrapped by an Append of an output checkpoint that
	// could not be written: it is dropped (the call's result carries the
	// whole output).
	ErrDropped = errors.New("a running call's output checkpoint was not saved")
	// ErrBacklogFull is returned when MaxBacklog bytes of records already
	// wait: the record is refused.
	ErrBacklogFull = errors.New("too many records wait to be written; this one is dropped")

	// ErrTooLarge is returned by Append for a record longer than MaxLine.
	ErrTooLarge = errors.New("journal record too large")

	// ErrBadCursor is returned by List for a cursor it did not issue.
	ErrBadCursor = errors.New("invalid session list cursor")

	// ErrUnknownEvent is returned by Append for an event type the journal
	// does not know how to record.
	ErrUnknownEvent = errors.New("unknown event type")
)
