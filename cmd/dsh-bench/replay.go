package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/dsh-acp/dsh-acp/replay"
)

// replayRows: session/load of a generated journal (replay.GenerateJournal)
// through the daemon, against a plain streaming decode of the same file
// (each line json.Unmarshal-ed into a map[string]any, in a child process
// of its own); the daemon's peak RSS; and the time to the first update.
func replayRows(h *harness) ([]row, error) {
	calls := h.opt.replayCalls
	id, path, err := generateJournal(h, calls)
	if err != nil {
		return nil, err
	}
	var peak, basePeak, first samples
	daemon := func() (float64, error) {
		took, firstAt, hwm, err := daemonLoad(h, id)
		peak = append(peak, float64(hwm)/(1<<20))
		first = append(first, ms(firstAt))
		return ms(took), err
	}
	decode := func() (float64, error) {
		took, hwm, err := childDecode(h.self, path)
		basePeak = append(basePeak, float64(hwm)/(1<<20))
		return ms(took), err
	}
	p, err := pair(h.runs(5), daemon, decode)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("replay %d calls", calls)
	peakRow := boundRow(name+": peak RSS", "MiB", peak, 48)
	peakRow.baseline = basePeak
	return []row{
		ratioRow(name+" (session/load → reply)", "ms", p, 1.2, false),
		peakRow,
		boundRow(name+": first replayed update", "ms", first, 10),
	}, nil
}

// generateJournal writes a journal of calls tool calls into the daemon's
// state directory and returns its session id and path.
func generateJournal(h *harness, calls int) (string, string, error) {
	store, err := replay.OpenStore(h.work + "/state")
	if err != nil {
		return "", "", err
	}
	defer store.Close()
	id := replay.NewSessionID()
	path, err := store.Path(id)
	if err != nil {
		return "", "", err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	if err := replay.GenerateJournal(w, calls, id, h.work); err != nil {
		return "", "", err
	}
	if err := w.Flush(); err != nil {
		return "", "", err
	}
	return id, path, f.Close()
}

// daemonLoad times session/load → reply in a fresh daemon and returns the
// time to the first update and the daemon's peak RSS.
func daemonLoad(h *harness, id string) (took, first time.Duration, hwm int64, err error) {
	a, err := h.spawn()
	if err != nil {
		return 0, 0, 0, err
	}
	defer a.close()
	if err := a.initialize(); err != nil {
		return 0, 0, 0, err
	}
	var firstAt time.Time
	start := time.Now()
	_, err = a.call("session/load", map[string]any{"sessionId": id, "cwd": h.work, "mcpServers": []any{}}, func([]byte) {
		if firstAt.IsZero() {
			firstAt = time.Now()
		}
	})
	took = time.Since(start)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("session/load: %w", err)
	}
	if firstAt.IsZero() {
		return 0, 0, 0, fmt.Errorf("session/load drew nothing")
	}
	hwm, err = peakRSS(a.cmd.Process.Pid)
	return took, firstAt.Sub(start), hwm, err
}

// decodeReport is what `dsh-bench decode` prints.
type decodeReport struct {
	Ms    float64 `json:"ms"`
	Peak  int64   `json:"peak"` // bytes
	Lines int     `json:"lines"`
}

func childDecode(self, path string) (time.Duration, int64, error) {
	out, err := exec.Command(self, "decode", path).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("decode child: %w", err)
	}
	var r decodeReport
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, 0, fmt.Errorf("decode child said %q: %w", out, err)
	}
	return time.Duration(r.Ms * float64(time.Millisecond)), r.Peak, nil
}

// decodeChild is `dsh-bench decode FILE`, the replay baseline: a plain
// streaming decode of a JSONL file, each line into a map[string]any. It
// prints its time and peak RSS.
func decodeChild(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: dsh-bench decode FILE")
		return 2
	}
	start := time.Now()
	f, err := os.Open(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 256<<10), 64<<20+1)
	lines := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "line", lines+1, err)
			return 1
		}
		lines++
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	took := time.Since(start)
	peak, err := procStatus("/proc/self/status", "VmHWM:")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(decodeReport{Ms: ms(took), Peak: peak, Lines: lines})
	return 0
}
