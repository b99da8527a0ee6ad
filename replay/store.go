package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/privdir"
)

// Store is the directory of session journals, <stateDir>/sessions. Its
// methods are safe for concurrent use; every file access goes through an
// os.Root, so no session id can reach outside the directory.
type Store struct {
	dir     string
	root    *os.Root
	now     func() time.Time
	reserve *reserve // disk space held back for compact records
	// Seams for the package's tests; nil means the real thing.
	syncEvery time.Duration                       // 0: syncEvery
	syncFile  func(*os.File) error                // f.Sync
	writeFile func(*os.File, []byte) (int, error) // f.Write
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that stamps records (time.Now by default).
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// OpenStore opens (creating it 0700 when missing) the sessions directory
// under stateDir. It refuses (ErrUnsafe) a sessions directory that is a
// symlink, not a directory, owned by another user or writable by its group
// or others, and repairs any other mode to 0700. stateDir itself is created 0700 when missing and otherwise used
// as it is.
func OpenStore(stateDir string, opts ...Option) (*Store, error) {
	if stateDir == "" {
		return nil, errors.New("open session store: empty state directory")
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	dir := filepath.Join(stateDir, "sessions")
	root, err := openPrivateDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	s := &Store{dir: dir, root: root, now: time.Now, reserve: &reserve{root: root, dir: dir, size: reserveSize}}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// openPrivateDir creates dir 0700 when missing, checks that it is a real
// directory this user owns (the opened directory, not just the path) that
// no one else may write, repairs its mode (e.g. 0755) to 0700, and opens
// it as a root.
func openPrivateDir(dir string) (*os.Root, error) {
	root, err := privdir.Open(dir, privdir.RefuseWritable)
	return root, asUnsafe(err)
}

// asUnsafe wraps privdir's refusals in ErrUnsafe.
func asUnsafe(err error) error {
	if errors.Is(err, privdir.ErrUnsafe) {
		return fmt.Errorf("%w: %w", ErrUnsafe, err)
	}
	return err
}

// Dir is the sessions directory.
func (s *Store) Dir() string { return s.dir }

// Path is the journal file of session id (which need not exist).
func (s *Store) Path(id string) (string, error) {
	if err := ValidID(id); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, fileName(id)), nil
}

// Close releases the store's directory handle. Open journals stay usable.
func (s *Store) Close() error { return s.root.Close() }

// Create starts the journal of a new session: it creates the file (0600,
// failing with an error wrapping fs.ErrExist when it exists), locks it and
// writes the session header (write(2): a daemon killed after Create
// returned leaves a journal that Load and OpenAppend find). Create does not
// fsync: the fsync of the directory entry and of the file runs in the
// journal's background syncer once the caller asks for it with SyncSoon
// (the daemon does so once its session/new reply is out, so the fsync never
// competes with the reply), else with the first turn end, Sync or Close. A
// failure of it is returned by the next Append or Close.
func (s *Store) Create(id, cwd, daemonVersion string) (*Journal, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	name := fileName(id)
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create journal %s: %w", id, err)
	}
	j, err := s.startJournal(id, f)
	if err != nil {
		s.root.Remove(name)
		return nil, fmt.Errorf("create journal %s: %w", id, err)
	}
	now := s.now().UTC()
	h := wireRecord{T: now, Type: typeSession, ID: id, Cwd: cwd, Created: now, DaemonVersion: daemonVersion}
	j.mu.Lock()
	j.dirSync = s.syncDir
	j.mu.Unlock()
	if err := j.write([]wireRecord{h}, false); err != nil {
		j.Close()
		s.root.Remove(name)
		return nil, err
	}
	return j, nil
}

// startJournal locks a freshly created file and sets its mode.
func (s *Store) startJournal(id string, f *os.File) (*Journal, error) {
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil { // whatever the umask did
		f.Close()
		return nil, err
	}
	return s.newJournal(id, f, 0, 0), nil
}

func (s *Store) syncDir() error {
	d, err := s.root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// OpenAppend opens an existing session's journal to write more records. It
// fails with ErrLocked when another writer has it open, with an error
// wrapping fs.ErrNotExist when there is no such session, with ErrUnsafe for
// a symlink, a non-regular file or a file of another user, and with
// ErrNoHeader when the file holds no record. It repairs the file's mode to
// 0600 and cuts a torn last line (anything after the last newline) away
// before the first new record; Journal.Repaired reports how many bytes.
func (s *Store) OpenAppend(id string) (*Journal, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	j, err := s.openAppend(id)
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", id, err)
	}
	return j, nil
}

func (s *Store) openAppend(id string) (*Journal, error) {
	f, st, err := s.openChecked(id, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return nil, err
	}
	j, err := func() (*Journal, error) {
		if err := lockFile(f); err != nil {
			return nil, err
		}
		if st.Mode().Perm() != 0o600 {
			if err := f.Chmod(0o600); err != nil {
				return nil, err
			}
		}
		size, torn, err := repairTail(f, st.Size())
		if err != nil {
			return nil, err
		}
		seq, ok, err := lastSeq(f, size)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNoHeader
		}
		j := s.newJournal(id, f, size, seq)
		j.repaired = torn
		return j, nil
	}()
	if err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// openChecked opens a journal file and checks that it is a regular file of
// this user, the same file the name pointed at (no symlink).
func (s *Store) openChecked(id string, flag int) (*os.File, fs.FileInfo, error) {
	f, st, err := privdir.OpenFile(s.root, fileName(id), flag)
	return f, st, asUnsafe(err)
}

// repairTail truncates f back to just after its last newline and reports
// the new size and how many bytes were cut.
func repairTail(f *os.File, size int64) (newSize, cut int64, err error) {
	keep, err := lastNewlineEnd(f, size)
	if err != nil || keep == size {
		return size, 0, err
	}
	if err := f.Truncate(keep); err != nil {
		return 0, 0, fmt.Errorf("cut torn last line: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, 0, fmt.Errorf("cut torn last line: %w", err)
	}
	return keep, size - keep, nil
}

// lastNewlineEnd returns the offset just past the last newline in the first
// size bytes of f (0 when there is none).
func lastNewlineEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for pos := size; pos > 0; {
		n := int64(len(buf))
		if n > pos {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, fmt.Errorf("read journal tail: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// lastSeq finds the sequence number of the last decodable record among the
// first size bytes of f (which end with a newline), reading backwards in
// growing windows.
func lastSeq(f *os.File, size int64) (uint64, bool, error) {
	for window := int64(64 << 10); ; window *= 2 {
		window = min(window, size)
		buf := make([]byte, window)
		if _, err := f.ReadAt(buf, size-window); err != nil {
			return 0, false, fmt.Errorf("read journal tail: %w", err)
		}
		lines := bytes.Split(bytes.TrimSuffix(buf, []byte{'\n'}), []byte{'\n'})
		first := 0
		if window < size {
			first = 1 // the window may start mid-line
		}
		for i := len(lines) - 1; i >= first; i-- {
			var env struct {
				V   int    `json:"v"`
				Seq uint64 `json:"seq"`
			}
			if json.Unmarshal(lines[i], &env) == nil && env.V >= 1 {
				return env.Seq, true, nil
			}
		}
		if window == size {
			return 0, false, nil
		}
	}
}

// Load reads a session's whole journal (see Read). It takes no lock: a
// journal being written is read up to its last complete line. A journal
// without a header gets Header.ID filled from id.
func (s *Store) Load(id string) (*Loaded, error) {
	f, err := s.open(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("load journal %s: %w", id, err)
	}
	if l.Header.ID == "" {
		l.Header.ID = id
	}
	return l, nil
}

// Stream decodes a session's journal record by record (see Scan), so a
// replay can start before the whole file is read.
func (s *Store) Stream(id string, fn func(Record) error) (warnings []string, err error) {
	f, err := s.open(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Scan(f, fn)
}

func (s *Store) open(id string) (*os.File, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	f, _, err := s.openChecked(id, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", id, err)
	}
	return f, nil
}

// readHead decodes the head of a journal: its header and the first user
// prompt, reading at most a few records. turns reports whether the session
// has had a turn: a prompt was found, or the head holds more records than
// are read (a session's first records before any prompt are few: its header
// and settings), so a long head counts as having turns.
func readHead(r io.Reader) (h *Header, prompt string, turns bool) {
	const maxRecords, maxHeadLine = 16, 4 << 20
	lr := newLineReader(r, maxHeadLine)
	for i := 0; ; i++ {
		line, complete, tooLong, err := lr.next()
		if err != nil {
			return h, "", false
		}
		if i == maxRecords {
			return h, "", true
		}
		if !complete || tooLong {
			continue
		}
		var w wireRecord
		if json.Unmarshal(bytes.Trim(line, "\x00"), &w) != nil || w.V != Version {
			continue
		}
		switch w.Type {
		case typeSession:
			if h == nil {
				h = &Header{ID: w.ID, Cwd: w.Cwd, Created: w.Created, DaemonVersion: w.DaemonVersion}
			}
		case typeUserPrompt:
			return h, w.Text, true
		}
	}
}

// Delete removes session id's journal. It fails with ErrLocked when a
// writer holds the journal (another daemon serving the session, or this
// one: close the session's Journal first), with an error wrapping
// fs.ErrNotExist when there is no such session and with ErrUnsafe for a
// symlink, a non-regular file or a file of another user. The lock is held
// while the name is removed, so a daemon that opens the session meanwhile
// either finds it gone or holds it first. What else the session left under
// the state directory (spill files, change contents) is its owners' to
// remove.
func (s *Store) Delete(id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	f, _, err := s.openChecked(id, os.O_RDWR)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := s.root.Remove(fileName(id)); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := s.syncDir(); err != nil {
		return fmt.Errorf("delete session %s: sync the sessions directory: %w", id, err)
	}
	return nil
}
