package acp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// Issue 31's end-to-end tests through the real binary: a spill directory
// someone else could control is refused (items 2 and 3), and a full disk
// does not rewrite history (item 1).

// printALot makes the model run a command whose output passes the spill
// threshold and returns what the model read of it.
func printALot(t *testing.T, d *daemon, model *llmtest.Server, sid string) string {
	t.Helper()
	model.Push(
		llmtest.Calls(llmtest.Call{ID: "call_1", Name: "bash", Args: `{"command":"head -c 300000 /dev/zero | tr '\\0' x; echo","description":"Print a lot"}`}),
		llmtest.Reply("done"),
	)
	d.promptExpect(sid, "print a lot", "end_turn")
	return toolResultOf(t, model, "call_1")
}

// A symlinked, foreign-owned or world-writable spill directory is refused:
// the command still runs, the model reads the contract's marker with
// "(unavailable)" and the reason on the next line, the log says why, and
// nothing is written into the hostile directory.
func TestE2EHostileSpillDirIsRefused(t *testing.T) {
	tests := []struct {
		name, reason string
		plant        func(t *testing.T, spill string) (watch string)
	}{
		{"symlinked", "is a symlink", func(t *testing.T, spill string) string {
			target := t.TempDir()
			if err := os.Symlink(target, spill); err != nil {
				t.Fatal(err)
			}
			return target
		}},
		{"foreign-owned", "is owned by uid 65534", func(t *testing.T, spill string) string {
			if os.Geteuid() != 0 {
				skipOrFail(t, "needs root to give the spill directory to another user")
			}
			if err := os.Mkdir(spill, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(spill, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return spill
		}},
		{"world-writable", "is writable by its group or others (mode 0777)", func(t *testing.T, spill string) string {
			if err := os.Mkdir(spill, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(spill, 0o777); err != nil {
				t.Fatal(err)
			}
			return spill
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			spill := filepath.Join(state, "spill")
			watch := tc.plant(t, spill)
			model := llmtest.New(t)
			d := startModelDaemon(t, daemonBinary(t), state, model, nil)
			sid := d.newSessionOnly(t.TempDir())
			got := printALot(t, d, model, sid)
			if !strings.Contains(got, "\nxxxxxxxx") {
				t.Errorf("the command did not run: %q", got[:min(len(got), 200)])
			}
			// The marker ends the output; the reason is the last line.
			marker := "xxxx\n[output truncated; full output: (unavailable)]\n"
			reason := "[the full output could not be saved: unsafe spill directory: " + spill + " " + tc.reason
			last := got[strings.LastIndex(got, "\n")+1:]
			if !strings.Contains(got, marker) || !strings.HasPrefix(last, reason) || !strings.HasSuffix(last, "]") {
				t.Errorf("the model's text ends %q, want the contract's marker, then %q…]", got[max(0, len(got)-len(marker)-len(reason)-20):], reason)
			}
			d.closeAndWait()
			if log := d.Stderr(); !strings.Contains(log, "spill directory refused") || !strings.Contains(log, tc.reason) {
				t.Errorf("the log does not say why the spill directory was refused")
			}
			if entries, _ := os.ReadDir(watch); len(entries) != 0 {
				t.Errorf("wrote into the hostile directory: %v", entries)
			}
		})
	}
}

// A large command completes while the state directory's disk is full, and
// the disk stays full through a restart: its result was written compact,
// so the reload shows the call completed with its exit status (not
// "interrupted"), its card output cut behind a line saying so; the user was
// told, once, that the session could not be saved whole.
func TestE2EFullDiskResultSurvivesRestart(t *testing.T) {
	state := acptest.MountTmpfs(t, "2m")
	bin := daemonBinary(t)
	d := startModelDaemon(t, bin, state, llmtest.New(t), nil)
	cwd := t.TempDir()
	sid := d.newSessionOnly(cwd)
	d.promptExpect(sid, "!echo hello", "end_turn")
	// The journal holds disk space back for compact records (a file in
	// sessions/); fill the disk once it is there, when the binary makes one.
	reserve := filepath.Join(state, "sessions", ".reserve")
	if os.Getenv(binaryEnv) == "" {
		eventually.True(t, 10*time.Second, func() bool { _, err := os.Stat(reserve); return err == nil }, "no reserve file")
	}
	acptest.FillDisk(t, filepath.Join(state, "filler"))
	d.promptExpect(sid, "!head -c 300000 /dev/zero | tr '\\0' x; echo; echo done; exit 3", "end_turn")
	if n := d.count(sid, "agent_message_chunk", "cannot be saved right now (no space left on device)"); n != 1 {
		t.Errorf("the user was told %d times that the session is not saved, want once", n)
	}
	d.closeAndWait()

	d2 := startModelDaemon(t, bin, state, llmtest.New(t), nil)
	raw, err := d2.loadSession(sid, cwd)
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	if strings.Contains(rawText(raw), "interrupted") {
		t.Error("a call that completed replays as interrupted")
	}
	var big *card
	for _, c := range cards(decodeUpdates(t, raw)) {
		if strings.HasPrefix(c.open.Title, "head -c 300000") {
			big = c
		}
	}
	if big == nil || big.final == nil {
		t.Fatalf("the big call does not replay as ended: %+v", big)
	}
	var exit *int
	for _, u := range big.updates {
		if u.Meta.Exit != nil {
			exit = u.Meta.Exit.ExitCode
		}
	}
	if exit == nil || *exit != 3 {
		t.Errorf("the big call replays without its exit code 3: %v", exit)
	}
	output := strings.Join(big.outputs, "")
	if !strings.HasSuffix(output, "done\n") || !strings.Contains(output, "bytes of this text were not saved (no space left on device)") {
		t.Errorf("the replayed card output does not end as the call did behind the not-saved line: %.200q…%q", output, output[max(0, len(output)-40):])
	}
}

// A torn last journal line (a crash mid-write) is cut when the session is
// loaded again, and the log says how many bytes were cut (issue 31 item 5:
// main did this already; this holds it).
func TestE2ETornLineIsCutAndLogged(t *testing.T) {
	state := t.TempDir()
	bin := daemonBinary(t)
	d := startModelDaemon(t, bin, state, llmtest.New(t), nil)
	cwd := t.TempDir()
	sid := d.newSessionOnly(cwd)
	d.promptExpect(sid, "!echo hello", "end_turn")
	d.closeAndWait()
	const torn = `{"v":2,"seq":9,"type":"user_prompt","text":"torn`
	f, err := os.OpenFile(d.journalFilePath(sid), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()
	d2 := startModelDaemon(t, bin, state, llmtest.New(t), nil)
	if _, err := d2.loadSession(sid, cwd); err != nil {
		t.Fatal(err)
	}
	d2.closeAndWait()
	if b, _ := os.ReadFile(d.journalFilePath(sid)); strings.Contains(string(b), `"text":"torn`) {
		t.Error("the torn line is still in the journal")
	}
	want := fmt.Sprintf(`"msg":"journal: cut a torn last record","session":%q,"bytes":%d`, sid, len(torn))
	if !strings.Contains(d2.Stderr(), want) {
		t.Errorf("the log does not say the torn line was cut and how long it was (%s)", want)
	}
}
