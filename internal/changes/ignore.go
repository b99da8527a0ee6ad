package changes

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sys/unix"
)

// ignoreSet is the ignore rules in force in one directory: its parent's,
// then those of its own .gitignore (later patterns win, as in git).
type ignoreSet struct {
	parent   *ignoreSet
	key      statKey // of the .gitignore that added patterns
	patterns []gitignore.Pattern
	matcher  gitignore.Matcher
}

// match reports whether path (components from the repository's root) is
// ignored.
func (s *ignoreSet) match(path []string, isDir bool) bool {
	if s == nil || len(s.patterns) == 0 {
		return false
	}
	return s.matcher.Match(path, isDir)
}

func (s *ignoreSet) with(key statKey, ps []gitignore.Pattern) *ignoreSet {
	n := &ignoreSet{parent: s, key: key}
	if s != nil {
		n.patterns = append(n.patterns, s.patterns...)
	}
	n.patterns = append(n.patterns, ps...)
	n.matcher = gitignore.NewMatcher(n.patterns)
	return n
}

// ignorer keeps a tree's ignore rules: the repository's (its
// .git/info/exclude and the .gitignore files from the repository's root
// down to the tree's, read once) and each directory's own .gitignore,
// parsed again only when its key changes. Without a repository around the
// tree, the tree's own .gitignore files still apply, as they would once it
// is one.
type ignorer struct {
	// prefix is the tree root's components relative to the repository's
	// root (none without a repository, or when the tree is its root).
	prefix []string
	base   *ignoreSet
	sets   map[string]*ignoreSet // by directory, relative to the tree
	buf    []byte
}

func newIgnorer(root string) *ignorer {
	ig := &ignorer{sets: map[string]*ignoreSet{}}
	repo := repoRoot(root)
	if repo == "" {
		return ig
	}
	if rel, err := filepath.Rel(repo, root); err == nil && rel != "." {
		ig.prefix = strings.Split(filepath.ToSlash(rel), "/")
	}
	var ps []gitignore.Pattern
	ps = append(ps, readPatterns(filepath.Join(repo, ".git", "info", "exclude"), nil)...)
	for i := 0; i < len(ig.prefix); i++ {
		dir := filepath.Join(append([]string{repo}, ig.prefix[:i]...)...)
		ps = append(ps, readPatterns(filepath.Join(dir, ".gitignore"), ig.prefix[:i])...)
	}
	if len(ps) > 0 {
		ig.base = (*ignoreSet)(nil).with(statKey{}, ps)
	}
	return ig
}

// components is directory rel's components from the repository's root.
func (ig *ignorer) components(rel string) []string {
	c := append([]string(nil), ig.prefix...)
	return append(c, split(rel)...)
}

// forDir is the rules in force in directory rel (open as fd, listed as
// children) under parent's.
func (ig *ignorer) forDir(fd int, rel string, children []child, parent *ignoreSet) *ignoreSet {
	has := false
	for _, c := range children {
		if c.name == ".gitignore" && c.regular {
			has = true
			break
		}
	}
	var st unix.Stat_t
	if !has || unix.Fstatat(fd, ".gitignore", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		delete(ig.sets, rel)
		return parent
	}
	key := keyOf(&st)
	if s := ig.sets[rel]; s != nil && s.parent == parent && s.key == key {
		return s
	}
	ps := ig.parse(fd, ig.components(rel))
	s := parent.with(key, ps)
	ig.sets[rel] = s
	return s
}

// parse reads the .gitignore of the directory open as fd.
func (ig *ignorer) parse(fd int, domain []string) []gitignore.Pattern {
	f, err := unix.Openat(fd, ".gitignore", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	file := os.NewFile(uintptr(f), ".gitignore")
	defer file.Close()
	data, err := readAll(file, 1<<20, &ig.buf)
	if err != nil {
		return nil
	}
	return parsePatterns(data, domain)
}

// readPatterns reads the ignore file at path ("" when missing).
func readPatterns(path string, domain []string) []gitignore.Pattern {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return parsePatterns(data, domain)
}

// parsePatterns parses gitignore lines: blank lines and comments skipped.
func parsePatterns(data []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// repoRoot is the nearest directory at or above dir holding a .git entry,
// or "".
func repoRoot(dir string) string {
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}
