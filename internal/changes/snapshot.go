package changes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// statKey is what the stat cache compares: a file whose key is unchanged
// (and was not racy) is taken to hold what it held, without a read.
type statKey struct {
	size, mtime, ctime int64
	ino                uint64
	mode               uint32
}

// entry is one regular file of a snapshot.
type entry struct {
	key statKey
	// hash names the content in the store; "" when the file is larger than
	// the snapshot's keep limit (its content is neither read nor kept).
	hash string
	// racy: modified so close to the scan that a later change within the
	// same timestamp tick would keep its key; the next scan reads it again.
	racy bool
}

// dirState is one directory of a snapshot: its listing and the ignore
// rules that judged it, reused while the directory's key is unchanged.
type dirState struct {
	key      statKey
	racy     bool
	children []child
	ign      *ignoreSet // the rules the children were judged by
}

// child is one name in a directory listing.
type child struct {
	name    string
	dir     bool // a directory (not a symlink to one)
	regular bool // a regular file
	ignored bool // by the ignore rules, or always (.git)
}

// Snapshot is the state of a directory tree at one moment: every regular
// file not ignored, by slash-separated path relative to the tree's root,
// with its stat key and content hash. A Snapshot is immutable once taken.
type Snapshot struct {
	files map[string]entry
	dirs  map[string]*dirState
	// Taken is when the scan that made it started.
	Taken time.Time
}

// Len is the number of files in s.
func (s *Snapshot) Len() int {
	if s == nil {
		return 0
	}
	return len(s.files)
}

// racySlack is how recent (before a scan's start) a modification must be
// for its key not to be trusted by the next scan: more than the coarsest
// timestamp tick of the file systems we run on.
const racySlack = 20 * time.Millisecond

// ErrTooManyFiles is returned by a scan of a tree with more files than the
// scanner's MaxFiles.
var ErrTooManyFiles = errors.New("too many files to track")

// scanner takes snapshots of one tree, reusing what a previous snapshot
// knew. Not safe for concurrent use.
type scanner struct {
	root     string
	store    *Store
	maxKept  int64 // larger files are tracked by stat only
	maxFiles int
	maxFirst int64 // bytes a first look keeps; past them, files are tracked by stat only
	ignore   *ignorer
	exclude  map[string]bool // relative paths never entered
	stop     *atomic.Bool    // when set and true, a scan ends with ErrClosed

	// per scan
	prev    *Snapshot
	next    *Snapshot
	racyAt  int64 // modification times at or after this are racy
	readBuf []byte
	err     error
	reads   int // files read, over the scanner's life (for tests)
	stats   int // files stat'ed, over the scanner's life (for tests)

	pack    *PackWriter // where a first look keeps contents; nil: loose
	w       *watcher    // nil: look at every file each time
	noWatch bool        // watching failed for lack of watches: never again
	// collect: note the files a walk adds (in added), for a look that
	// walks a new directory.
	collect bool
	added   []string
	// record: note the sums of the contents read (kept), for the
	// session's ownership records.
	record bool
	kept   [][sha256.Size]byte
}

// scan takes a snapshot of the tree, reading only files whose key changed
// since prev (nil: every file), and putting their content in the store.
func (sc *scanner) scan(prev *Snapshot) (*Snapshot, error) {
	if prev == nil {
		prev = &Snapshot{}
	}
	sc.begin(prev, &Snapshot{files: make(map[string]entry, len(prev.files)), dirs: make(map[string]*dirState, len(prev.dirs))})
	fd, err := unix.Open(sc.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", sc.root, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat %s: %w", sc.root, err)
	}
	sc.walk(fd, "", keyOf(&st), sc.ignore.base)
	s := sc.next
	sc.prev, sc.next = nil, nil
	if sc.err != nil {
		return nil, sc.err
	}
	return s, nil
}

// begin starts a look that reads from prev and records into next.
func (sc *scanner) begin(prev, next *Snapshot) {
	start := time.Now()
	next.Taken = start
	sc.prev, sc.next = prev, next
	sc.racyAt = start.Add(-racySlack).UnixNano()
	sc.err = nil
	sc.added = sc.added[:0]
}

// walk records directory rel (open as fd, which walk closes) and what is
// under it.
func (sc *scanner) walk(fd int, rel string, key statKey, parent *ignoreSet) {
	defer unix.Close(fd)
	sc.w.add(abs(sc.root, rel), rel) // before listing: nothing created after it is missed
	ds := sc.listing(fd, rel, key)
	if ds == nil {
		return
	}
	ign := sc.ignore.forDir(fd, rel, ds.children, parent)
	if ds.ign != ign {
		sc.judge(ds, rel, ign)
	}
	sc.next.dirs[rel] = ds
	for _, c := range ds.children {
		if c.ignored || sc.err != nil {
			continue
		}
		path := join(rel, c.name)
		if sc.exclude[path] {
			continue
		}
		switch {
		case c.dir:
			sc.enter(fd, path, c.name, ign)
		case c.regular:
			sc.file(fd, path, c.name)
		}
	}
}

