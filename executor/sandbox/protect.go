package sandbox

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The protected set: what stays read-only inside a writable workspace
// because something outside the sandbox later reads it as instructions —
// git runs hooks and the programs its config names, editors run tasks and
// language servers their settings name, shells source rc files, agents read
// AGENTS.md and .mcp.json, dsh-acp reads its own rule files. Each entry is
// held by construction for the whole command:
//
//   - an entry that exists is a read-only bind mount of itself: a mount
//     point cannot be written, renamed, replaced or unlinked (EBUSY);
//   - an entry that does not exist gets a placeholder put in just before
//     the command (an empty directory renamed in from the daemon's stash,
//     or made) and mounted the same way, so nothing can be created under
//     its name; the placeholder leaves the project when the command ends
//     (back to the stash, or removed), and only while it is still the
//     empty entry the daemon put there (see placeholders).
//     Outside a git directory a placeholder is an empty directory, even
//     for a file's name (.envrc, AGENTS.md): git neither shows nor adds an
//     empty directory, so `git status` and `git add -A` stay as they were;
//     writing the name fails with "Is a directory";
//   - every directory between the workspace and an entry (and a git
//     directory itself) is bound onto itself writable: it stays writable
//     but cannot be renamed or removed, so no parent can be moved away and
//     replaced by a copy the protection does not cover.

// DefaultProtected lists the names protected at the workspace root (and,
// for .git, at the root of every repository found in it; see gitProtected).
var DefaultProtected = []string{
	".git", ".gitmodules", ".zed", ".vscode", ".idea", ".claude", ".envrc", "AGENTS.md", ".mcp.json", ".dsh-acp",
}

// HomeProtected lists the names below the home directory protected when
// the home is inside a writable workspace (a session at cwd = $HOME): shell
// rc files, git's global config, autostart entries, user services and the
// directories on PATH a shim would be planted in.
var HomeProtected = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
	".inputrc", ".gitconfig", ".config/git", ".config/autostart", ".config/systemd", ".config/environment.d",
	".config/fish", ".config/zed", ".local/bin", "bin", ".local/share/applications", ".xprofile", ".xsessionrc",
	".pam_environment",
}

// homeFilePlaceholders are the HomeProtected names whose placeholder is an
// empty file, not a directory: git reads ~/.gitconfig on every run and
// stops at a directory there ("unknown error occurred while reading the
// configuration files"); an empty file is a valid empty config. (While a
// command runs, a home that is a repository shows it untracked.)
var homeFilePlaceholders = map[string]bool{".gitconfig": true}

// homeName is the placeholder kind of the HomeProtected name rel.
func homeName(rel string) protectedName {
	return protectedName{name: rel, dir: !homeFilePlaceholders[rel]}
}

// gitProtected lists the entries of a git directory that can name programs
// (config, hooks, info/attributes' drivers, a commondir or gitdir pointing
// at another git directory, linked worktrees' and submodules' git
// directories). Objects, refs, logs, the index, HEAD and the rest stay
// writable: add, commit, branch, stash, checkout and rebase run as usual.
var gitProtected = []protectedName{
	{"config", false, ""}, {"config.worktree", false, ""}, {"hooks", true, ""}, {"info", true, ""},
	{"worktrees", true, ""}, {"modules", true, ""}, {"gitdir", false, "-"},
	// An empty commondir would stop git; "." names the git directory
	// itself, which is what no commondir means.
	{"commondir", false, ".\n"},
}

// protectedName is an entry and the placeholder it gets when absent: a
// directory, a file with content, or none ("-").
type protectedName struct {
	name    string
	dir     bool
	content string
}

// The search for nested repositories is breadth first, at most
// nestedDepth directories deep and nestedWalkLimit directories wide, skips
// node_modules, and its answer is reused for nestedTTL per workspace: it
// runs before every command, and a workspace such as $HOME is large.
const (
	nestedWalkLimit = 3000
	nestedDepth     = 4
	nestedTTL       = 30 * time.Second
)

// protection is what one sandbox protects inside its writable workspace.
type protection struct {
	ro           []string // read-only binds, entries and placeholders
	pins         []string // directories bound onto themselves, shallowest first
	placeholders []string // made for this command, to remove after it
}

