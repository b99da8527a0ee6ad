package sandboxlevel

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executorfake"
)

func TestOffer(t *testing.T) {
	why := fmt.Errorf("%w: bubblewrap (bwrap) not found", executor.ErrSandbox)
	tests := []struct {
		name     string
		offered  []executor.Level
		def      executor.Level
		why      error
		explicit executor.Level
		start    executor.Level
		levels   []executor.Level
	}{
		{"auto with bubblewrap", nil, executor.LevelWorkspace, nil, "", executor.LevelWorkspace, executor.AllLevels()},
		{"auto without", []executor.Level{executor.LevelOff}, executor.LevelOff, why, "", executor.LevelOff, []executor.Level{executor.LevelOff}},
		{"explicit without", []executor.Level{executor.LevelOff}, executor.LevelReadOnly, why, executor.LevelReadOnly, executor.LevelReadOnly, []executor.Level{executor.LevelOff}},
		{"offered out of order", []executor.Level{executor.LevelOff, executor.LevelReadOnly}, executor.LevelReadOnly, nil, "", executor.LevelReadOnly, []executor.Level{executor.LevelReadOnly, executor.LevelOff}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := executorfake.New()
			ex.LevelsOffered, ex.Default, ex.Why = tc.offered, tc.def, tc.why
			sb := New(ex, tc.explicit)
			if sb.Start() != tc.start || sb.Explicit() != (tc.explicit != "") || !slices.Equal(sb.Levels(), tc.levels) || sb.Unavailable() != tc.why {
				t.Errorf("sandboxes %+v levels %v unavailable %v", sb, sb.Levels(), sb.Unavailable())
			}
		})
	}
	// An executor that does not confine offers off alone and says so.
	sb := New(notConfining{executorfake.New()}, "")
	if sb.Start() != executor.LevelOff || !slices.Equal(sb.Levels(), []executor.Level{executor.LevelOff}) || sb.Unavailable() == nil {
		t.Errorf("not confining: %+v %v %v", sb, sb.Levels(), sb.Unavailable())
	}
	if got := Unsandboxed(why); !strings.Contains(got, "without a sandbox") || !strings.Contains(got, ": bubblewrap (bwrap) not found.") || strings.Contains(got, "sandbox unavailable") {
		t.Errorf("unsandboxed text %q", got)
	}
}

// notConfining hides the fake's Confiner methods.
type notConfining struct{ executor.Executor }

// The option offers the levels the executor can build, and the current
// one even when it cannot.
func TestOption(t *testing.T) {
	values := func(current executor.Level, offered []executor.Level) []string {
		o := Option(current, offered)
		if o.Select == nil || o.Select.Id != ConfigID || string(o.Select.CurrentValue) != string(current) {
			t.Fatalf("option %+v", o)
		}
		var v []string
		for _, opt := range *o.Select.Options.Ungrouped {
			v = append(v, string(opt.Value))
		}
		return v
	}
	if got := values(executor.LevelWorkspace, executor.AllLevels()); strings.Join(got, ",") != "read-only,workspace,workspace-network,off" {
		t.Errorf("all levels: %v", got)
	}
	if got := values(executor.LevelWorkspace, []executor.Level{executor.LevelOff}); strings.Join(got, ",") != "workspace,off" {
		t.Errorf("an explicit level that cannot be built: %v", got)
	}
}

// The texts speak of the executor in use: a local reason gives this
// machine's advice, a remote one names the host, what it lacks and its
// fix, and an error without a reason gets neutral advice.
func TestTextsPerExecutor(t *testing.T) {
	notFound := fmt.Errorf("%w: bubblewrap (bwrap) not found: exec: \"bwrap\": executable file not found in $PATH", executor.ErrSandbox)
	local := &executor.SandboxReason{Missing: "bwrap", Fix: "Install what is missing (Debian/Ubuntu: apt install bubblewrap util-linux) and restart the agent; see docs/security.md.", Err: notFound}
	remote := &executor.SandboxReason{Host: "build.example", Missing: "bwrap", Fix: "Install bubblewrap on build.example (Debian/Ubuntu: apt install bubblewrap), then restart the agent.",
		Err: fmt.Errorf("%w: the host has no bwrap on its PATH", executor.ErrSandbox)}
	off := []executor.Level{executor.LevelOff}
	for _, tc := range []struct {
		name      string
		why       error
		want, not []string
	}{
		{"local", local, []string{"cannot be built here: bubblewrap (bwrap) not found", "apt install bubblewrap util-linux"}, []string{"host"}},
		{"remote", remote, []string{"on the host build.example: the host has no bwrap on its PATH",
			"Install bubblewrap on build.example"}, []string{"built here", "util-linux"}},
		{"no reason", notFound, []string{"cannot be built here: bubblewrap (bwrap) not found"}, []string{"apt install", "host"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			texts := map[string]string{
				"/sandbox": Text(executor.LevelWorkspace, off, tc.why),
				"refusal":  Refused(executor.LevelWorkspace, tc.why, off),
			}
			for what, got := range texts {
				for _, w := range tc.want {
					if !strings.Contains(got, w) {
						t.Errorf("%s %q lacks %q", what, got, w)
					}
				}
				for _, n := range tc.not {
					if strings.Contains(got, n) {
						t.Errorf("%s %q says %q", what, got, n)
					}
				}
			}
		})
	}
	if got := Unsandboxed(remote); !strings.HasPrefix(got, "Commands in this session run on build.example without a sandbox") ||
		!strings.Contains(got, "the host has no bwrap on its PATH") || !strings.Contains(got, "Install bubblewrap on build.example") || strings.Contains(got, "your own access") {
		t.Errorf("remote notice %q", got)
	}
	if got := Unsandboxed(local); !strings.Contains(got, "with your own access") || !strings.Contains(got, "apt install bubblewrap util-linux") {
		t.Errorf("local notice %q", got)
	}
	if got := Unsandboxed(notFound); !strings.Contains(got, "See docs/security.md") || strings.Contains(got, "apt install") {
		t.Errorf("notice without a reason %q", got)
	}
}
