package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// The protection tests (issue 32 items 1 and 2): each attack runs at level
// workspace and is judged by its effect on the host — a real git run on the
// host afterwards that must not run the plant, a file that must not appear,
// a secret that must not be read.

// gitEnv is the environment of git runs in these tests: no global or
// system config, an identity.
func gitEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
}

// hostGit runs git in dir on the host, as the user would after the command.
func hostGit(t *testing.T, home, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv(home)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// newRepo makes a repository with one commit in a fresh workspace.
func newRepo(t *testing.T, home string) string {
	t.Helper()
	ws := tempDir(t)
	initRepo(t, home, ws)
	return ws
}

func initRepo(t *testing.T, home, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, gitEnv(home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// plant is a shell snippet that writes an executable hook script at $1
// which creates the file pwn.
func plantHook(pwn string) string {
	return `plant() { mkdir -p "$(dirname "$1")" && printf '#!/bin/sh\ntouch ` + pwn + `\n' > "$1" && chmod +x "$1"; }; `
}

// TestProtectedRepository: every way the attacks of issue 32 used to make a
// later git run on the host execute a program fails, while the command
// itself goes on; a real `git status` and `git commit` on the host
// afterwards run nothing.
func TestProtectedRepository(t *testing.T) {
	requireBwrap(t)
	home := testHome(t)
	e := newTestExecutor(t, Config{Home: home})
	attacks := []struct {
		name  string
		setup func(t *testing.T, ws string) // on the host, before
		cmd   string                        // in the sandbox; plant() is defined
		git   string                        // the directory (relative) the user's git runs in
	}{
		{name: "rename .git and copy it back", cmd: `mv .git .g; cp -a .g .git2; mv .git2 .git; plant .git/hooks/post-commit; git config core.fsmonitor "touch $PWN"`},
		{name: "fsmonitor in config", cmd: `git config core.fsmonitor "touch $PWN"; echo "[core] fsmonitor = touch $PWN" >> .git/config`},
		{name: "hook", cmd: `plant .git/hooks/post-commit; plant .git/hooks/pre-commit`},
		{name: "hooks created where none were", setup: func(t *testing.T, ws string) { os.RemoveAll(filepath.Join(ws, ".git", "hooks")) },
			cmd: `plant .git/hooks/post-commit`},
		{name: "rename hooks", cmd: `mv .git/hooks .git/h; plant .git/hooks/post-commit`},
		{name: "commondir", cmd: `cp -a .git evil 2>/dev/null; mkdir -p evil; git config -f evil/config core.fsmonitor "touch $PWN"; echo "$PWD/evil" > .git/commondir`},
		{name: "config.worktree", setup: func(t *testing.T, ws string) {
			hostGit(t, home, ws, "config", "extensions.worktreeConfig", "true")
		}, cmd: `printf '[core]\n\tfsmonitor = touch %s\n' "$PWN" > .git/config.worktree`},
		{name: "nested repository", setup: func(t *testing.T, ws string) {
			mkdir(t, filepath.Join(ws, "vendor", "lib"))
			initRepo(t, home, filepath.Join(ws, "vendor", "lib"))
		}, cmd: `plant vendor/lib/.git/hooks/post-commit; git -C vendor/lib config core.fsmonitor "touch $PWN"`, git: "vendor/lib"},
		{name: "nested repository's parent renamed", setup: func(t *testing.T, ws string) {
			mkdir(t, filepath.Join(ws, "vendor", "lib"))
			initRepo(t, home, filepath.Join(ws, "vendor", "lib"))
		}, cmd: `mv vendor v2 || mv vendor/lib vendor/l2; mkdir -p vendor/lib; cp -a v2/lib/.git vendor/l2/.git vendor/lib/ 2>/dev/null; plant vendor/lib/.git/hooks/post-commit`, git: "vendor/lib"},
		{name: "hooks path in the workspace", setup: func(t *testing.T, ws string) {
			hostGit(t, home, ws, "config", "core.hooksPath", ".husky/_")
		}, cmd: `plant .husky/_/post-commit; plant .husky/_/pre-commit`},
		{name: ".git a symlink to the git directory", setup: func(t *testing.T, ws string) {
			if err := os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, "meta.git")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("meta.git", filepath.Join(ws, ".git")); err != nil {
				t.Fatal(err)
			}
		}, cmd: `plant .git/hooks/post-commit; plant meta.git/hooks/pre-commit; git config core.fsmonitor "touch $PWN"`},
		{name: "linked worktree's gitdir file", setup: func(t *testing.T, ws string) {
			hostGit(t, home, ws, "worktree", "add", "-q", "wt")
		}, cmd: `plant .git/worktrees/wt/hooks/post-commit; echo "gitdir: $PWD/evil" > wt/.git; cp -a .git evil; git config -f evil/config core.fsmonitor "touch $PWN"`, git: "wt"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			ws := newRepo(t, home)
			if a.setup != nil {
				a.setup(t, ws)
			}
			pwn := filepath.Join(t.TempDir(), "pwn") // outside the workspace, on the host
			res := run(t, e, executor.LevelWorkspace, ws, "PWN="+pwn+"; "+plantHook(pwn)+a.cmd+"; true")
			dir := filepath.Join(ws, a.git)
			hostGit(t, home, dir, "status")
			hostGit(t, home, dir, "commit", "-q", "--allow-empty", "-m", "after")
			hostGit(t, home, dir, "diff", "HEAD")
			if _, err := os.Stat(pwn); err == nil {
				t.Errorf("the user's git ran the plant (command output %q %q)", res.Stdout, res.Stderr)
			}
		})
	}
}

// TestProtectedNames: the editor, shell and agent files of the protected
// set can be neither created nor changed, renamed or replaced; after the
// command no placeholder is left in the project, and what existed is as it
// was.
func TestProtectedNames(t *testing.T) {
	requireBwrap(t)
	home := testHome(t)
	e := newTestExecutor(t, Config{Home: home})
	ws := newRepo(t, home)
	mkdir(t, filepath.Join(ws, ".vscode"))
	writeFile(t, filepath.Join(ws, ".vscode", "settings.json"), "{}\n")
	writeFile(t, filepath.Join(ws, "AGENTS.md"), "be nice\n")
	before := listTree(t, ws)
	cmd := `for f in .zed/settings.json .zed/tasks.json .vscode/tasks.json .idea/workspace.xml .claude/settings.json .dsh-acp/permissions.json; do
		mkdir -p "$(dirname $f)"; echo '{"evil":1}' > $f; done
	echo evil > .envrc; echo evil >> AGENTS.md; echo evil > .mcp.json; printf '[submodule "x"]\n\tupdate = !touch pwn\n' > .gitmodules
	mv .vscode .v; mkdir .vscode; echo evil > .vscode/tasks.json; mv AGENTS.md A.md; echo evil > AGENTS.md
	rm -rf .zed; ln -s /tmp .zed; echo written > ordinary.txt; true`
	res := run(t, e, executor.LevelWorkspace, ws, cmd)
	if got, _ := os.ReadFile(filepath.Join(ws, "ordinary.txt")); string(got) != "written\n" {
		t.Errorf("an ordinary write failed: %q %q", res.Stdout, res.Stderr)
	}
	after := listTree(t, ws)
	after = slices.DeleteFunc(after, func(s string) bool { return s == "ordinary.txt" })
	if !slices.Equal(before, after) {
		t.Errorf("the project changed beyond ordinary.txt:\nbefore %q\nafter  %q", before, after)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(got) != "be nice\n" {
		t.Errorf("AGENTS.md is now %q", got)
	}
}

// TestOrdinaryGitAtWorkspace: add, commit, branch, stash, checkout and
// rebase run unasked at level workspace, and leave no placeholder behind.
func TestOrdinaryGitAtWorkspace(t *testing.T) {
	requireBwrap(t)
	home := testHome(t)
	e := newTestExecutor(t, Config{Home: home})
	ws := newRepo(t, home)
	before := listTree(t, ws)
	cmd := `set -e; export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
	echo a > a.txt; git add a.txt; git commit -qm a
	git branch side; git checkout -q side; echo b > b.txt; git add b.txt; git commit -qm b
	git checkout -q main; echo c > c.txt; git add c.txt; git commit -qm c
	echo dirty >> a.txt; git stash -q; git stash pop -q; git checkout -q -- a.txt
	git checkout -q side; git rebase -q main; git log --oneline | wc -l; git status --porcelain | wc -l`
	res := run(t, e, executor.LevelWorkspace, ws, cmd)
	if strings.Fields(string(res.Stdout)) == nil || strings.Join(strings.Fields(string(res.Stdout)), " ") != "4 0" || res.ExitCode != 0 {
		t.Fatalf("ordinary git failed: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	after := listTree(t, ws)
	after = slices.DeleteFunc(after, func(s string) bool { return strings.HasSuffix(s, ".txt") })
	if !slices.Equal(before, after) {
		t.Errorf("entries left behind:\nbefore %q\nafter  %q", before, after)
	}
}

// listTree lists the project's entries (relative), .git's top level
// included but not its objects, refs and logs.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case rel == ".":
			return nil
		case strings.HasPrefix(rel, ".git/") && strings.Count(rel, "/") > 1:
			return nil
		case slices.Contains([]string{".git/objects", ".git/refs", ".git/logs", ".git/index", ".git/ORIG_HEAD", ".git/COMMIT_EDITMSG", ".git/HEAD", ".git/AUTO_MERGE"}, rel):
			return nil
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHomeAsWorkspace: with the session at cwd = $HOME, renaming a parent
// does not uncover a hidden path in the next command (~/.config with gh's
// token and dsh-acp's key, ~/.local with the state directory, a dotfiles
// directory ~/.ssh links into, or ~/.ssh re-pointed), and rc files,
// ~/.local/bin, autostart and dsh-acp's rule file cannot be planted.
func TestHomeAsWorkspace(t *testing.T) {
	requireBwrap(t)
	home := tempDir(t)
	secret := "secret-" + newMarker()
	state := mkdir(t, filepath.Join(home, ".local", "state", "dsh-acp"))
	for _, f := range []string{".config/gh/hosts.yml", ".config/dsh-acp/credentials", ".local/state/dsh-acp/journal", "dotfiles/ssh/id_rsa"} {
		mkdir(t, filepath.Dir(filepath.Join(home, f)))
		writeFile(t, filepath.Join(home, f), secret+"\n")
	}
	writeFile(t, filepath.Join(home, ".bashrc"), "# mine\n")
	mkdir(t, filepath.Join(home, ".local", "share"))
	if err := os.Symlink("dotfiles/ssh", filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	e := newTestExecutor(t, Config{Home: home, Config: local.Config{StateDir: state}})
	plant := `mv ~/.config ~/.c; mv ~/.local ~/.l; mv ~/dotfiles ~/d2; mv ~/dotfiles/ssh ~/dotfiles/s2; rm ~/.ssh; ln -s /nonexistent ~/.ssh
	echo evil >> ~/.bashrc; mkdir -p ~/.local/bin ~/.config/autostart ~/.config/dsh-acp; echo evil > ~/.local/bin/git
	echo evil > ~/.config/autostart/x.desktop; echo '{"allow":["*"]}' > ~/.config/dsh-acp/permissions.json; echo done`
	res := run(t, e, executor.LevelWorkspace, home, plant)
	if !strings.Contains(string(res.Stdout), "done") {
		t.Fatalf("the plant did not run: %q %q", res.Stdout, res.Stderr)
	}
	read := `cat ~/.c/gh/hosts.yml ~/.config/gh/hosts.yml ~/.c/dsh-acp/credentials ~/.config/dsh-acp/credentials ~/.l/state/dsh-acp/journal ` +
		`~/.local/state/dsh-acp/journal ~/d2/ssh/id_rsa ~/dotfiles/ssh/id_rsa ~/dotfiles/s2/id_rsa ~/.ssh/id_rsa; grep -r secret- ~ 2>/dev/null; true`
	res = run(t, e, executor.LevelWorkspace, home, read)
	if strings.Contains(string(res.Combined), secret) {
		t.Errorf("a hidden secret was read after renames:\n%s", res.Combined)
	}
	if got, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(got) != "# mine\n" {
		t.Errorf(".bashrc is now %q", got)
	}
	for _, p := range []string{".local/bin", ".config/autostart", ".config/dsh-acp/permissions.json", ".c", ".l", "d2"} {
		if _, err := os.Lstat(filepath.Join(home, p)); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
}

// TestWorkspaceReplaced: a session's cwd inside another session's
// workspace cannot be swapped for a symlink out: while known it cannot be
// renamed, and a cwd reached through a symlink made inside another known
// workspace is refused — no write lands outside.
func TestWorkspaceReplaced(t *testing.T) {
	requireBwrap(t)
	e := newTestExecutor(t, Config{})
	// On the root filesystem: under /tmp (private in a sandbox) the
	// symlinks would lead nowhere.
	outer, outside := varTempDir(t), varTempDir(t)
	known, unknown := mkdir(t, filepath.Join(outer, "known")), mkdir(t, filepath.Join(outer, "later"))
	run(t, e, executor.LevelWorkspace, known, "true")
	res := run(t, e, executor.LevelWorkspace, outer, fmt.Sprintf("mv known k2; ln -s %s known; mv later l2 && ln -s %s later; true", outside, outside))
	for _, cwd := range []string{known, unknown} {
		spec, err := e.Resolve(executor.Request{Command: "touch planted", SessionCwd: cwd, Level: executor.LevelWorkspace})
		if err == nil {
			_, _ = e.Run(context.Background(), spec, nil)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Errorf("a write landed outside through a replaced workspace (the swap said %q)", res.Combined)
	}
	if fi, err := os.Lstat(known); err != nil || !fi.IsDir() {
		t.Errorf("the known workspace was replaced: %v", err)
	}
}

// varTempDir is a fresh directory under /var/tmp, removed at the end.
func varTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "dsh-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestNewRepositoryAsksFirst: in a workspace without a repository no .git
// can be created (hooks planted before the user's own git init), unless
// the run carries the approval of a git init.
func TestNewRepositoryAsksFirst(t *testing.T) {
	requireBwrap(t)
	home := testHome(t)
	e := newTestExecutor(t, Config{Home: home})
	ws := tempDir(t)
	pwn := filepath.Join(t.TempDir(), "pwn")
	res := run(t, e, executor.LevelWorkspace, ws, plantHook(pwn)+"plant .git/hooks/post-checkout; git init -q; true")
	if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
		t.Fatalf("a repository was created unasked: %q", res.Combined)
	}
	spec, err := e.Resolve(executor.Request{Command: "git init -q && git status --porcelain | wc -l", SessionCwd: ws, Level: executor.LevelWorkspace})
	if err != nil {
		t.Fatal(err)
	}
	spec.AllowNewRepository = true
	approved, err := e.Run(context.Background(), spec, nil)
	if err != nil || approved.ExitCode != 0 || strings.TrimSpace(string(approved.Stdout)) != "0" {
		t.Fatalf("the approved git init failed: %v %+v %q", err, approved.ExitCode, approved.Combined)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, ".git", "hooks")); len(entries) > 0 && !strings.HasSuffix(entries[0].Name(), ".sample") {
		t.Errorf("hooks in the new repository: %v", entries)
	}
}

// TestPlaceholdersOfAKilledDaemon: a daemon SIGKILLed during a command
// leaves its placeholders; the next daemon on the same state directory
// removes them at its first use, and nothing of the user's.
func TestPlaceholdersOfAKilledDaemon(t *testing.T) {
	requireBwrap(t)
	state, home, ws := t.TempDir(), testHome(t), tempDir(t)
	h := startHelperAs(t, nil, os.Args[0], "start", "sleep 100", state, home, ws)
	h.waitLine(t, "started")
	if _, err := os.Stat(filepath.Join(ws, ".zed")); err != nil {
		t.Fatalf("no placeholder while the command runs: %v", err)
	}
	h.kill()
	left := listTree(t, ws)
	if len(left) == 0 {
		t.Fatal("the killed daemon left nothing to sweep")
	}
	mkdir(t, filepath.Join(ws, ".vscode", "mine")) // the user's, made since: kept
	e := newTestExecutor(t, Config{Home: home, Config: local.Config{StateDir: state}})
	run(t, e, executor.LevelReadOnly, ws, "true")
	if got := listTree(t, ws); !slices.Equal(got, []string{".vscode", ".vscode/mine"}) {
		t.Errorf("after the sweep the project holds %q (the killed daemon left %q)", got, left)
	}
}

// TestGitAtHomeWithoutGitconfig: a session at cwd = $HOME where the user
// has no ~/.gitconfig still runs git — the name's placeholder is an empty
// file, which git reads as an empty config (a directory there stops every
// git run) — and the command can neither write ~/.gitconfig nor leave it
// behind.
func TestGitAtHomeWithoutGitconfig(t *testing.T) {
	requireBwrap(t)
	home := tempDir(t)
	initRepo(t, home, mkdir(t, filepath.Join(home, "proj")))
	e := newTestExecutor(t, Config{Home: home})
	cmd := `unset GIT_CONFIG_GLOBAL XDG_CONFIG_HOME; cd proj && git status --porcelain && git log --oneline | wc -l; ` +
		`git config --global core.fsmonitor 'touch /tmp/x' 2>/dev/null && echo written; true`
	res := run(t, e, executor.LevelWorkspace, home, cmd)
	if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "1" {
		t.Fatalf("git at $HOME without ~/.gitconfig: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if _, err := os.Lstat(filepath.Join(home, ".gitconfig")); err == nil {
		t.Error("~/.gitconfig exists on the host after the command")
	}
}
