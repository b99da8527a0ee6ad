package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/dsh-acp/dsh-acp/replay"
)

// startupRows: spawn → initialize reply, against a minimal Go binary; and
// peak RSS after initialize + session/new.
func startupRows(work, bin string, env []string, runs int) ([]row, error) {
	minimal, err := buildPackage(work, "minimal", "./cmd/dsh-bench/minimal")
	if err != nil {
		return nil, fmt.Errorf("build the minimal agent: %w", err)
	}
	floor, err := buildPackage(work, "floor", "./cmd/dsh-bench/floor")
	if err != nil {
		return nil, fmt.Errorf("build the floor agent: %w", err)
	}
	var subject, base, floors, rss samples
	for i := 0; i < runs; i++ {
		for _, m := range []struct {
			bin  string
			into *samples
		}{{minimal, &base}, {floor, &floors}, {bin, &subject}} {
			d, err := timeInitialize(m.bin, env)
			if err != nil {
				return nil, fmt.Errorf("start-up of %s: %w", filepath.Base(m.bin), err)
			}
			*m.into = append(*m.into, ms(d))
		}
	}
	for i := 0; i < max(3, runs/3); i++ {
		r, err := sessionRSS(bin, env, work)
		if err != nil {
			return nil, err
		}
		rss = append(rss, float64(r)/(1<<20))
	}
	ratio := subject.median() / base.median()
	return []row{
		{name: "start-up (spawn → initialize reply)", subject: subject, baseline: base, unit: "ms",
			ratio: ratio, target: "≤ 2×", ok: ratio <= 2},
		{name: "  reference: minimal agent + dsh-acp's libraries", subject: floors, baseline: base, unit: "ms",
			ratio: floors.median() / base.median(), target: "(floor)", ok: true},
		{name: "peak RSS after initialize + session/new", subject: rss, unit: "MiB",
			target: "≤ 20 MB", ok: rss.median() <= 20e6/(1<<20)},
	}, nil
}

// timeInitialize measures spawn → initialize reply, then lets the agent exit.
func timeInitialize(bin string, env []string) (time.Duration, error) {
	start := time.Now()
	a, err := spawn(bin, env)
	if err != nil {
		return 0, err
	}
	if err := a.initialize(); err != nil {
		a.close()
		return 0, err
	}
	d := time.Since(start)
	a.close()
	return d, nil
}

func sessionRSS(bin string, env []string, cwd string) (int64, error) {
	a, err := spawn(bin, env)
	if err != nil {
		return 0, err
	}
	defer a.close()
	if err := a.initialize(); err != nil {
		return 0, err
	}
	if _, err := a.newSession(cwd); err != nil {
		return 0, err
	}
	return peakRSS(a.cmd.Process.Pid)
}

// callRows: a `!true` prompt → its reply (after the final card), against
// bare `bash -c true` via os/exec.
func callRows(bin string, env []string, cwd string, runs int) ([]row, error) {
	a, err := spawn(bin, env)
	if err != nil {
		return nil, err
	}
	defer a.close()
	if err := a.initialize(); err != nil {
		return nil, err
	}
	sid, err := a.newSession(cwd)
	if err != nil {
		return nil, err
	}
	var subject, base samples
	prompt := map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "!true"}}}
	for i := 0; i < runs; i++ {
		start := time.Now()
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			return nil, err
		}
		base = append(base, ms(time.Since(start)))

		start = time.Now()
		finals := 0
		if _, err := a.call("session/prompt", prompt, func(line []byte) {
			if bytes.Contains(line, []byte(`"terminal_exit"`)) {
				finals++
			}
		}); err != nil {
			return nil, err
		}
		subject = append(subject, ms(time.Since(start)))
		if finals != 1 {
			return nil, fmt.Errorf("!true produced %d final cards, want 1", finals)
		}
	}
	ratio := subject.median() / base.median()
	return []row{{name: "foreground call (!true → final card)", subject: subject, baseline: base, unit: "ms",
		ratio: ratio, target: "≤ 1.5×", ok: ratio <= 1.5}}, nil
}

