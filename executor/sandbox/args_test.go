package sandbox

import (
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
)

// index returns the position of the option opt followed by its arguments.
func index(a []string, opt ...string) int {
	for i := range a {
		if i+len(opt) <= len(a) && slices.Equal(a[i:i+len(opt)], opt) {
			return i
		}
	}
	return -1
}

func TestArgs(t *testing.T) {
	base := plan{
		Workspace: "/tmp/ws", Workdir: "/tmp/ws/sub", Home: "/home/u", Scratch: []string{"/home/u/.cache"},
		Hidden:    []hidden{{Path: "/home/u/.ssh", Dir: true}, {Path: "/home/u/.netrc"}},
		Protected: []string{"/tmp/ws/.git/hooks"}, StateDir: "/home/u/.local/state/dsh-acp",
		SpillDir: "/home/u/.local/state/dsh-acp/spill/o-s1", Resolv: "/run/resolv.conf", InfoFD: 4, GateFD: 5,
		Argv: []string{"bash", "-c", "true"},
	}
	tests := []struct {
		level    executor.Level
		ws       []string // the workspace mount
		net      bool
		resolvOK bool
	}{
		{executor.LevelReadOnly, []string{"--ro-bind", "/tmp/ws", "/tmp/ws"}, false, false},
		{executor.LevelWorkspace, []string{"--bind", "/tmp/ws", "/tmp/ws"}, false, false},
		{executor.LevelWorkspaceNetwork, []string{"--bind", "/tmp/ws", "/tmp/ws"}, true, true},
	}
	for _, tc := range tests {
		p := base
		p.Level = tc.level
		a := args(p)
		must := func(opt ...string) int {
			t.Helper()
			i := index(a, opt...)
			if i < 0 {
				t.Fatalf("%s: no %q in %q", tc.level, opt, a)
			}
			return i
		}
		tmp, ws := must("--tmpfs", "/tmp"), must(tc.ws...)
		ssh, state, spill := must("--tmpfs", "/home/u/.ssh", "--remount-ro", "/home/u/.ssh"), must("--tmpfs", p.StateDir), must("--ro-bind", p.SpillDir, p.SpillDir)
		must("--ro-bind", "/dev/null", "/home/u/.netrc")
		hooks := must("--ro-bind", "/tmp/ws/.git/hooks", "/tmp/ws/.git/hooks")
		if !(must("--ro-bind", "/", "/") < tmp && tmp < ws && ws < ssh && ws < hooks && hooks < ssh && state < spill) {
			t.Errorf("%s: mounts out of order: %q", tc.level, a)
		}
		for _, opt := range []string{"--die-with-parent", "--unshare-pid", "--unshare-user", "--disable-userns", "--proc", "--dev"} {
			must(opt)
		}
		if got := index(a, "--unshare-net") < 0; got != tc.net {
			t.Errorf("%s: network %v, want %v", tc.level, got, tc.net)
		}
		if got := index(a, "--ro-bind", p.Resolv, p.Resolv) >= 0; got != tc.resolvOK {
			t.Errorf("%s: resolv.conf shown %v, want %v", tc.level, got, tc.resolvOK)
		}
		must("--chdir", "/tmp/ws/sub")
		must("--info-fd", "4")
		must("--seccomp", "5")
		if tail := a[len(a)-4:]; !slices.Equal(tail, []string{"--", "bash", "-c", "true"}) {
			t.Errorf("%s: command at the end %q", tc.level, tail)
		}
	}
	if i := index(args(base), "--ro-bind", "/home/u", "/home/u"); i >= 0 {
		t.Errorf("a home outside /tmp and /run is bound again (the bind of / shows it read-only): %q", args(base))
	}
	p := base
	p.Home = "/tmp/home"
	if index(args(p), "--ro-bind", "/tmp/home", "/tmp/home") < 0 {
		t.Errorf("a home under /tmp is not shown: %q", args(p))
	}
	p = base
	p.Level, p.Workspace = executor.LevelWorkspace, "/"
	a := strings.Join(args(p), " ")
	if !strings.Contains(a, "--bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run") {
		t.Errorf("workspace /: the system mounts must come back after the bind: %s", a)
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false}, {"/x", "/", true}, {"/", "/a", false},
	} {
		if got := within(tc.path, tc.dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v", tc.path, tc.dir, got)
		}
	}
}

// FuzzArgs: whatever the (absolute) paths, bwrap sees the command only
// after the first "--", and every option argument before it is a path or a
// known value, never an option of its own.
func FuzzArgs(f *testing.F) {
	f.Add("/tmp/ws", "/tmp/ws/sub", "/home/u", "echo hi")
	f.Add("/", "/--x", "/home/--bind", "-- --ro-bind / /")
	f.Fuzz(func(t *testing.T, ws, wd, home, script string) {
		if !strings.HasPrefix(ws, "/") || !strings.HasPrefix(wd, "/") || !strings.HasPrefix(home, "/") {
			t.Skip()
		}
		for _, level := range []executor.Level{executor.LevelReadOnly, executor.LevelWorkspace, executor.LevelWorkspaceNetwork} {
			argv := []string{"bash", "-c", script}
			a := args(plan{Level: level, Workspace: ws, Workdir: wd, Home: home, Hidden: []hidden{{Path: home + "/.ssh", Dir: true}}, InfoFD: 4, Argv: argv})
			sep := slices.Index(a, "--")
			if sep < 0 || !slices.Equal(a[sep+1:], argv) {
				t.Fatalf("the command is not alone after the first --: %q", a)
			}
			for i := 0; i < sep; i++ {
				if strings.HasPrefix(a[i], "--") {
					continue // an option; its arguments follow
				}
				if !strings.HasPrefix(a[i], "/") && a[i] != "ALL" && a[i] != "4" {
					t.Fatalf("argument %q at %d is neither a path nor a known value: %q", a[i], i, a)
				}
			}
		}
	})
}
