package changes

import (
	"crypto/sha256"
	"errors"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// root is one tracked tree: the session's directory (the first root) or
// one of its additional directories (an extra root). Its fields are
// guarded by the tracker's mu.
type root struct {
	dir   string // absolute, clean
	extra bool   // an additional directory: its paths are shown absolute
	sc    *scanner
	base  *Snapshot // the tree as last seen; nil before the first look
	// off, once set, is why the tree is not tracked for good (it holds
	// more than MaxFiles files): a look returns it at once instead of
	// walking the tree again.
	off error
	// stale: the last Begin could not look at this tree, so its base
	// predates the command; the next End drops what it finds here (it may
	// be the user's) and only brings the base up to date.
	stale bool
}

// newRoot is a root for dir, never entering the absolute paths in exclude
// that lie under it.
func (t *Tracker) newRoot(dir string, extra bool, exclude []string) *root {
	o := t.opt
	sc := &scanner{root: dir, store: o.Store, maxKept: o.MaxKept, maxFiles: o.MaxFiles, maxFirst: o.MaxFirst,
		ignore: &ignorer{sets: map[string]*ignoreSet{}}, exclude: map[string]bool{}, noWatch: o.NoWatch, stop: &t.stopping,
		record: o.Session != "" && o.Store != nil}
	for _, x := range exclude {
		sc.excludePath(x)
	}
	return &root{dir: dir, extra: extra, sc: sc}
}

// excludePath keeps the scan out of the absolute path x when it lies
// under the scanner's root.
func (sc *scanner) excludePath(x string) {
	if rel, err := filepath.Rel(sc.root, x); err == nil && rel != "." && filepath.IsLocal(rel) {
		sc.exclude[filepath.ToSlash(rel)] = true
	}
}

// look brings the root's base up to date and returns what changed since,
// with paths as events name them (public). The first look of a tree (no
// base yet) finds nothing.
func (r *root) look() ([]event.FileChange, error) {
	if r.off != nil {
		return nil, r.off
	}
	s, cs, err := r.sc.look(r.base)
	if err != nil {
		if errors.Is(err, ErrTooManyFiles) {
			r.off = err // too big now is too big on the next command too
		}
		return nil, err
	}
	r.base = s
	return r.public(cs), nil
}

// public names cs as events do: relative to the session's directory for
// the first root, absolute (slash-separated) for an extra root.
func (r *root) public(cs []event.FileChange) []event.FileChange {
	if !r.extra {
		return cs
	}
	prefix := filepath.ToSlash(r.dir)
	for i := range cs {
		cs[i].Path = path.Join(prefix, cs[i].Path)
	}
	return cs
}

// close stops watching the tree.
func (r *root) close() {
	r.sc.w.close()
	r.sc.w, r.sc.noWatch = nil, true
}

// SetRoots makes dirs (absolute) the session's additional directories,
// tracked as its directory is, replacing those set before. A directory
// equal to or under another tracked one is covered by it and not tracked
// twice; the session's directory, when it lies under one of dirs, is left
// out of that one. Their paths in events are absolute. It does not wait
// for a look in progress: the roots are taken up by the next look (a new
// root's first look, which finds nothing, happens then, or right away in
// the background once the tracker is primed). Changes already recorded
// in a directory no longer set stay in the history, and /undo refuses
// them.
func (t *Tracker) SetRoots(dirs []string) {
	want := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if filepath.IsAbs(d) {
			want = append(want, filepath.Clean(d))
		}
	}
	t.wantMu.Lock()
	t.want, t.wantSet = want, true
	t.wantMu.Unlock()
	select {
	case <-t.primed:
		go t.settleRoots()
	default: // Prime's first look takes them
	}
}

// settleRoots applies the wanted roots and takes their first looks.
func (t *Tracker) settleRoots() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.openStore() != nil {
		return
	}
	t.syncRoots()
	release := t.hold()
	defer release()
	first := false
	for _, r := range t.roots {
		if r.base == nil {
			_, err := r.look()
			first = first || err == nil
		}
	}
	t.own(first)
}