// captureRows runs the capture measurement in a child process (so its RSS
// is its own): a command printing captureBytes through the executor, against
// a bare pipe read of the same command.
func captureRows(work string, captureBytes int64, runs int) ([]row, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var subject, base, growth samples
	for i := 0; i < runs; i++ {
		out, err := exec.Command(self, "capture-child", fmt.Sprint(captureBytes), filepath.Join(work, "capture-state")).Output()
		if err != nil {
			return nil, fmt.Errorf("capture child: %w", err)
		}
		var r captureReport
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, fmt.Errorf("capture child said %q: %w", out, err)
		}
		subject = append(subject, r.ExecutorMBps)
		base = append(base, r.BareMBps)
		growth = append(growth, float64(r.RSSGrowth)/(1<<20))
	}
	ratio := subject.median() / base.median()
	return []row{
		{name: fmt.Sprintf("capture throughput (head -c %d)", captureBytes), subject: subject, baseline: base, unit: "MB/s",
			ratio: ratio, target: "≥ 0.75×", ok: ratio >= 0.75},
		{name: "RSS growth while capturing", subject: growth, unit: "MiB", target: "≤ 16 MiB", ok: growth.median() <= 16},
	}, nil
}

// replayRows: session/load of a generated journal, against reading and
// decoding that journal in-process; and time to the first replayed update.
func replayRows(work, bin string, env []string, calls, runs int) ([]row, error) {
	state := filepath.Join(work, "state")
	store, err := replay.OpenStore(state)
	if err != nil {
		return nil, err
	}
	id := replay.NewSessionID()
	path, err := store.Path(id)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(f)
	if err := replay.GenerateJournal(w, calls, id, work); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	f.Close()

	var subject, base, first samples
	for i := 0; i < runs; i++ {
		start := time.Now()
		l, err := replay.LoadFile(path)
		if err != nil {
			return nil, err
		}
		base = append(base, ms(time.Since(start)))
		if len(l.Events) == 0 {
			return nil, fmt.Errorf("generated journal decoded to nothing")
		}

		a, err := spawn(bin, env)
		if err != nil {
			return nil, err
		}
		if err := a.initialize(); err != nil {
			return nil, err
		}
		var firstAt time.Time
		start = time.Now()
		_, err = a.call("session/load", map[string]any{"sessionId": id, "cwd": work, "mcpServers": []any{}}, func([]byte) {
			if firstAt.IsZero() {
				firstAt = time.Now()
			}
		})
		subject = append(subject, ms(time.Since(start)))
		first = append(first, ms(firstAt.Sub(start)))
		a.close()
		if err != nil {
			return nil, fmt.Errorf("session/load: %w", err)
		}
	}
	ratio := subject.median() / base.median()
	return []row{
		{name: fmt.Sprintf("replay %d calls (session/load → reply)", calls), subject: subject, baseline: base, unit: "ms",
			ratio: ratio, target: "≤ 1.5×", ok: ratio <= 1.5},
		{name: "time to first replayed update", subject: first, unit: "ms", target: "a few ms", ok: first.median() <= 10},
	}, nil
}

// shutdownRows: stdin EOF → exit while `sleep 600` runs, against EOF → exit
// of an idle daemon.
func shutdownRows(bin string, env []string, cwd string, runs int) ([]row, error) {
	var subject, base samples
	for i := 0; i < runs; i++ {
		d, err := timeShutdown(bin, env, cwd, false)
		if err != nil {
			return nil, err
		}
		base = append(base, ms(d))
		d, err = timeShutdown(bin, env, cwd, true)
		if err != nil {
			return nil, err
		}
		subject = append(subject, ms(d))
	}
	return []row{{name: "shutdown (stdin EOF → exit, sleep 600 running)", subject: subject, baseline: base, unit: "ms",
		ratio: subject.median() / base.median(), target: "≤ 100 ms", ok: subject.median() <= 100}}, nil
}

func timeShutdown(bin string, env []string, cwd string, busy bool) (time.Duration, error) {
	a, err := spawn(bin, env)
	if err != nil {
		return 0, err
	}
	if err := a.initialize(); err != nil {
		return 0, err
	}
	sid, err := a.newSession(cwd)
	if err != nil {
		return 0, err
	}
	if busy {
		id, err := a.send("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "!sleep 600"}}})
		if err != nil {
			return 0, err
		}
		if err := a.waitCardOpen(id); err != nil {
			return 0, err
		}
	}
	d, err := a.close()
	if err != nil {
		return 0, fmt.Errorf("dsh-acp exit: %w", err)
	}
	return d, nil
}

// waitCardOpen reads until the first tool_call update of the prompt id.
func (a *agentProc) waitCardOpen(id int) error {
	for {
		line, err := a.readLine()
		if err != nil {
			return err
		}
		if bytes.Contains(line, []byte(`"sessionUpdate":"tool_call"`)) {
			return nil
		}
	}
}
