package changes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/privdir"
)

// StoreDir is the store's directory under the state dir.
const StoreDir = "changes"

// DefaultMaxAge is how long the store keeps a content no one used since:
// OpenStore sweeps older ones (as the executor sweeps spill files).
const DefaultMaxAge = 30 * 24 * time.Hour

// ErrNotKept is returned by Get for a content the store does not hold
// (never kept, or swept).
var ErrNotKept = errors.New("content not kept")

// Store is a content-addressed store of file contents under the state dir:
// each content once, named by its SHA-256 (lowercase hex), in
// objects/<2 hex>/<62 hex>, or in a pack (packs/*.pack: many contents in
// one file, written by a tree's first look; see NewPack). It is shared by every session of a daemon (and
// by daemons sharing the state dir), for the change cards and /undo. Safe
// for concurrent use.
type Store struct {
	root    *os.Root
	dir     string
	objects *os.File // the objects directory, for the *at calls

	mu      sync.Mutex
	fans    map[string]int  // fan-out directory → open fd
	known   map[string]bool // held on disk and touched by this process
	added   int64           // bytes written by this process
	packed  map[[sha256.Size]byte]packLoc
	touched map[string]bool // packs touched by this process

	packsMu     sync.Mutex // guards packsLoaded; taken before mu
	packsLoaded bool

	gen genKey // the owners' generation these caches were filled under (see refreshCaches)
}

// OpenStore opens (creating it) the store under stateDir, which must
// exist, refusing a store directory that is a symlink, another user's or
// writable by others (internal/privdir), and removes the contents last
// used before maxAge ago (DefaultMaxAge when zero).
func OpenStore(stateDir string, maxAge time.Duration) (*Store, error) {
	dir := filepath.Join(stateDir, StoreDir)
	root, err := privdir.Open(dir, privdir.RefuseWritable)
	if err != nil {
		return nil, fmt.Errorf("open change store: %w", err)
	}
	for _, d := range []string{"objects", "packs", ownersDir} {
		if err := root.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			root.Close()
			return nil, fmt.Errorf("open change store: %w", err)
		}
	}
	objects, err := root.Open("objects")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("open change store: %w", err)
	}
	s := &Store{root: root, dir: dir, objects: objects, fans: map[string]int{}, known: map[string]bool{},
		packed: map[[sha256.Size]byte]packLoc{}, touched: map[string]bool{}}
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	s.Sweep(time.Now().Add(-maxAge))
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, fd := range s.fans {
		unix.Close(fd)
	}
	s.fans = map[string]int{}
	s.mu.Unlock()
	s.objects.Close()
	return s.root.Close()
}

// fan is the open fan-out directory of hash h, created when missing.
func (s *Store) fan(h string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fd, ok := s.fans[h[:2]]; ok {
		return fd, nil
	}
	dir := int(s.objects.Fd())
	if err := unix.Mkdirat(dir, h[:2], 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	fd, err := unix.Openat(dir, h[:2], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	s.fans[h[:2]] = fd
	return fd, nil
}

// Hash is the name data has in the store.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Put keeps data and returns its hash. A content already held is not
// written again (its time is refreshed once per process, so a sweep
// spares what is in use).
func (s *Store) Put(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	s.loadPacks()
	if s.holds(h, sum) {
		return h, nil
	}
	fan, err := s.fan(h)
	if err != nil {
		return "", err
	}
	var st unix.Stat_t
	if unix.Fstatat(fan, h[2:], &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		_ = unix.UtimesNanoAt(fan, h[2:], nil, unix.AT_SYMLINK_NOFOLLOW)
	} else if err := s.write(fan, h[2:], data); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.known[h] = true
	s.mu.Unlock()
	return h, nil
}

// write creates name in the fan-out directory fan with data. It is not
// renamed into place: a content cut short (the daemon killed while
// writing) fails Get's check and counts as not kept.
func (s *Store) write(fan int, name string, data []byte) error {
	fd, err := unix.Openat(fan, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EEXIST) {
		return nil // written meanwhile, by another session or daemon
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(fan, name, 0)
		return err
	}
	s.mu.Lock()
	s.added += int64(len(data))
	s.mu.Unlock()
	return nil
}

// Get returns the content named hash, or an error matching ErrNotKept.
func (s *Store) Get(hash string) ([]byte, error) {
	if !validHash(hash) {
		return nil, fmt.Errorf("%w: bad name %q", ErrNotKept, hash)
	}
	var data []byte
	f, err := s.root.Open(objectName(hash))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data, err = s.getPacked(hash)
	case err == nil:
		data, err = io.ReadAll(f)
		f.Close()
	}
	if err == nil && Hash(data) != hash {
		return nil, fmt.Errorf("%w: %s is damaged", ErrNotKept, hash)
	}
	return data, err
}

// Added is how many bytes this process wrote to the store.
func (s *Store) Added() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.added
}

// Sweep removes the contents and packs (and leftover temporary files)
// last used before cutoff, and returns how many it removed. The ownership
// records of sessions not tracked since cutoff go too: what they named is
// swept by age already.
func (s *Store) Sweep(cutoff time.Time) int {
	s.sweepOwners(cutoff)
	removed := s.sweepPacks(cutoff)
	fans, err := readDir(s.root, "objects")
	if err != nil {
		return removed
	}
	for _, fan := range fans {
		if !fan.IsDir() {
			continue
		}
		dir := filepath.Join("objects", fan.Name())
		ents, _ := readDir(s.root, dir)
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(cutoff) {
				continue
			}
			if s.root.Remove(filepath.Join(dir, e.Name())) == nil {
				removed++
			}
		}
		_ = s.root.Remove(dir) // fails while not empty
	}
	return removed
}

// sweepOwners removes the ownership records (and leftover temporary
// files) last written before cutoff.
func (s *Store) sweepOwners(cutoff time.Time) {
	ents, _ := readDir(s.root, ownersDir)
	for _, e := range ents {
		if e.Name() == ownerLock || e.Name() == ownerGen {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
			_ = s.root.Remove(filepath.Join(ownersDir, e.Name()))
		}
	}
}

func readDir(root *os.Root, name string) ([]fs.DirEntry, error) {
	d, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

func objectName(h string) string { return filepath.Join("objects", h[:2], h[2:]) }

func validHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