// listing is directory rel's children: the previous snapshot's when the
// directory's key is unchanged (and was not racy), else read.
func (sc *scanner) listing(fd int, rel string, key statKey) *dirState {
	if old := sc.prev.dirs[rel]; old != nil && old.key == key && !old.racy {
		return &dirState{key: key, children: old.children, ign: old.ign}
	}
	f := os.NewFile(uintptr(dupFD(fd)), rel)
	if f == nil {
		return nil
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil && len(ents) == 0 {
		return nil // unreadable: nothing under it is tracked
	}
	children := make([]child, 0, len(ents))
	for _, e := range ents {
		t := e.Type()
		children = append(children, child{name: e.Name(), dir: t.IsDir(), regular: t.IsRegular(), ignored: e.Name() == ".git"})
	}
	return &dirState{key: key, racy: key.mtime >= sc.racyAt || key.ctime >= sc.racyAt, children: children}
}

// judge applies ign to ds's children (a copy: listings are shared between
// snapshots).
func (sc *scanner) judge(ds *dirState, rel string, ign *ignoreSet) {
	children := make([]child, len(ds.children))
	comps := sc.ignore.components(rel)
	for i, c := range ds.children {
		c.ignored = c.name == ".git" || ign.match(append(comps, c.name), c.dir)
		children[i] = c
	}
	ds.children, ds.ign = children, ign
}

// enter walks the subdirectory name of the directory open as fd.
func (sc *scanner) enter(fd int, path, name string, ign *ignoreSet) {
	sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return // gone, or not ours to read
	}
	var st unix.Stat_t
	if unix.Fstat(sub, &st) != nil {
		unix.Close(sub)
		return
	}
	sc.walk(sub, path, keyOf(&st), ign)
}

// file records the regular file name of the directory open as fd.
func (sc *scanner) file(fd int, path, name string) {
	if sc.stop != nil && sc.stop.Load() {
		sc.err = ErrClosed
		return
	}
	if len(sc.next.files) >= sc.maxFiles {
		sc.err = fmt.Errorf("%w: more than %d", ErrTooManyFiles, sc.maxFiles)
		return
	}
	var st unix.Stat_t
	sc.stats++
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	key := keyOf(&st)
	if old, ok := sc.prev.files[path]; ok && old.key == key && !old.racy {
		sc.next.files[path] = old
		return
	}
	e, ok := sc.read(fd, name, key)
	if ok {
		sc.next.files[path] = e
		if sc.collect {
			sc.added = append(sc.added, path)
		}
	}
}

// read hashes the file's content and keeps it in the store (a file larger
// than maxKept only gets its key). key is the file's as just stat'ed: a
// file that changes before or while it is read gets another key, which the
// next look sees.
func (sc *scanner) read(dirfd int, name string, key statKey) (entry, bool) {
	if key.size > sc.maxKept || sc.pack != nil && sc.pack.off+key.size > sc.maxFirst {
		return entry{key: key, racy: sc.isRacy(key)}, true
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return entry{}, false
	}
	defer unix.Close(fd) // a raw fd: an *os.File would register it with the poller
	sc.reads++
	// one read of a byte more than the size sees the end of an unchanged file
	data, err := readSized(fd, key.size, sc.maxKept, &sc.readBuf)
	if err != nil {
		return entry{}, false
	}
	if int64(len(data)) > sc.maxKept {
		return entry{key: key, racy: true}, true
	}
	if int64(len(data)) != key.size {
		key.size = -1 // it changed while read: read it again next time
	}
	put := sc.store.Put
	if sc.pack != nil {
		put = sc.pack.Put
	}
	hash, err := put(data)
	if err != nil {
		sc.err = fmt.Errorf("keep %s: %w", name, err)
		return entry{}, false
	}
	if sc.record {
		var sum [sha256.Size]byte
		if _, err := hex.Decode(sum[:], []byte(hash)); err == nil {
			sc.kept = append(sc.kept, sum)
		}
	}
	return entry{key: key, hash: hash, racy: sc.isRacy(key)}, true
}

func (sc *scanner) isRacy(k statKey) bool { return k.mtime >= sc.racyAt || k.ctime >= sc.racyAt }

// readSized reads a file of about size bytes (at most limit+1) from fd
// into *buf.
func readSized(fd int, size, limit int64, buf *[]byte) ([]byte, error) {
	want := min(size, limit) + 1
	if int64(cap(*buf)) < want {
		*buf = make([]byte, 0, want)
	}
	b := (*buf)[:0]
	for int64(len(b)) <= limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // it grew: room for more
		}
		n, err := unix.Read(fd, b[len(b):min(int64(cap(b)), limit+1)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
		if len(b) < cap(b) {
			break // a short read of a regular file: its end (a file cut short is read again, its size differing)
		}
	}
	*buf = b
	return b, nil
}

// readAll reads at most limit bytes of r into *buf (reused).
func readAll(r io.Reader, limit int64, buf *[]byte) ([]byte, error) {
	b := (*buf)[:0]
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := b[len(b):cap(b)]
		if int64(len(room)) > limit-int64(len(b)) {
			room = room[:limit-int64(len(b))]
		}
		n, err := r.Read(room)
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	*buf = b
	return b, nil
}

func dupFD(fd int) int {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return d
}

// join is rel/name, or name at the root.
func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// abs is the absolute path of rel under root.
func abs(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// parentOf splits rel into its directory and name.
func parentOf(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// split is rel's components ("" has none).
func split(rel string) []string {
	if rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}