// protect computes the protection of a writable workspace ws (resolved),
// making the placeholders it needs (registered in reg; the caller removes
// them with reg.release(p.placeholders) once the command ended). extra are
// other paths inside ws whose parents must not move (hidden paths, other
// sessions' workspaces); others (other sessions' workspaces) are pinned
// themselves too.
// newRepo lets an absent .git at ws be created (Spec.AllowNewRepository).
func (s *Spawner) protect(ws string, extra, others []string, newRepo bool) protection {
	var p protection
	pinned := map[string]bool{}
	pin := func(path string) {
		for d := filepath.Dir(path); d != ws && within(d, ws) && !pinned[d]; d = filepath.Dir(d) {
			pinned[d] = true
		}
	}
	entry := func(path string, name protectedName) {
		switch path, h := s.places.hold(ws, path, name); h {
		case holdPlaceholder: // made, or another command's: held for this one too
			p.placeholders = append(p.placeholders, path)
			p.ro = append(p.ro, path)
			pin(path)
		case holdExisting:
			if r, ok := resolveExisting(path); ok && within(r, ws) {
				p.ro = append(p.ro, r)
				pin(r)
			}
		}
	}
	for _, rel := range s.protected {
		path := filepath.Join(ws, rel)
		if rel == ".git" {
			if _, err := os.Lstat(path); err != nil && newRepo {
				continue
			}
			s.protectRepo(ws, path, &p, pin, entry, pinned)
			continue
		}
		entry(path, protectedName{name: rel, dir: true})
	}
	if s.home != "" && within(s.home, ws) {
		for _, rel := range HomeProtected {
			entry(filepath.Join(s.home, rel), homeName(rel))
		}
	}
	for _, nested := range s.nested(ws) {
		s.protectRepo(ws, nested, &p, pin, entry, pinned)
	}
	if hp := hooksPath(ws); hp != "" {
		entry(hp, protectedName{name: "hooks", dir: true})
	}
	for _, e := range extra {
		if e != ws && within(e, ws) {
			pin(e)
		}
	}
	for _, o := range others {
		if o != ws && within(o, ws) && isDir(o) {
			pin(o)
			pinned[o] = true
		}
	}
	s.places.record()
	for d := range pinned {
		p.pins = append(p.pins, d)
	}
	slices.SortFunc(p.pins, func(a, b string) int {
		if c := strings.Count(a, "/") - strings.Count(b, "/"); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return p
}

// protectRepo protects the repository entry dotgit (a .git directory, or a
// .git file naming one): the entry itself cannot move, and its git
// directory's program-naming entries are read-only.
func (s *Spawner) protectRepo(ws, dotgit string, p *protection, pin func(string), entry func(string, protectedName), pinned map[string]bool) {
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		// No repository here: a placeholder keeps one from being
		// created (git init asks first; see docs/security.md).
		entry(dotgit, protectedName{name: ".git", dir: true})
		return
	case fi.Mode().IsRegular():
		// A linked worktree's or submodule's "gitdir: PATH" file.
		entry(dotgit, protectedName{name: ".git", content: "-"})
		if gd := gitdirOf(dotgit); gd != "" && gd != ws && within(gd, ws) && isDir(gd) {
			s.protectGitDir(ws, gd, p, pin, entry, pinned)
		}
		return
	case fi.IsDir():
		s.protectGitDir(ws, dotgit, p, pin, entry, pinned)
	case fi.Mode()&os.ModeSymlink != 0:
		// A .git linking to the git directory: git follows it, so its
		// target's entries are protected (and the target pinned). The link
		// itself is no mount point: a command can replace it (see the
		// package's known limits).
		if gd, ok := resolveExisting(dotgit); ok && gd != ws && within(gd, ws) && isDir(gd) {
			s.protectGitDir(ws, gd, p, pin, entry, pinned)
		}
	}
}

// protectGitDir pins the git directory gd and protects its entries.
func (s *Spawner) protectGitDir(ws, gd string, p *protection, pin func(string), entry func(string, protectedName), pinned map[string]bool) {
	pin(gd)
	if gd != ws {
		pinned[gd] = true
	}
	for _, n := range gitProtected {
		entry(filepath.Join(gd, n.name), n)
	}
}

// gitdirOf reads a .git file's "gitdir: PATH" (relative to the file's
// directory) and resolves it; "" when it cannot.
func gitdirOf(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	path, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	path = strings.TrimSpace(path)
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(file), path)
	}
	r, _ := resolveExisting(path)
	return r
}

// nestedRepos finds the .git entries below ws (not ws/.git itself), breadth
// first within the bounds above, not descending into git directories.
func nestedRepos(ws string, limit int) []string {
	var out []string
	type dir struct {
		path  string
		depth int
	}
	queue := []dir{{ws, 0}}
	for n := 0; len(queue) > 0 && n < limit; n++ {
		d := queue[0]
		queue = queue[1:]
		entries, err := os.ReadDir(d.path)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(d.path, e.Name())
			switch {
			case e.Name() == ".git":
				if d.depth > 0 {
					out = append(out, p)
				}
			case e.IsDir() && e.Name() != "node_modules" && d.depth+1 < nestedDepth:
				queue = append(queue, dir{p, d.depth + 1})
			}
		}
	}
	return out
}

// nested is nestedRepos for ws, reused for nestedTTL.
func (s *Spawner) nested(ws string) []string {
	s.mu.Lock()
	c, ok := s.nestedCache[ws]
	s.mu.Unlock()
	if ok && time.Since(c.at) < nestedTTL {
		return c.repos
	}
	repos := nestedRepos(ws, nestedWalkLimit)
	s.mu.Lock()
	s.nestedCache[ws] = nestedFound{repos: repos, at: time.Now()}
	s.mu.Unlock()
	return repos
}

// nestedFound is one search's answer.
type nestedFound struct {
	repos []string
	at    time.Time
}

// hooksPath is the hooks directory ws's repository configures
// (core.hooksPath in .git/config, e.g. husky's .husky/_) when it lies inside
// ws, resolved; "" otherwise. Only the repository's own config file is
// read: the global one is outside the workspace, read-only anyway.
func hooksPath(ws string) string {
	f, err := os.Open(filepath.Join(ws, ".git", "config"))
	if err != nil {
		return ""
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(strings.TrimSpace(strings.Trim(line, "[]")))
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section != "core" || !strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if !filepath.IsAbs(v) {
			v = filepath.Join(ws, v)
		}
		v = filepath.Clean(v)
		if within(v, ws) && v != ws {
			return v
		}
	}
	return ""
}

// errReplaced is the reason a workspace is refused when it no longer is the
// directory it was.
var errReplaced = errors.New("the workspace was replaced since it was first used (renamed, or swapped for a symlink): refusing it")
