package changes

import (
	"errors"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// errRescan: the names a watcher reported need a full look (a .gitignore
// changed, so what is ignored may have).
var errRescan = errors.New("rules changed: look at everything")

// look brings s up to date and returns it (s itself, or a new snapshot)
// with what changed since: from the names the watcher reported when it has
// seen everything, else by looking at every file (the stat cache sparing
// the reads). A nil s is the first look: everything is read and kept, and
// nothing is a change.
func (sc *scanner) look(s *Snapshot) (*Snapshot, []event.FileChange, error) {
	if s == nil {
		return sc.first()
	}
	if sc.w != nil && !sc.w.broken {
		dirty := map[string]map[string]bool{}
		if sc.w.drain(dirty) {
			cs, err := sc.update(s, dirty)
			if !errors.Is(err, errRescan) {
				return s, cs, err
			}
		}
		sc.resetWatcher()
	}
	n, err := sc.scan(s)
	if err != nil {
		return s, nil, err
	}
	return n, diff(sc.store, s, n), nil
}

// first is the first look: every file read, their contents kept in one
// pack (one file written, not one per content).
func (sc *scanner) first() (*Snapshot, []event.FileChange, error) {
	sc.ignore = newIgnorer(sc.root) // the rules above the tree, read once, off the prompt's path
	sc.resetWatcher()
	pack, err := sc.store.NewPack()
	if err == nil {
		sc.pack = pack
		defer func() { sc.pack = nil }()
	}
	n, err := sc.scan(nil)
	if sc.pack != nil {
		if err != nil {
			sc.pack.Abort()
		} else if err = sc.pack.Close(); err != nil {
			n = nil
		}
	}
	return n, nil, err
}

// resetWatcher starts watching afresh (the next full look adds every
// directory), unless watching failed for lack of watches before.
func (sc *scanner) resetWatcher() {
	if sc.w != nil {
		if sc.w.full {
			sc.noWatch = true
		}
		sc.w.close()
		sc.w = nil
	}
	if !sc.noWatch {
		sc.w = newWatcher()
	}
}

// update applies to s what happened to the names in dirty (directory →
// names) and returns the changes. errRescan means nothing was applied.
func (sc *scanner) update(s *Snapshot, dirty map[string]map[string]bool) ([]event.FileChange, error) {
	if len(dirty) == 0 {
		return nil, nil
	}
	for _, names := range dirty {
		if names[".gitignore"] {
			return nil, errRescan
		}
	}
	sc.begin(&Snapshot{}, s)
	rels := make([]string, 0, len(dirty))
	for rel := range dirty {
		rels = append(rels, rel)
	}
	sort.Strings(rels) // parents first: a removed directory is gone before its children's turn
	u := updater{sc: sc, s: s}
	for _, rel := range rels {
		u.dir(rel, dirty[rel])
	}
	u.enterNew()
	sort.Slice(u.out, func(i, j int) bool { return u.out[i].Path < u.out[j].Path })
	for i := range u.out {
		if i >= MaxDescribed {
			break
		}
		describe(sc.store, &u.out[i])
	}
	return u.out, sc.err
}

// updater applies one batch of reported names.
type updater struct {
	sc      *scanner
	s       *Snapshot
	out     []event.FileChange
	newDirs []newDir
}

type newDir struct {
	rel string
	ign *ignoreSet
}

// dir examines names of directory rel, and lists it again.
func (u *updater) dir(rel string, names map[string]bool) {
	ds := u.s.dirs[rel]
	if ds == nil {
		return // not tracked (ignored, or removed with its parent)
	}
	fd, err := unix.Open(abs(u.sc.root, rel), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return // gone: its parent's names say so
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	u.sc.prev = &Snapshot{}
	fresh := u.sc.listing(fd, rel, keyOf(&st))
	if fresh == nil {
		return
	}
	u.sc.judge(fresh, rel, ds.ign)
	u.s.dirs[rel] = fresh
	byName := make(map[string]child, len(names))
	for _, c := range fresh.children {
		if names[c.name] {
			byName[c.name] = c
		}
	}
	for name := range names {
		p := join(rel, name)
		if u.sc.exclude[p] {
			continue
		}
		c, ok := byName[name]
		if ok && c.ignored {
			ok = false
		}
		u.name(fd, p, c, ok, ds.ign)
	}
}

// name brings path p (child c of the directory open as fd, when exists)
// up to date.
func (u *updater) name(fd int, p string, c child, exists bool, ign *ignoreSet) {
	old, wasFile := u.s.files[p]
	oldDir, wasDir := u.s.dirs[p]
	var st unix.Stat_t
	u.sc.stats++
	if exists && unix.Fstatat(fd, c.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		exists = false
	}
	isFile := exists && st.Mode&unix.S_IFMT == unix.S_IFREG
	isDir := exists && st.Mode&unix.S_IFMT == unix.S_IFDIR
	if wasDir && (!isDir || oldDir.key.ino != st.Ino) {
		u.removeTree(p)
		wasDir = false
	}
	if wasFile && !isFile {
		u.out = append(u.out, change(p, event.ChangeDeleted, old, entry{}))
		delete(u.s.files, p)
	}
	switch {
	case isDir && !wasDir:
		u.newDirs = append(u.newDirs, newDir{rel: p, ign: ign})
	case isFile:
		key := keyOf(&st)
		if wasFile && old.key == key {
			return
		}
		e, ok := u.sc.read(fd, c.name, key)
		if !ok {
			return
		}
		u.s.files[p] = e
		switch {
		case !wasFile:
			u.out = append(u.out, change(p, event.ChangeCreated, entry{}, e))
		case old.hash != e.hash || (e.hash == "" && old.key != e.key):
			u.out = append(u.out, change(p, event.ChangeModified, old, e))
		}
	}
}

// removeTree forgets directory p and everything under it: its files are
// deleted.
func (u *updater) removeTree(p string) {
	prefix := p + "/"
	for f, e := range u.s.files {
		if strings.HasPrefix(f, prefix) {
			u.out = append(u.out, change(f, event.ChangeDeleted, e, entry{}))
			delete(u.s.files, f)
		}
	}
	for d := range u.s.dirs {
		if d == p || strings.HasPrefix(d, prefix) {
			delete(u.s.dirs, d)
			u.sc.w.remove(d)
		}
	}
}

// enterNew walks the directories that appeared: every file in them is
// created.
func (u *updater) enterNew() {
	for _, nd := range u.newDirs {
		if _, done := u.s.dirs[nd.rel]; done {
			continue
		}
		fd, err := unix.Open(abs(u.sc.root, nd.rel), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			unix.Close(fd)
			continue
		}
		u.sc.prev = &Snapshot{}
		u.sc.collect, u.sc.added = true, u.sc.added[:0]
		u.sc.walk(fd, nd.rel, keyOf(&st), nd.ign)
		u.sc.collect = false
		for _, f := range u.sc.added {
			u.out = append(u.out, change(f, event.ChangeCreated, entry{}, u.s.files[f]))
		}
	}
}
