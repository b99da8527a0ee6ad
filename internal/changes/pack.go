package changes

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A pack holds many contents in one file: what a tree's first look keeps
// (thousands of files) is written with one file, not one each. Its layout:
// the contents back to back, then an index of (SHA-256, offset, length)
// entries of 48 bytes, then the entry count (8 bytes, big-endian) and
// packMagic. A pack is written under a temporary name and renamed into
// packs/ complete.
const (
	packMagic   = "DSHPACK1"
	packEntry   = sha256.Size + 16
	packTrailer = 8 + 8 // the count, then packMagic
)

// packLoc is where a content lies in a pack.
type packLoc struct {
	pack     string // file name under packs/
	off, len int64
}

// PackWriter gathers contents into one new pack. Not safe for concurrent
// use; Close (or Abort) ends it.
type PackWriter struct {
	s     *Store
	f     *os.File
	w     *bufio.Writer
	tmp   string
	off   int64
	index map[[sha256.Size]byte]packLoc
	err   error
}

// NewPack starts a pack. Contents the store holds already (loose, or in
// a pack it has loaded) are not written again.
func (s *Store) NewPack() (*PackWriter, error) {
	s.loadPacks()
	tmp := filepath.Join("packs", "tmp-"+randomSuffix())
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &PackWriter{s: s, f: f, w: bufio.NewWriterSize(f, 1<<20), tmp: tmp, index: map[[sha256.Size]byte]packLoc{}}, nil
}

// Put adds data to the pack (unless the store holds it) and returns its
// hash. Until Close, Get does not find what Put added.
func (p *PackWriter) Put(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	if p.err != nil {
		return "", p.err
	}
	if _, ok := p.index[sum]; ok || p.s.holds(h, sum) {
		return h, nil
	}
	if _, err := p.w.Write(data); err != nil {
		p.err = err
		return "", err
	}
	p.index[sum] = packLoc{off: p.off, len: int64(len(data))}
	p.off += int64(len(data))
	return h, nil
}

// Close writes the index, puts the pack in place and makes its contents
// visible to Get. A pack that holds nothing is not kept.
func (p *PackWriter) Close() error {
	if p.err == nil && len(p.index) == 0 {
		p.Abort()
		return nil
	}
	if p.err == nil {
		p.err = p.writeIndex()
	}
	if cerr := p.f.Close(); p.err == nil {
		p.err = cerr
	}
	name := strings.TrimPrefix(p.tmp, filepath.Join("packs", "tmp-")) + ".pack"
	if p.err == nil {
		p.err = p.s.root.Rename(p.tmp, filepath.Join("packs", name))
	}
	if p.err != nil {
		_ = p.s.root.Remove(p.tmp)
		return p.err
	}
	p.s.mu.Lock()
	for sum, loc := range p.index {
		loc.pack = name
		p.s.packed[sum] = loc
	}
	p.s.added += p.off
	p.s.mu.Unlock()
	return nil
}

// Abort drops the pack.
func (p *PackWriter) Abort() {
	p.f.Close()
	_ = p.s.root.Remove(p.tmp)
}

func (p *PackWriter) writeIndex() error {
	entry := make([]byte, packEntry)
	for sum, loc := range p.index {
		copy(entry, sum[:])
		binary.BigEndian.PutUint64(entry[sha256.Size:], uint64(loc.off))
		binary.BigEndian.PutUint64(entry[sha256.Size+8:], uint64(loc.len))
		if _, err := p.w.Write(entry); err != nil {
			return err
		}
	}
	var tail [packTrailer]byte
	binary.BigEndian.PutUint64(tail[:], uint64(len(p.index)))
	copy(tail[8:], packMagic)
	if _, err := p.w.Write(tail[:]); err != nil {
		return err
	}
	return p.w.Flush()
}

// holds reports whether the store holds content h (sum) already: written
// or touched by this process, or in a loaded pack (which it touches, once,
// so a sweep spares it).
func (s *Store) holds(h string, sum [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known[h] {
		return true
	}
	loc, ok := s.packed[sum]
	if ok && !s.touched[loc.pack] {
		s.touched[loc.pack] = true
		now := time.Now()
		_ = s.root.Chtimes(filepath.Join("packs", loc.pack), now, now)
	}
	return ok
}

// loadPacks reads every pack's index (once per store, and again after a
// Forget: see refreshCaches).
func (s *Store) loadPacks() {
	s.packsMu.Lock()
	defer s.packsMu.Unlock()
	if s.packsLoaded {
		return
	}
	s.packsLoaded = true
	ents, _ := readDir(s.root, "packs")
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".pack") || !e.Type().IsRegular() {
			continue
		}
		idx, err := s.readIndex(e.Name())
		if err != nil {
			continue // a damaged pack: its contents count as not kept
		}
		s.mu.Lock()
		for sum, loc := range idx {
			if _, ok := s.packed[sum]; !ok {
				s.packed[sum] = loc
			}
		}
		s.mu.Unlock()
	}
}

// readIndex reads the index of pack name.
func (s *Store) readIndex(name string) (map[[sha256.Size]byte]packLoc, error) {
	f, err := s.root.Open(filepath.Join("packs", name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var tail [packTrailer]byte
	if size < packTrailer {
		return nil, errBadPack
	}
	if _, err := f.ReadAt(tail[:], size-packTrailer); err != nil || string(tail[8:]) != packMagic {
		return nil, errBadPack
	}
	n := binary.BigEndian.Uint64(tail[:])
	if n > uint64(size/packEntry) {
		return nil, errBadPack
	}
	start := size - packTrailer - int64(n)*packEntry
	buf := make([]byte, int64(n)*packEntry)
	if _, err := f.ReadAt(buf, start); err != nil {
		return nil, err
	}
	idx := make(map[[sha256.Size]byte]packLoc, n)
	for i := 0; i < len(buf); i += packEntry {
		var sum [sha256.Size]byte
		copy(sum[:], buf[i:])
		off := int64(binary.BigEndian.Uint64(buf[i+sha256.Size:]))
		ln := int64(binary.BigEndian.Uint64(buf[i+sha256.Size+8:]))
		if off < 0 || ln < 0 || off+ln > start {
			return nil, errBadPack
		}
		idx[sum] = packLoc{pack: name, off: off, len: ln}
	}
	return idx, nil
}

var errBadPack = errors.New("damaged pack")

// getPacked reads content h from the pack that holds it.
func (s *Store) getPacked(h string) ([]byte, error) {
	s.loadPacks()
	var sum [sha256.Size]byte
	if _, err := hex.Decode(sum[:], []byte(h)); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotKept, h)
	}
	s.mu.Lock()
	loc, ok := s.packed[sum]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotKept, h)
	}
	f, err := s.root.Open(filepath.Join("packs", loc.pack))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotKept, h, err)
	}
	defer f.Close()
	data := make([]byte, loc.len)
	if _, err := f.ReadAt(data, loc.off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotKept, h, err)
	}
	return data, nil
}

// sweepPacks removes the packs (and leftover temporary packs) last used
// before cutoff.
func (s *Store) sweepPacks(cutoff time.Time) int {
	ents, _ := readDir(s.root, "packs")
	removed := 0
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(cutoff) {
			continue
		}
		if s.root.Remove(filepath.Join("packs", e.Name())) == nil {
			removed++
		}
	}
	return removed
}
