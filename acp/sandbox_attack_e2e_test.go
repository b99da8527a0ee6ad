package acp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/executortest"
	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// The sandbox's attack tests (issue 32): each attack runs through the real
// daemon over stdio, as root and as an unprivileged user, and is judged by
// its effect on the host — a file outside unchanged, a later real
// `git status` that did not run a plant, a secret that did not reach the
// client — never by what a card says.

// unprivilegedUID is the user the daemon drops to in the "user" runs.
const unprivilegedUID = 65534

// asUsers are the identities every attack runs as: the test's own (root
// in CI) and an ordinary user.
var asUsers = []string{"root", "user"}

// attackTree is a throwaway HOME holding the project (the session's cwd),
// a sibling outside the project, the state directory and the daemon's
// config directory (XDG_CONFIG_HOME), all owned by the daemon's user, on
// the root filesystem (under /var/tmp: /tmp is private in a sandbox).
type attackTree struct {
	root, home, cwd, sibling, state, config string
}

// attackDaemon is a daemon in auto mode with a scripted model, run as
// `as`, in its own tree.
type attackDaemon struct {
	*daemon
	model *llmtest.Server
	tree  attackTree
	as    string
}

// unprivilegedBinary is a copy of the daemon binary every user may run,
// behind a wrapper that drops to unprivilegedUID with setpriv(1).
var unprivilegedBinary = struct {
	once sync.Once
	path string
	err  error
}{}

func wrapperAsUser(t *testing.T) string {
	t.Helper()
	u := &unprivilegedBinary
	u.once.Do(func() {
		dir, err := os.MkdirTemp("/var/tmp", "dsh-e2e-bin-")
		if err != nil {
			u.err = err
			return
		}
		if err = os.Chmod(dir, 0o755); err != nil {
			u.err = err
			return
		}
		bin := filepath.Join(dir, "dsh-acp")
		if u.err = executortest.CopyExecutable(daemonBinary(t), bin); u.err != nil {
			return
		}
		wrapper := filepath.Join(dir, "as-user")
		script := fmt.Sprintf("#!/bin/sh\nexec setpriv --reuid=%d --regid=%d --clear-groups %s \"$@\"\n", unprivilegedUID, unprivilegedUID, bin)
		u.err = os.WriteFile(wrapper, []byte(script), 0o755)
		u.path = wrapper
	})
	if u.err != nil {
		t.Fatalf("the unprivileged daemon: %v", u.err)
	}
	return u.path
}

// newAttackTree makes the tree, owned by the daemon's user.
func newAttackTree(t *testing.T, as string) attackTree {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "dsh-e2e-attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	tr := attackTree{root: root, home: home, cwd: filepath.Join(home, "project"), sibling: filepath.Join(home, "sibling"),
		state: filepath.Join(home, ".local", "state", "dsh-acp"), config: filepath.Join(home, ".config")}
	for _, d := range []string{tr.cwd, tr.sibling, tr.state, tr.config} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if as == "user" {
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		chownTree(t, home)
	}
	return tr
}

// chownTree gives dir and everything below it to the unprivileged user.
func chownTree(t *testing.T, dir string) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, unprivilegedUID, unprivilegedUID)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// forEachUser runs f as root and as an unprivileged user, in parallel.
// As a non-root tester only the "user" run happens (it is the tester).
func forEachUser(t *testing.T, f func(t *testing.T, as string)) {
	for _, as := range asUsers {
		t.Run(as, func(t *testing.T) {
			if os.Geteuid() != 0 && as == "root" {
				t.Skip("not root: the run as an ordinary user is this one's")
			}
			t.Parallel()
			f(t, as)
		})
	}
}

// startAttackDaemon starts the daemon as `as` in a fresh tree, in auto
// mode (every command runs unasked at the session's level), with args.
func startAttackDaemon(t *testing.T, as string, args []string, env ...string) *attackDaemon {
	t.Helper()
	needSandbox(t)
	tr := newAttackTree(t, as)
	model := llmtest.New(t)
	bin := daemonBinary(t)
	if as == "user" && os.Geteuid() == 0 {
		bin = wrapperAsUser(t)
	}
	env = append([]string{"HOME=" + tr.home, "XDG_CONFIG_HOME=" + tr.config, "DSH_MODE=auto", "GOCACHE=", "GOFLAGS="}, env...)
	d := startModelDaemon(t, bin, tr.state, model, args, env...)
	return &attackDaemon{daemon: d, model: model, tree: tr, as: as}
}

