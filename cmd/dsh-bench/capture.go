package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// captureReport is what the capture child prints.
type captureReport struct {
	ExecutorMBps float64 `json:"executorMBps"`
	BareMBps     float64 `json:"bareMBps"`
	RSSGrowth    int64   `json:"rssGrowth"` // bytes
}

// captureChild measures, in a fresh process, a bare pipe read of
// `head -c N /dev/zero` and the same command through the local executor,
// and the peak RSS growth during the latter.
func captureChild(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dsh-bench capture-child BYTES STATEDIR")
		return 2
	}
	n, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rep, err := measureCapture(n, args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "capture:", err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

func measureCapture(n int64, stateDir string) (captureReport, error) {
	command := fmt.Sprintf("head -c %d /dev/zero", n)
	bare, err := bareRead(command)
	if err != nil {
		return captureReport{}, err
	}
	ex, err := local.New(local.Config{StateDir: stateDir})
	if err != nil {
		return captureReport{}, err
	}
	defer ex.Shutdown(context.Background())
	cwd, _ := os.Getwd()
	spec, err := ex.Resolve(executor.Request{Command: command, SessionCwd: cwd, Owner: "bench"})
	if err != nil {
		return captureReport{}, err
	}
	before, err := selfStatus("VmRSS:")
	if err != nil {
		return captureReport{}, err
	}
	start := time.Now()
	res, err := ex.Run(context.Background(), spec, nil)
	took := time.Since(start)
	if err != nil {
		return captureReport{}, err
	}
	if res.ExitCode != 0 {
		return captureReport{}, fmt.Errorf("%s exited %d", command, res.ExitCode)
	}
	peak, err := selfStatus("VmHWM:")
	if err != nil {
		return captureReport{}, err
	}
	mb := float64(n) / 1e6
	return captureReport{
		ExecutorMBps: mb / took.Seconds(),
		BareMBps:     mb / bare.Seconds(),
		RSSGrowth:    max(0, peak-before),
	}, nil
}

// bareRead is the baseline: the command's stdout read from a pipe and
// discarded.
func bareRead(command string) (time.Duration, error) {
	cmd := exec.Command("bash", "-c", command)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if _, err := io.Copy(io.Discard, out); err != nil {
		return 0, err
	}
	if err := cmd.Wait(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func selfStatus(field string) (int64, error) { return procStatus("/proc/self/status", field) }
