package changes

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Ownership records: which session uses which contents, so that deleting
// a session (Forget) removes the contents no other session uses. The
// records live in owners/ under the store: one file per session, named by
// the session's id, holding the SHA-256 sums (32 bytes each, unordered,
// maybe repeated) of every content its tracker kept or found kept — the
// whole tree at its first look, then every file a look read. What a
// session's change cards and /undo name is always among them.
//
// A look holds owners/.lock shared (flock) from before it keeps anything
// until its records are written; Forget holds it exclusive, so it never
// removes a content a look (of any daemon sharing the store) has just
// found kept but not yet recorded. Forget then replaces owners/.gen, and
// every store (of this process or another) that sees a new .gen at its
// next look drops what it believed held (its pack index, the contents it
// wrote or touched) and looks again.

const (
	ownersDir = "owners"
	ownerLock = ".lock"
	ownerGen  = ".gen"
)

// genKey identifies one .gen file (Forget replaces it: a new inode).
type genKey struct {
	ino   uint64
	mtime int64
}

// validOwner reports whether id can name an owners file: a session id
// (letters, digits, '.', '_', '-'; not starting with '.').
func validOwner(id string) bool {
	if id == "" || len(id) > 200 || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// lockOwners takes owners/.lock (shared, or exclusive for Forget) and
// returns its release.
func (s *Store) lockOwners(how int) (func(), error) {
	f, err := s.root.OpenFile(filepath.Join(ownersDir, ownerLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the last descriptor releases the lock
}

// hold takes owners/.lock shared for a look, after making sure the caches
// are not older than the last Forget (refreshCaches). Its release is a
// no-op when the lock could not be taken (tracking goes on; a Forget at
// that moment may then take a content the look is recording).
func (s *Store) hold() func() {
	release, err := s.lockOwners(unix.LOCK_SH)
	if err != nil {
		return func() {}
	}
	s.refreshCaches()
	return release
}

// refreshCaches drops what the store believed held when a Forget (in any
// process) replaced owners/.gen since the caches were filled.
func (s *Store) refreshCaches() {
	var now genKey
	if fi, err := s.root.Lstat(filepath.Join(ownersDir, ownerGen)); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			now = genKey{ino: st.Ino, mtime: fi.ModTime().UnixNano()}
		}
	}
	s.mu.Lock()
	same := s.gen == now
	s.mu.Unlock()
	if same {
		return
	}
	s.packsMu.Lock()
	s.mu.Lock()
	s.gen = now
	s.known, s.packed, s.touched = map[string]bool{}, map[[sha256.Size]byte]packLoc{}, map[string]bool{}
	s.mu.Unlock()
	s.packsLoaded = false
	s.packsMu.Unlock()
}

// own records that session uses the contents sums (appended to its
// owners file). With replace, the file is rewritten to hold its records
// and sums once each (a first look: a session reopened again and again
// does not grow it by a tree each time). Hold the lock shared.
func (s *Store) own(session string, sums [][sha256.Size]byte, replace bool) error {
	if !validOwner(session) || (len(sums) == 0 && !replace) {
		return nil
	}
	name := filepath.Join(ownersDir, session)
	if replace {
		return s.rewriteOwned(name, sums)
	}
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(flatten(sums))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// rewriteOwned replaces owners file name by its records and sums, each once.
func (s *Store) rewriteOwned(name string, sums [][sha256.Size]byte) error {
	set := map[[sha256.Size]byte]bool{}
	if err := s.readOwned(name, func(sum [sha256.Size]byte) { set[sum] = true }); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, sum := range sums {
		set[sum] = true
	}
	all := make([][sha256.Size]byte, 0, len(set))
	for sum := range set {
		all = append(all, sum)
	}
	tmp := filepath.Join(ownersDir, ".tmp-"+randomSuffix())
	if err := s.root.WriteFile(tmp, flatten(all), 0o600); err != nil {
		_ = s.root.Remove(tmp)
		return err
	}
	if err := s.root.Rename(tmp, name); err != nil {
		_ = s.root.Remove(tmp)
		return err
	}
	return nil
}

func flatten(sums [][sha256.Size]byte) []byte {
	b := make([]byte, 0, len(sums)*sha256.Size)
	for _, sum := range sums {
		b = append(b, sum[:]...)
	}
	return b
}

// readOwned calls f with every sum of owners file name.
func (s *Store) readOwned(name string, f func([sha256.Size]byte)) error {
	file, err := s.root.Open(name)
	if err != nil {
		return err
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 64<<10)
	var sum [sha256.Size]byte
	for {
		if _, err := io.ReadFull(r, sum[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil // a record cut short (a daemon killed mid-write) is no record
			}
			return err
		}
		f(sum)
	}
}

// Forget removes session's ownership records and every content only it
// used: loose contents are removed; a pack holding one is rewritten
// without it (the contents it holds that other sessions — or no recorded
// session — use are kept as loose contents, then the pack is removed). A
// content another session's records name stays. It returns how many
// contents it removed. A session without records (never tracked, or
// tracked before records existed) removes nothing: the age sweep takes
// its contents. Forget waits for looks in progress (of every daemon
// sharing the store) and they wait for it.
func (s *Store) Forget(session string) (int, error) {
	if !validOwner(session) {
		return 0, fmt.Errorf("forget %q: not a session id", session)
	}
	release, err := s.lockOwners(unix.LOCK_EX)
	if err != nil {
		return 0, fmt.Errorf("forget %s: %w", session, err)
	}
	defer release()
	name := filepath.Join(ownersDir, session)
	only := map[[sha256.Size]byte]bool{}
	err = s.readOwned(name, func(sum [sha256.Size]byte) { only[sum] = true })
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("forget %s: %w", session, err)
	}
	if err := s.keepOthers(session, only); err != nil {
		return 0, fmt.Errorf("forget %s: %w", session, err)
	}
	removed, err := s.removeOnly(only)
	if err == nil {
		err = s.root.Remove(name)
	}
	s.bumpGen()
	if err != nil {
		return removed, fmt.Errorf("forget %s: %w", session, err)
	}
	return removed, nil
}

// keepOthers deletes from only every sum another session's records name.
func (s *Store) keepOthers(session string, only map[[sha256.Size]byte]bool) error {
	ents, err := readDir(s.root, ownersDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == session || strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		err := s.readOwned(filepath.Join(ownersDir, e.Name()), func(sum [sha256.Size]byte) { delete(only, sum) })
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err // unsure what others use: remove nothing
		}
	}
	return nil
}