// run runs a typed `!command` in session sid and returns its terminal
// output.
func (a *attackDaemon) run(sid, cmd string) string {
	a.t.Helper()
	out, _ := a.direct(sid, cmd)
	return out
}

// sessionLevel opens a session at cwd and returns it and its sandbox
// option's current value.
func (a *attackDaemon) sessionLevel(cwd string) (string, string) {
	a.t.Helper()
	sid, opts := a.openSession(cwd)
	o := optionByID(opts, "sandbox")
	if o == nil {
		return sid, ""
	}
	return sid, o.CurrentValue
}

// mustNotExist fails when path exists on the host.
func mustNotExist(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s: %s exists on the host", what, path)
	}
}

// TestE2ESandboxUnprivileged: run as an ordinary user (and as root), the
// daemon offers the sandbox: the default level is workspace, and a write
// outside the workspace is refused by the kernel — with no flag and with
// --sandbox workspace. Before issue 32 the unprivileged daemon, being
// non-dumpable, could not start bubblewrap: off by default, and every
// command refused at an explicit workspace.
func TestE2ESandboxUnprivileged(t *testing.T) {
	forEachUser(t, func(t *testing.T, as string) {
		for _, args := range [][]string{nil, {"--sandbox", "workspace"}} {
			a := startAttackDaemon(t, as, args)
			sid, level := a.sessionLevel(a.tree.cwd)
			if level != "workspace" {
				t.Errorf("as %s %v: a new session's level is %q, want workspace", as, args, level)
			}
			m := acptest.NewMarker()
			out := a.run(sid, fmt.Sprintf(`touch "$HOME/out-%s" ../sibling/out-%s; touch in-%s && echo wrote-inside`, m, m, m))
			mustNotExist(t, filepath.Join(a.tree.home, "out-"+m), "a write to HOME")
			mustNotExist(t, filepath.Join(a.tree.sibling, "out-"+m), "a write to a sibling")
			if strings.Count(out, "Read-only file system") != 2 {
				t.Errorf("as %s %v: the writes outside were not refused by the kernel: %q", as, args, out)
			}
			if _, err := os.Stat(filepath.Join(a.tree.cwd, "in-"+m)); err != nil || !strings.Contains(out, "wrote-inside") {
				t.Errorf("as %s %v: the write in the workspace failed: %q (%v)", as, args, out, err)
			}
		}
	})
}