// Roots are the tracked directories: the session's first, then the
// additional ones tracked (SetRoots, once taken up by a look).
func (t *Tracker) Roots() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, len(t.roots))
	for i, r := range t.roots {
		out[i] = r.dir
	}
	return out
}

// syncRoots takes up the roots SetRoots asked for: roots kept keep their
// state, new ones start without a base, dropped ones stop watching. t.mu
// is held.
func (t *Tracker) syncRoots() {
	t.wantMu.Lock()
	want, set := t.want, t.wantSet
	t.wantSet = false
	t.wantMu.Unlock()
	if !set {
		return
	}
	first := t.roots[0]
	dirs := coveredOut(first.dir, want)
	next := []*root{first}
	for _, d := range dirs {
		if i := slices.IndexFunc(t.roots[1:], func(r *root) bool { return r.dir == d }); i >= 0 {
			next = append(next, t.roots[1+i])
			continue
		}
		next = append(next, t.newRoot(d, true, append([]string{first.dir}, t.opt.Exclude...)))
	}
	for _, r := range t.roots[1:] {
		if !slices.Contains(next, r) {
			r.close()
		}
	}
	t.roots = next
}

// coveredOut is dirs without duplicates and without those equal to or
// under main or under another of dirs (already tracked there).
func coveredOut(main string, dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if within(d, main) || slices.ContainsFunc(dirs, func(o string) bool { return o != d && within(d, o) }) ||
			slices.Contains(out, d) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// within reports whether dir is parent or lies under it.
func within(dir, parent string) bool {
	rel, err := filepath.Rel(parent, dir)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// lookAll looks at every root, returning what changed, in root order.
// ok is false when no root could be looked at (err says why); a root
// that could not is marked stale.
func (t *Tracker) lookAll() (cs []event.FileChange, ok bool, err error) {
	if err := t.openStore(); err != nil {
		return nil, false, err
	}
	t.syncRoots()
	release := t.hold()
	defer release()
	var errs []error
	first := false
	defer func() { t.own(first) }()
	for _, r := range t.roots {
		first = first || r.base == nil && r.off == nil
		found, lerr := r.look()
		if lerr != nil {
			r.stale = true
			errs = append(errs, lerr)
			continue
		}
		ok = true
		if r.stale {
			r.stale = false
			continue // maybe not the command's: the base predated it
		}
		cs = append(cs, found...)
	}
	if !ok {
		return nil, false, errs[0]
	}
	return cs, true, nil
}

// hold takes the store's ownership lock shared for a look (Store.hold).
func (t *Tracker) hold() func() {
	if t.opt.Store == nil {
		return func() {}
	}
	return t.opt.Store.hold()
}

// own records the contents the roots' looks kept as the session's
// (Options.Session); first rewrites the records once each (a first look).
// A failure is logged nowhere: the contents then stay until the age sweep.
func (t *Tracker) own(first bool) {
	var kept [][sha256.Size]byte
	for _, r := range t.roots {
		kept = append(kept, r.sc.kept...)
		r.sc.kept = r.sc.kept[:0]
	}
	if t.opt.Store != nil && t.opt.Session != "" {
		_ = t.opt.Store.own(t.opt.Session, kept, first)
	}
}

// locate is the root holding p (a FileChange path) and p relative to it;
// ok is false when p lies in no tracked root.
func (t *Tracker) locate(p string) (r *root, rel string, ok bool) {
	if !path.IsAbs(p) {
		return t.roots[0], p, true
	}
	for _, r := range t.roots[1:] {
		prefix := filepath.ToSlash(r.dir) + "/"
		if strings.HasPrefix(p, prefix) {
			return r, p[len(prefix):], true
		}
	}
	return nil, "", false
}
