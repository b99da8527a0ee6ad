package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// maxWarnings bounds the warnings a read collects; the rest are counted.
const maxWarnings = 100

// Loaded is a whole journal, decoded.
type Loaded struct {
	Header Header
	// Events are the journaled events in order, typed (event.UserPrompt,
	// event.AssistantMessage, …), as recorded: see Settle for calls that
	// never got a result.
	Events []event.Event
	// State holds the latest value of each state key.
	State map[string]json.RawMessage
	// Warnings describe what was skipped: bad lines, NUL runs, a torn last
	// line, unknown record types, newer versions.
	Warnings []string
	// LastSeq is the highest record sequence number read.
	LastSeq uint64
}

// Scan decodes the journal read from r and calls fn with each good record in
// file order. Bad lines (invalid JSON, NUL runs, a torn last line, unknown
// record types, newer versions) are skipped and described in the returned
// warnings; reading never stops at a bad line. Scan stops early and returns
// fn's error when fn fails, and returns a read error from r.
//
// The session header is normally the first record; a journal without one
// gets a warning (Scan does not fail). Scan streams: it holds one line at a
// time (up to MaxLine), so a consumer can act on the first record before
// the rest is read.
func Scan(r io.Reader, fn func(Record) error) (warnings []string, err error) {
	s := scanner{lines: newLineReader(r, MaxLine)}
	err = s.run(fn)
	return s.warn.result(), err
}

// Read decodes a whole journal (see Scan). It fails with ErrNoHeader when r
// holds neither a session header nor any event.
func Read(r io.Reader) (*Loaded, error) {
	l := &Loaded{State: map[string]json.RawMessage{}}
	sawHeader := false
	warnings, err := Scan(r, func(rec Record) error {
		l.LastSeq = max(l.LastSeq, rec.Seq)
		switch {
		case rec.Header != nil:
			l.Header, sawHeader = *rec.Header, true
		case rec.State != nil:
			l.State[rec.State.Key] = rec.State.Value
		default:
			l.Events = append(l.Events, rec.Event)
		}
		return nil
	})
	l.Warnings = warnings
	if err != nil {
		return nil, err
	}
	if !sawHeader && len(l.Events) == 0 {
		return nil, ErrNoHeader
	}
	return l, nil
}

// LoadFile reads the journal at path (see Read). It takes no lock and
// does not repair the file: it is for inspecting any journal file.
func LoadFile(path string) (*Loaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	l, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	return l, nil
}

type scanner struct {
	lines     *lineReader
	rec       wireRecord // reused, zeroed for each line (nothing decoded aliases it)
	warn      warnings
	lastSeq   uint64
	sawHeader bool
	sawRecord bool
}

