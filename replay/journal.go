package replay

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
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
	// backlog holds the writes that failed (a full disk) even in compact
	// form, in order; each Append first retries them. backlogBytes is the
	// size of their whole lines.
	backlog      []pending
	backlogBytes int
	dropped      int   // records refused because the backlog was full
	shortened    int   // records written compact (see compact.go)
	broken       error // set when a failed write could not be undone
	syncErr      error // the last background fsync's failure, reported once
	closed       bool
	// reserve is the store's disk space held back for compact records;
	// nil for none.
	reserve *reserve

	// batch is the reused buffer a multi-record Append gathers its lines in.
	batch []byte

	// A TurnEnd asks the syncer goroutine for an fsync, so durability at
	// turn boundaries never sits on the response path; the syncer runs at
	// most one fsync per syncEvery (see syncer).
	syncReq   chan struct{}
	syncDone  chan struct{}
	syncStop  chan struct{} // closed by Close: a waiting syncer stops waiting
	syncEvery time.Duration
	syncFile  func() error              // f.Sync (tests count the calls)
	writeFile func([]byte) (int, error) // f.Write (tests count the calls)
	// dirSync, when set, makes the new file's directory entry durable too;
	// the syncer runs it once, before its first file sync.
	dirSync func() error
}

// newJournal starts the journal of session id on f, which holds size bytes
// of whole lines up to record seq.
func (s *Store) newJournal(id string, f *os.File, size int64, seq uint64) *Journal {
	j := &Journal{id: id, now: s.now, f: f, enc: newEncoder(), size: size, seq: seq,
		syncReq: make(chan struct{}, 1), syncDone: make(chan struct{}), syncStop: make(chan struct{}),
		syncEvery: cmp.Or(s.syncEvery, syncEvery), syncFile: f.Sync, writeFile: f.Write, reserve: s.reserve}
	if s.syncFile != nil {
		j.syncFile = func() error { return s.syncFile(f) }
	}
	if s.writeFile != nil {
		j.writeFile = func(b []byte) (int, error) { return s.writeFile(f, b) }
	}
	go j.syncer()
	return j
}

// syncEvery is the least time between two background fsyncs of a journal:
// a turn that ends while none ran for that long is synced at once; turns
// that end faster share one fsync at the end of the interval (group
// commit), so a burst of short turns (typed `!` commands, a script driving
// the daemon) costs one fsync per interval, not one each. A record is
// written (write(2)) before anything shows it, so a killed daemon loses
// nothing it showed; what the interval risks is only a machine crash
// within it.
const syncEvery = 100 * time.Millisecond

// syncer fsyncs the file whenever a turn ended, at most once per
// syncEvery, until Close.
func (j *Journal) syncer() {
	defer close(j.syncDone)
	var last time.Time
	for range j.syncReq {
		if wait := j.syncEvery - time.Since(last); !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-j.syncStop:
				t.Stop()
				return // Close syncs the file itself
			}
		}
		select {
		case <-j.syncReq: // this fsync covers a turn that ended meanwhile
		default:
		}
		last = time.Now()
		if err := j.syncOnce(); err != nil {
			j.mu.Lock()
			j.syncErr = fmt.Errorf("sync journal %s: %w", j.id, err)
			j.mu.Unlock()
		}
		j.reserve.ensure() // off the response path, like the fsync
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
	return j.syncFile()
}

