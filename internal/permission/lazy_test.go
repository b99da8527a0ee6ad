package permission

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// lazyChildEnv makes the test binary run TestTablesBuiltOnFirstJudgement's
// child: a fresh process, where nothing has judged anything yet.
const lazyChildEnv = "PERMISSION_LAZY_CHILD"

// Package init builds no table, allowlist or expression; the first
// judgement builds what it reads, once; a second judgement of the same
// command builds nothing more. Checked in a fresh process, since the other
// tests of this one have long built everything.
func TestTablesBuiltOnFirstJudgement(t *testing.T) {
	if os.Getenv(lazyChildEnv) == "1" {
		lazyChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTablesBuiltOnFirstJudgement$", "-test.v")
	cmd.Env = append(os.Environ(), lazyChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestTablesBuiltOnFirstJudgement") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func lazyChild(t *testing.T) {
	if n := TablesBuilt(); n != 0 {
		t.Fatalf("package init built %d tables; want none", n)
	}
	judge := func(cmd string) Decision {
		return Judge(Request{Mode: ModeAsk, Command: cmd}).Decision
	}
	if d := judge("ls -la | git log -3"); d != Allow {
		t.Fatalf("ls -la | git log -3: %v, want allow", d)
	}
	first := TablesBuilt()
	if first == 0 {
		t.Fatal("a judgement through the read-only table built nothing")
	}
	if d := judge("ls -la | git log -3"); d != Allow {
		t.Fatalf("again: %v, want allow", d)
	}
	if n := TablesBuilt(); n != first {
		t.Errorf("judging the same command again built %d more", n-first)
	}
}

// Every option allowlist of the tables parses: a malformed spec panics
// on first use, which package init no longer catches.
func TestEverySpecParses(t *testing.T) {
	specs := map[string]*optSpec{
		"awk": awkSpec, "sh": shellSpec, "git globals": gitGlobalSpec, "git config": gitConfigSpec,
		"read": readSpec, "sed": sedSpec,
	}
	for table, progs := range map[string]map[string]program{
		"read-only": readOnlyTable(), "git": gitSubs(), "pip": pipSubs(), "docker": dockerSubs(), "go": goSubs(),
	} {
		for name, p := range progs {
			if p.spec != nil {
				specs[table+": "+name] = p.spec
			}
		}
	}
	for name, w := range wrappers() {
		specs["wrapper "+name] = w.opts
	}
	for name, s := range specs {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: %v", name, r)
				}
			}()
			s.parsed()
		}()
	}
	if len(specs) < 150 {
		t.Errorf("only %d specs found", len(specs))
	}
}
