package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Journal is the single writer of one session's journal. It holds the
// file's flock until Close. Its methods are safe for concurrent use; each
// record is one whole line, written at once (a record carrying a large
// text is written in pieces straight from the text: see writeBig).
type Journal struct {
	id  string
	now func() time.Time

	mu       sync.Mutex
	f        *os.File
	enc      *encoder
	size     int64 // bytes in the file: all whole lines
	seq      uint64
	repaired int64
	// backlog holds records whose write failed (a full disk), in order;
	// each Append first retries them. backlogBytes is their size.
	backlog      [][]byte
	backlogBytes int
	dropped      int   // records refused because the backlog was full
	broken       error // set when a failed write could not be undone
	syncErr      error // the last background fsync's failure, reported once
	closed       bool

	// A TurnEnd asks the syncer goroutine for an fsync, so durability at
	// turn boundaries never sits on the response path.
	syncReq  chan struct{}
	syncDone chan struct{}
	// dirSync, when set, makes the new file's directory entry durable too;
	// the syncer runs it once, before its first file sync.
	dirSync func() error
}

func newJournal(id string, f *os.File, size int64, seq uint64, now func() time.Time) *Journal {
	j := &Journal{id: id, now: now, f: f, enc: newEncoder(), size: size, seq: seq,
		syncReq: make(chan struct{}, 1), syncDone: make(chan struct{})}
	go j.syncer()
	return j
}

// syncer fsyncs the file whenever a turn ended, coalescing requests, until
// Close.
func (j *Journal) syncer() {
	defer close(j.syncDone)
	for range j.syncReq {
		if err := j.syncOnce(); err != nil {
			j.mu.Lock()
			j.syncErr = fmt.Errorf("sync journal %s: %w", j.id, err)
			j.mu.Unlock()
		}
	}
}

// syncOnce makes the file (and, the first time, its directory entry)
// durable. Only the syncer goroutine calls it.
func (j *Journal) syncOnce() error {
	j.mu.Lock()
	dirSync := j.dirSync
	j.dirSync = nil
	j.mu.Unlock()
	if dirSync != nil {
		if err := dirSync(); err != nil {
			return err
		}
	}
	return j.f.Sync()
}

// ID is the session id.
func (j *Journal) ID() string { return j.id }

// Repaired is how many bytes of a torn last line OpenAppend cut away (0 for
// an intact file).
func (j *Journal) Repaired() int64 { return j.repaired }

// Append records ev. The streaming-only events (event.TextDelta,
// event.ThoughtDelta, event.ToolOutput) are not journaled: Append ignores
// them and returns nil. An event type it does not know fails with
// ErrUnknownEvent. A TurnEnd starts an fsync in the background (the reply
// to the client never waits for the disk); a failure of it is returned by
// the next Append or Close. Other records are not synced (see Sync). Card output beyond MaxCardOutput is cut to
// its tail. A record longer than MaxLine fails with ErrTooLarge.
//
// When a write fails (a full disk), the partial record is cut away, the
// record is kept in memory and the error (errors.Is ErrKept) returned; the
// next Append (and Close) first writes the kept records, in order, so
// nothing is lost once the disk has room again. At most MaxBacklog bytes
// are kept; past that, records are refused with ErrBacklogFull. If a cut
// fails, every later call fails with that error.
func (j *Journal) Append(ev event.Event) error {
	var r wireRecord
	ok, err := fromEvent(ev, &r)
	if err != nil || !ok {
		return err
	}
	_, end := ev.(event.TurnEnd)
	return j.write(&r, end)
}

// AppendState records value (marshalled to JSON) as the latest value of the
// session state key: readers keep the latest value per key.
func (j *Journal) AppendState(key string, value any) error {
	if key == "" {
		return errors.New("append state: empty key")
	}
	b, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("append state %q: %w", key, err)
	}
	return j.write(&wireRecord{Type: typeState, Key: key, Value: b}, false)
}