// syncPendingDir runs the directory fsync the syncer never ran (a journal
// synced or closed before the syncer ran). Called with mu held.
func (j *Journal) syncPendingDir() error {
	dirSync := j.dirSync
	j.dirSync = nil
	if dirSync == nil {
		return nil
	}
	return dirSync()
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
// to the client never waits for the disk; turns ending in quick succession
// share one, see syncEvery); a failure of it is returned by the next Append
// or Close. Other records are not synced (see Sync). Card output beyond
// MaxCardOutput is cut to its tail. A record longer than MaxLine fails with
// ErrTooLarge.
//
// When a write fails (a full disk), the partial record is cut away and the
// record is written compact instead (see compact.go: its large texts cut
// to their tails behind a line saying so; a tool result keeps how its call
// ended), freeing the store's reserve for it when needed; the error then
// wraps ErrShortened. When even that cannot be written, the record is kept
// in memory and the error wraps ErrKept: the next Append (and Close) first
// writes the kept records, in order — whole, or else compact — before any
// later one. At most MaxBacklog bytes are kept; past that, records are
// refused with ErrBacklogFull. A running call's output checkpoint
// (event.OutputCheckpoint) is never kept or shortened: when it cannot be
// written it is dropped (ErrDropped; its call's result carries the whole
// output). If a cut fails, every later call fails with that error.
func (j *Journal) Append(ev event.Event) error { return j.AppendAll(ev) }

// AppendAll records evs in order, as Append does each, with one write of
// all their lines: events that follow each other with nothing shown in
// between (a turn's result and its end) cost one system call. A record
// that cannot be encoded (ErrUnknownEvent, ErrTooLarge) is left out and
// its error returned; the others are still written.
func (j *Journal) AppendAll(evs ...event.Event) error {
	var one [1]wireRecord
	recs := one[:0]
	if len(evs) > 1 {
		recs = make([]wireRecord, 0, len(evs))
	}
	var errs []error
	sync := false
	for _, ev := range evs {
		var r wireRecord
		ok, err := fromEvent(ev, &r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		if _, end := ev.(event.TurnEnd); end {
			sync = true
		}
		recs = append(recs, r)
	}
	if len(recs) > 0 {
		errs = append(errs, j.write(recs, sync))
	}
	return errors.Join(errs...)
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
	return j.write([]wireRecord{{Type: typeState, Key: key, Value: b}}, false)
}

// MaxBacklog bounds the records a journal keeps in memory while its writes
// fail: past it, new records are refused (and counted) until the disk
// takes the backlog.
const MaxBacklog = 64 << 20

// write encodes recs and writes their lines with one write; a record that
// does not encode is left out (its error returned with the rest).
func (j *Journal) write(recs []wireRecord, sync bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	if len(j.backlog) == 0 && j.anyBig(recs) {
		return j.writeEach(recs, sync)
	}
	return j.writeOne(recs, sync)
}

// writeOne writes recs' lines with one write, after the records that wait
// (see Append for what a failure does). Called with mu held.
func (j *Journal) writeOne(recs []wireRecord, sync bool) error {
	var flushErr error
	if len(j.backlog) > 0 {
		flushErr = j.flushBacklog()
	}
	chunk, recs, encErr := j.encode(recs)
	if len(recs) == 0 {
		return errors.Join(flushErr, encErr)
	}
	var err error
	switch {
	case len(j.backlog) > 0: // they still wait: these go behind them
		err = j.hold(recs, len(chunk), flushErr)
	default:
		if werr := j.writeLine(chunk); werr != nil {
			err = j.fallback(recs, len(chunk), werr, sync)
		} else {
			j.wrote(len(recs), sync)
			err = flushErr // records before these were shortened, if any
		}
	}
	return errors.Join(encErr, err)
}

// wrote counts n records written and asks for an fsync when sync. Called
// with mu held.
func (j *Journal) wrote(n int, sync bool) {
	j.seq += uint64(n)
	if sync {
		j.askSync()
	}
}

// askSync asks the syncer for an fsync. Called with mu held, before Close.
func (j *Journal) askSync() {
	select {
	case j.syncReq <- struct{}{}:
	default: // an fsync is already pending; it will cover what was written
	}
}

// SyncSoon asks the background syncer to make what was written durable —
// for a new journal, its directory entry and header (see Store.Create) —
// without waiting for it (at most one fsync per syncEvery, as for a turn
// end). It does nothing after Close, which syncs itself.
func (j *Journal) SyncSoon() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.closed {
		j.askSync()
	}
}

// fallback handles recs (numbered; size bytes of whole lines) whose write
// failed with werr: an output checkpoint is dropped; the others are written
// compact — freeing the reserve when that does not fit either — or, failing
// that, kept. Called with mu held.
func (j *Journal) fallback(recs []wireRecord, size int, werr error, sync bool) error {
	if isCheckpoint(recs) || j.broken != nil {
		return j.hold(recs, size, werr)
	}
	if chunk, cut, ok := j.compactLines(recs, whyNotWritten(werr)); ok && j.writeCompact(chunk) == nil {
		j.shortened += cut
		j.wrote(len(recs), sync)
		return fmt.Errorf("append to journal %s: %w (%w)", j.id, ErrShortened, werr)
	}
	return j.hold(recs, size, werr)
}

// writeCompact writes a compact chunk; when it does not fit, it frees the
// reserve and tries once more. Called with mu held.
func (j *Journal) writeCompact(chunk []byte) error {
	err := j.writeLine(chunk)
	if err != nil && j.broken == nil && j.reserve.release() {
		err = j.writeLine(chunk)
	}
	return err
}

// hold keeps recs (numbered; size bytes of whole lines) to be written
// later, behind the records that already wait, or drops an output
// checkpoint; cause is why they were not written. Called with mu held.
func (j *Journal) hold(recs []wireRecord, size int, cause error) error {
	if isCheckpoint(recs) {
		return fmt.Errorf("append to journal %s: %w (%w)", j.id, ErrDropped, cause)
	}
	if j.backlogBytes+size > MaxBacklog {
		j.dropped += len(recs)
		return fmt.Errorf("append to journal %s: %w (%d records wait; %d refused)", j.id, ErrBacklogFull, j.waiting(), j.dropped)
	}
	// The caller's slice may be reused: the backlog keeps its own.
	j.backlog = append(j.backlog, pending{recs: slices.Clone(recs), size: size})
	j.backlogBytes += size
	j.seq += uint64(len(recs))
	return fmt.Errorf("append to journal %s: %w (%d records wait: %w)", j.id, ErrKept, j.waiting(), cause)
}

// pending is a write that failed even compact: its records, numbered, and
// the size of their whole lines.
type pending struct {
	recs []wireRecord
	size int
}

// isCheckpoint reports whether recs is a lone output checkpoint.
func isCheckpoint(recs []wireRecord) bool { return len(recs) == 1 && recs[0].Type == typeOutput }

// anyBig reports whether one of recs carries a large text that writeBig
// streams from its parts.
func (j *Journal) anyBig(recs []wireRecord) bool {
	for i := range recs {
		if isBig(&recs[i]) {
			return true
		}
	}
	return false
}

// writeEach writes recs one at a time, a big one streamed by writeBig (no
// buffer of its size) and the others as lines of their own; the fsync
// request goes with the last. Called with mu held.
func (j *Journal) writeEach(recs []wireRecord, sync bool) error {
	var errs []error
	for i := range recs {
		if err := j.usable(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		r := &recs[i]
		last := sync && i == len(recs)-1
		r.V, r.Seq = Version, j.seq+1
		if r.T.IsZero() {
			r.T = j.now().UTC()
		}
		if handled, err := j.writeBig(r, last); handled {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, j.writeOne(recs[i:i+1], last))
	}
	return errors.Join(errs...)
}

// encode numbers and encodes recs, returning their lines as one chunk (valid
// until the next encode) and the records it holds, numbered (recs itself,
// without those that did not encode). Called with mu held.
func (j *Journal) encode(recs []wireRecord) (chunk []byte, ok []wireRecord, err error) {
	var errs []error
	var now time.Time // one timestamp per write
	n := 0
	for i := range recs {
		r := &recs[i]
		r.V, r.Seq = Version, j.seq+uint64(n)+1
		if r.T.IsZero() {
			if now.IsZero() {
				now = j.now().UTC()
			}
			r.T = now
		}
		line, lerr := j.enc.line(r)
		if lerr != nil {
			errs = append(errs, fmt.Errorf("append to journal %s: %w", j.id, lerr))
			continue
		}
		switch {
		case len(recs) == 1:
			chunk = line
		case n == 0 && !j.enc.owns(line):
			chunk = line // a buffer of its own (a big card): the rest go after it
		case n == 0:
			chunk = append(j.batch[:0], line...)
		default:
			chunk = append(chunk, line...)
		}
		recs[n] = *r
		n++
	}
	if len(recs) > 1 && cap(chunk) <= keptLine {
		j.batch = chunk[:0]
	} else if cap(j.batch) > keptLine {
		j.batch = nil
	}
	return chunk, recs[:n], errors.Join(errs...)
}

// lines encodes numbered records again, as one chunk of their own. Called
// with mu held.
func (j *Journal) lines(recs []wireRecord) []byte {
	var chunk []byte
	for i := range recs {
		if line, err := j.enc.line(&recs[i]); err == nil { // they encoded before
			chunk = append(chunk, line...)
		}
	}
	return chunk
}

// writeLine writes one whole line. A partial write is cut away; when the
// cut fails too, the journal is broken for good.
func (j *Journal) writeLine(line []byte) error {
	n, err := j.writeFile(line)
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

// flushBacklog writes the kept records in order — each write whole, else
// compact — until one cannot be written either way (an ErrKept error). It
// returns an ErrShortened error when some were written compact. Called with
// mu held.
func (j *Journal) flushBacklog() error {
	var short error
	for len(j.backlog) > 0 {
		p := j.backlog[0]
		if werr := j.writeLine(j.lines(p.recs)); werr != nil {
			chunk, cut, ok := j.compactLines(p.recs, whyNotWritten(werr))
			if !ok || j.broken != nil || j.writeCompact(chunk) != nil {
				return fmt.Errorf("append to journal %s: %w (%d records wait: %w)", j.id, ErrKept, j.waiting(), werr)
			}
			j.shortened += cut
			short = fmt.Errorf("append to journal %s: %w (%w)", j.id, ErrShortened, werr)
		}
		j.backlog[0] = pending{}
		j.backlog = j.backlog[1:]
		j.backlogBytes -= p.size
	}
	j.backlog = nil
	return short
}

// Backlog is how many records wait to be written because writes failed.
func (j *Journal) Backlog() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.waiting()
}

// waiting is Backlog, called with mu held.
func (j *Journal) waiting() int {
	n := 0
	for _, p := range j.backlog {
		n += len(p.recs)
	}
	return n
}

// Shortened is how many records were written compact because their whole
// line could not be written (see Append).
func (j *Journal) Shortened() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.shortened
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

// Sync flushes the journal (and a new one's directory entry) to stable
// storage.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if err := errors.Join(j.syncPendingDir(), j.f.Sync()); err != nil {
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
		if err := j.flushBacklog(); len(j.backlog) > 0 {
			lost = fmt.Errorf("%d records could not be written: %w", j.waiting(), err)
		}
	}
	j.closed = true
	close(j.syncStop)
	close(j.syncReq)
	j.mu.Unlock()
	<-j.syncDone // the syncer may need mu to record an error
	j.mu.Lock()
	serr := errors.Join(j.syncErr, j.syncPendingDir(), j.syncFile())
	cerr := j.f.Close()
	if err := errors.Join(lost, serr, cerr); err != nil {
		return fmt.Errorf("close journal %s: %w", j.id, err)
	}
	return nil
}