// hostGitAs runs git in dir on the host as the daemon's user would (git
// refuses a repository another user owns, which would hide a plant).
func (a *attackDaemon) hostGit(dir string, args ...string) string {
	a.t.Helper()
	argv := append([]string{"git"}, args...)
	if a.as == "user" && os.Geteuid() == 0 {
		argv = append([]string{"setpriv", fmt.Sprintf("--reuid=%d", unprivilegedUID), fmt.Sprintf("--regid=%d", unprivilegedUID), "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+a.tree.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// gitInit makes a repository with one commit in dir (before the tree is
// given to the daemon's user).
func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t",
			"GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// treeEntries lists dir's entries (relative), not below .git's top level.
func treeEntries(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." || (strings.Contains(rel, ".git/") && strings.Count(rel[strings.Index(rel, ".git/"):], "/") > 1) {
			return nil
		}
		if strings.HasSuffix(rel, ".git/index") || strings.HasSuffix(rel, ".git/ORIG_HEAD") || strings.HasSuffix(rel, ".git/COMMIT_EDITMSG") {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	return out
}

// TestE2ESandboxAttacks runs issue 32's attacks through the real daemon at
// the default level (workspace), as root and as an ordinary user, each
// judged by its effect on the host:
//   - credentials: the daemon's stored key, files where DOCKER_CONFIG and
//     GNUPGHOME point, ~/.pgpass, Cargo's, git's, Codex's, Vault's,
//     Terraform's and Azure's tokens, shell history, and variables named
//     BW_SESSION, OP_SESSION_*, MYSQL_PWD, PGPASS, an Azure connection
//     string and a Slack webhook: none reaches the client;
//   - the repository: .git renamed and copied back with a hook and
//     core.fsmonitor, .git/commondir at a planted git directory, hooks
//     created where none were, a nested repository's hooks and its parent
//     renamed, husky's hooks path: a real git status and commit on the host
//     afterwards run nothing;
//   - editor, shell and agent files (.zed, .vscode, .envrc, AGENTS.md,
//     .dsh-acp/permissions.json, .mcp.json) are not created or changed, and
//     no placeholder is left in the project;
//   - a session at cwd = $HOME: renaming ~/.config and ~/.local does not
//     uncover the daemon's stored key, gh's token or the journals in the
//     next command (the secret never reaches the client), and ~/.bashrc,
//     ~/.local/bin and dsh-acp's rule file cannot be planted;
//   - session A replacing session B's cwd (inside A's) by a symlink out:
//     B's next write does not land outside.
func TestE2ESandboxAttacks(t *testing.T) {
	forEachUser(t, func(t *testing.T, as string) {
		needSandbox(t)
		tr := newAttackTreeFiles(t, as)
		a := startAttackDaemonIn(t, as, tr, nil)
		a.attackRepository(t)
		a.attackHome(t)
		a.attackSessionCwd(t)
	})
}

// attackTree plus the files the attacks need, owned by the daemon's user.
func newAttackTreeFiles(t *testing.T, as string) attackTree {
	t.Helper()
	tr := newAttackTree(t, "root")
	gitInit(t, tr.cwd)
	lib := filepath.Join(tr.cwd, "vendor", "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	gitInit(t, lib)
	if err := os.MkdirAll(filepath.Join(tr.cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := attackSecret(tr)
	files := map[string]string{
		filepath.Join(tr.config, "dsh-acp", "credentials"): `{"version":1,"apiKey":"` + secret + `","baseURL":"http://127.0.0.1:1"}`,
		filepath.Join(tr.config, "gh", "hosts.yml"):        "oauth_token: " + secret + "\n",
		filepath.Join(tr.state, "journal-secret"):          secret + "\n",
		filepath.Join(tr.home, ".bashrc"):                  "# mine\n",
		// Credentials where their tools' variables point, and files the
		// hidden list did not name before issue 32.
		filepath.Join(tr.root, "dockercfg", "config.json"):              secret,
		filepath.Join(tr.root, "gnupg", "private-keys-v1.d", "k"):       secret,
		filepath.Join(tr.home, ".pgpass"):                               secret,
		filepath.Join(tr.home, ".cargo", "credentials.toml"):            secret,
		filepath.Join(tr.config, "git", "credentials"):                  secret,
		filepath.Join(tr.home, ".codex", "auth.json"):                   secret,
		filepath.Join(tr.home, ".vault-token"):                          secret,
		filepath.Join(tr.home, ".terraform.d", "credentials.tfrc.json"): secret,
		filepath.Join(tr.home, ".azure", "msal_token_cache.json"):       secret,
		filepath.Join(tr.home, ".bash_history"):                         secret,
		filepath.Join(tr.cwd, "AGENTS.md"):                              "be nice\n",
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if as == "user" {
		if err := os.Chmod(tr.root, 0o755); err != nil {
			t.Fatal(err)
		}
		chownTree(t, tr.root)
	}
	return tr
}

// attackSecret is the secret planted in the tree (its root's name makes it
// unique).
func attackSecret(tr attackTree) string { return "secret-" + filepath.Base(tr.root) }

// startAttackDaemonIn starts the daemon in an existing tree.
func startAttackDaemonIn(t *testing.T, as string, tr attackTree, args []string) *attackDaemon {
	t.Helper()
	model := llmtest.New(t)
	bin := daemonBinary(t)
	if as == "user" && os.Geteuid() == 0 {
		bin = wrapperAsUser(t)
	}
	secret := attackSecret(tr)
	env := []string{"HOME=" + tr.home, "XDG_CONFIG_HOME=" + tr.config, "DSH_MODE=auto", "GIT_CONFIG_NOSYSTEM=1",
		"DOCKER_CONFIG=" + filepath.Join(tr.root, "dockercfg"), "GNUPGHOME=" + filepath.Join(tr.root, "gnupg"),
		// Variables whose names say nothing of a secret.
		"BW_SESSION=" + secret, "OP_SESSION_acme=" + secret, "MYSQL_PWD=" + secret, "PGPASS=" + secret,
		"AZURE_STORAGE_CONNECTION_STRING=AccountKey=" + secret, "SLACK_WEBHOOK_URL=https://hooks.slack.invalid/" + secret}
	d := startModelDaemon(t, bin, tr.state, model, args, env...)
	return &attackDaemon{daemon: d, model: model, tree: tr, as: as}
}

func (a *attackDaemon) attackRepository(t *testing.T) {
	ws := a.tree.cwd
	a.hostGit(ws, "config", "core.hooksPath", ".husky/_")
	a.hostGit(filepath.Join(ws, "vendor", "lib"), "config", "core.hooksPath", ".git/hooks")
	before := treeEntries(t, ws)
	pwn := filepath.Join(a.tree.sibling, "pwn")
	sid, _ := a.sessionLevel(ws)
	plant := `plant() { mkdir -p "$(dirname "$1")" && printf '#!/bin/sh\ntouch ` + pwn + `\n' > "$1" && chmod +x "$1"; }
	mv .git .g; cp -a .g .git2 && mv .git2 .git; plant .git/hooks/post-commit; plant .git/hooks/pre-commit
	git config core.fsmonitor "touch ` + pwn + `"; cp -a .git evil; git config -f evil/config core.fsmonitor "touch ` + pwn + `"
	echo "$PWD/evil" > .git/commondir; rm -rf .git/hooks; plant .git/hooks/post-commit
	plant vendor/lib/.git/hooks/post-commit; mv vendor v2; plant .husky/_/pre-commit; plant .husky/_/post-commit
	for f in .zed/settings.json .vscode/tasks.json .dsh-acp/permissions.json .claude/settings.json; do mkdir -p "$(dirname $f)"; echo '{"x":1}' > $f; done
	echo evil > .envrc; echo evil >> AGENTS.md; echo evil > .mcp.json; mv AGENTS.md A.md; true`
	a.run(sid, plant)
	for _, dir := range []string{ws, filepath.Join(ws, "vendor", "lib")} {
		a.hostGit(dir, "status")
		a.hostGit(dir, "commit", "-q", "--allow-empty", "-m", "after")
	}
	if _, err := os.Stat(pwn); err == nil {
		t.Errorf("as %s: the user's git ran a plant", a.as)
	}
	// evil (a copy of .git) is an ordinary write; the rest must be as it was.
	after := slices.DeleteFunc(treeEntries(t, ws), func(e string) bool { return e == "evil" || strings.HasPrefix(e, "evil/") })
	if !slices.Equal(before, after) {
		t.Errorf("as %s: the project changed (a plant or a placeholder left):\nbefore %q\nafter  %q", a.as, before, after)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(got) != "be nice\n" {
		t.Errorf("as %s: AGENTS.md is now %q", a.as, got)
	}
}

func (a *attackDaemon) attackHome(t *testing.T) {
	home, secret := a.tree.home, attackSecret(a.tree)
	sid, _ := a.sessionLevel(home)
	a.run(sid, `mv ~/.config ~/.c; mv ~/.local ~/.l; echo evil >> ~/.bashrc; mkdir -p ~/.local/bin ~/.config/dsh-acp ~/.config/autostart
	echo evil > ~/.local/bin/git; echo '{"allow":["*"]}' > ~/.config/dsh-acp/permissions.json; echo x > ~/.config/autostart/x.desktop; true`)
	a.run(sid, `cat ~/.c/dsh-acp/credentials ~/.config/dsh-acp/credentials ~/.c/gh/hosts.yml ~/.config/gh/hosts.yml ~/.l/state/dsh-acp/journal-secret ~/.local/state/dsh-acp/journal-secret; grep -rs secret- ~; true`)
	a.run(sid, `env; cat "$DOCKER_CONFIG/config.json"; grep -rs secret- "$GNUPGHOME" ~/.pgpass ~/.cargo ~/.codex ~/.vault-token ~/.terraform.d ~/.azure ~/.bash_history; true`)
	for _, u := range a.Updates(sid) {
		if strings.Contains(string(u), secret) {
			t.Errorf("as %s: a secret reached the client: %s", a.as, u)
			break
		}
	}
	if got, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(got) != "# mine\n" {
		t.Errorf("as %s: .bashrc is now %q", a.as, got)
	}
	for _, p := range []string{".local/bin", ".config/dsh-acp/permissions.json", ".config/autostart", ".c", ".l"} {
		mustNotExist(t, filepath.Join(home, p), "as "+a.as)
	}
}

func (a *attackDaemon) attackSessionCwd(t *testing.T) {
	outer := a.tree.cwd
	inner := filepath.Join(outer, "sub")
	b, _ := a.sessionLevel(inner)
	a.run(b, "true")
	sa, _ := a.sessionLevel(outer)
	a.run(sa, "mv sub s2; ln -s "+a.tree.sibling+" sub; true")
	a.run(b, "touch planted-through-cwd; true")
	mustNotExist(t, filepath.Join(a.tree.sibling, "planted-through-cwd"), "as "+a.as+": a write through a replaced session cwd")
}