// MaxBacklog bounds the records a journal keeps in memory while its writes
// fail: past it, new records are refused (and counted) until the disk
// takes the backlog.
const MaxBacklog = 64 << 20

func (j *Journal) write(r *wireRecord, sync bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	r.V, r.Seq = Version, j.seq+1
	if r.T.IsZero() {
		r.T = j.now().UTC()
	}
	if handled, err := j.writeBig(r, sync); handled {
		return err
	}
	line, err := j.enc.line(r)
	if err != nil {
		return fmt.Errorf("append to journal %s: %w", j.id, err)
	}
	if len(j.backlog) > 0 {
		if j.backlogBytes+len(line) > MaxBacklog {
			j.dropped++
			return fmt.Errorf("append to journal %s: %w (%d records wait; %d refused)", j.id, ErrBacklogFull, len(j.backlog), j.dropped)
		}
		j.keep(line)
		if err := j.flushBacklog(); err != nil {
			return err
		}
	} else if err := j.writeLine(line); err != nil {
		j.keep(line)
		return fmt.Errorf("append to journal %s: %w (%w)", j.id, ErrKept, err)
	} else {
		j.seq++
	}
	if sync {
		select {
		case j.syncReq <- struct{}{}:
		default: // an fsync is already pending; it will cover this record
		}
	}
	return nil
}

// keep queues a copy of line (the encoder reuses its buffer) and takes its
// sequence number, so later records follow it.
func (j *Journal) keep(line []byte) {
	j.backlog = append(j.backlog, bytes.Clone(line))
	j.backlogBytes += len(line)
	j.seq++
}

// writeLine writes one whole line. A partial write is cut away; when the
// cut fails too, the journal is broken for good.
func (j *Journal) writeLine(line []byte) error {
	n, err := j.f.Write(line)
	if err != nil {
		if n > 0 {
			if terr := j.f.Truncate(j.size); terr != nil {
				j.broken = fmt.Errorf("journal %s holds a partial record: %w", j.id, errors.Join(err, terr))
			}
		}
		return err
	}
	j.size += int64(n)
	return nil
}

// flushBacklog writes the kept records in order until one fails.
func (j *Journal) flushBacklog() error {
	for len(j.backlog) > 0 {
		line := j.backlog[0]
		if err := j.writeLine(line); err != nil {
			return fmt.Errorf("append to journal %s: %w (%d records wait: %w)", j.id, ErrKept, len(j.backlog), err)
		}
		j.backlog[0] = nil
		j.backlog = j.backlog[1:]
		j.backlogBytes -= len(line)
	}
	j.backlog = nil
	return nil
}

// Backlog is how many records wait to be written because writes failed.
func (j *Journal) Backlog() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.backlog)
}

// usable reports why the journal cannot be written, including (once) a
// failed background fsync. Called with mu held.
func (j *Journal) usable() error {
	if j.closed {
		return ErrClosed
	}
	if err := j.syncErr; err != nil {
		j.syncErr = nil
		return err
	}
	return j.broken
}

// Sync flushes the journal to stable storage.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync journal %s: %w", j.id, err)
	}
	return nil
}

// Close fsyncs the journal, releases its lock and closes it. Closing a
// closed journal returns nil.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	var lost error
	if len(j.backlog) > 0 {
		if err := j.flushBacklog(); err != nil {
			lost = fmt.Errorf("%d records could not be written: %w", len(j.backlog), err)
		}
	}
	j.closed = true
	close(j.syncReq)
	j.mu.Unlock()
	<-j.syncDone // the syncer may need mu to record an error
	j.mu.Lock()
	serr := errors.Join(j.syncErr, j.f.Sync())
	cerr := j.f.Close()
	if err := errors.Join(lost, serr, cerr); err != nil {
		return fmt.Errorf("close journal %s: %w", j.id, err)
	}
	return nil
}