// removeOnly removes the contents only (loose and packed) and returns how
// many it removed.
func (s *Store) removeOnly(only map[[sha256.Size]byte]bool) (int, error) {
	removed := 0
	for sum := range only {
		h := hex.EncodeToString(sum[:])
		if s.root.Remove(objectName(h)) == nil {
			removed++
		}
	}
	ents, err := readDir(s.root, "packs")
	if err != nil {
		return removed, err
	}
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".pack") || !e.Type().IsRegular() {
			continue
		}
		n, err := s.dropFromPack(e.Name(), only)
		removed += n
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// dropFromPack removes pack name when it holds a content of only, after
// keeping its other contents as loose ones; it returns how many of only
// it held. A pack whose other contents cannot all be kept stays.
func (s *Store) dropFromPack(name string, only map[[sha256.Size]byte]bool) (int, error) {
	idx, err := s.readIndex(name)
	if err != nil {
		return 0, nil // damaged: its contents already count as not kept; the age sweep takes it
	}
	held := 0
	for sum := range idx {
		if only[sum] {
			held++
		}
	}
	if held == 0 {
		return 0, nil
	}
	f, err := s.root.Open(filepath.Join("packs", name))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	for sum, loc := range idx {
		if only[sum] {
			continue
		}
		data := make([]byte, loc.len)
		if _, err := f.ReadAt(data, loc.off); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("pack %s: %w", name, err)
		}
		if err := s.putLoose(data); err != nil {
			return 0, fmt.Errorf("pack %s: %w", name, err)
		}
	}
	return held, s.root.Remove(filepath.Join("packs", name))
}

// putLoose keeps data as a loose content (unless one is there).
func (s *Store) putLoose(data []byte) error {
	h := Hash(data)
	fan, err := s.fan(h)
	if err != nil {
		return err
	}
	return s.write(fan, h[2:], data) // an existing one is left as it is
}

// bumpGen replaces owners/.gen, telling every store that its caches may
// name removed contents, and refreshes this one's.
func (s *Store) bumpGen() {
	tmp := filepath.Join(ownersDir, ".tmp-"+randomSuffix())
	if s.root.WriteFile(tmp, []byte(randomSuffix()), 0o600) == nil {
		if s.root.Rename(tmp, filepath.Join(ownersDir, ownerGen)) != nil {
			_ = s.root.Remove(tmp)
		}
	}
	s.refreshCaches()
}