func (s *scanner) run(fn func(Record) error) error {
	for {
		line, complete, tooLong, err := s.lines.next()
		if errors.Is(err, io.EOF) {
			if !s.sawHeader {
				s.warn.add("no session header record")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read journal: %w", err)
		}
		n := s.lines.n
		switch {
		case tooLong:
			s.warn.add("line %d: longer than %d bytes; skipped", n, MaxLine)
			continue
		case !complete:
			s.warn.add("line %d: incomplete last line (a torn write, or a write in progress); skipped", n)
			continue
		}
		if err := s.line(n, line, fn); err != nil {
			return err
		}
	}
}

// line decodes one complete line. A line holding NUL runs is split at them
// and each piece is tried on its own (a record may follow the zeros a crash
// left behind).
func (s *scanner) line(n int, line []byte, fn func(Record) error) error {
	if bytes.IndexByte(line, 0) < 0 {
		return s.piece(n, line, fn)
	}
	s.warn.add("line %d: %d NUL bytes skipped", n, bytes.Count(line, []byte{0}))
	for _, p := range bytes.Split(line, []byte{0}) {
		if len(p) == 0 {
			continue
		}
		if err := s.piece(n, p, fn); err != nil {
			return err
		}
	}
	return nil
}

func (s *scanner) piece(n int, b []byte, fn func(Record) error) error {
	rec, ok := s.decode(n, b)
	if !ok {
		return nil
	}
	if rec.Seq <= s.lastSeq {
		s.warn.add("line %d: seq %d does not follow seq %d", n, rec.Seq, s.lastSeq)
	}
	s.lastSeq = max(s.lastSeq, rec.Seq)
	first := !s.sawRecord
	s.sawRecord = true
	if rec.Header != nil {
		if s.sawHeader {
			s.warn.add("line %d: second session header; skipped", n)
			return nil
		}
		s.sawHeader = true
		if !first {
			s.warn.add("line %d: session header is not the first record", n)
		}
	}
	return fn(rec)
}

// decode turns one line into a Record, or warns and reports false.
func (s *scanner) decode(n int, b []byte) (Record, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		s.warn.add("line %d: blank; skipped", n)
		return Record{}, false
	}
	w := &s.rec
	*w = wireRecord{}
	if !fastDecode(b, w) {
		*w = wireRecord{}
		if err := json.Unmarshal(b, w); err != nil {
			var env struct {
				V    int    `json:"v"`
				Type string `json:"type"`
			}
			if json.Unmarshal(b, &env) == nil && env.V > Version {
				s.warn.add("line %d: %s record of version %d is newer than this daemon reads (%d); skipped", n, env.Type, env.V, Version)
			} else {
				s.warn.add("line %d: invalid record: %v; skipped", n, err)
			}
			return Record{}, false
		}
	}
	switch {
	case w.V > Version:
		s.warn.add("line %d: %s record of version %d is newer than this daemon reads (%d); skipped", n, w.Type, w.V, Version)
		return Record{}, false
	case w.V < 1:
		s.warn.add("line %d: record without a version; skipped", n)
		return Record{}, false
	}
	rec := Record{Seq: w.Seq, Time: w.T}
	switch w.Type {
	case typeSession:
		rec.Header = &Header{ID: w.ID, Cwd: w.Cwd, Created: w.Created, DaemonVersion: w.DaemonVersion}
	case typeState:
		if w.Key == "" {
			s.warn.add("line %d: state record without a key; skipped", n)
			return Record{}, false
		}
		rec.State = &State{Key: w.Key, Value: w.Value}
	default:
		ev, ok := w.toEvent()
		if !ok {
			s.warn.add("line %d: unknown record type %q; skipped", n, w.Type)
			return Record{}, false
		}
		rec.Event = ev
	}
	return rec, true
}

// warnings collects up to maxWarnings messages and counts the rest.
type warnings struct {
	list    []string
	dropped int
}

func (w *warnings) add(format string, args ...any) {
	if len(w.list) >= maxWarnings {
		w.dropped++
		return
	}
	w.list = append(w.list, fmt.Sprintf(format, args...))
}

func (w *warnings) result() []string {
	if w.dropped > 0 {
		return append(w.list, fmt.Sprintf("… and %d more warnings", w.dropped))
	}
	return w.list
}

// lineReader splits a stream into lines of at most max bytes (newline
// excluded) without copying lines that fit its buffer.
type lineReader struct {
	br   *bufio.Reader
	long []byte
	max  int
	n    int // number of the line last returned, from 1
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 256<<10), max: max}
}

// next returns the next line without its newline, valid until the next
// call. complete is false for a last line that has no newline; tooLong
// reports a line longer than max, whose bytes are discarded. It returns
// io.EOF when no bytes are left.
func (lr *lineReader) next() (line []byte, complete, tooLong bool, err error) {
	lr.long = lr.long[:0]
	seen := false
	for {
		frag, err := lr.br.ReadSlice('\n')
		seen = seen || len(frag) > 0
		if !tooLong && len(lr.long)+len(frag) > lr.max+1 {
			tooLong, lr.long = true, lr.long[:0]
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong {
				lr.long = append(lr.long, frag...)
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, false, err
		}
		if !seen {
			return nil, false, false, io.EOF
		}
		lr.n++
		complete = len(frag) > 0 && frag[len(frag)-1] == '\n'
		if tooLong {
			return nil, complete, true, nil
		}
		line = frag
		if len(lr.long) > 0 {
			lr.long = append(lr.long, frag...)
			line = lr.long
		}
		if complete {
			line = line[:len(line)-1]
		}
		return line, complete, false, nil
	}
}
