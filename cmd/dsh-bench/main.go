// Command dsh-bench measures dsh-acp against baselines taken in the same
// run and prints a table of ratios and absolute figures (min/median/max over
// repeated runs). The machine may be noisy: read the ratios.
//
//	go run ./cmd/dsh-bench [-runs N] [-capture-bytes N] [-replay-calls N]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "capture-child" {
		os.Exit(captureChild(os.Args[2:]))
	}
	runs := flag.Int("runs", 15, "repetitions per figure")
	captureBytes := flag.Int64("capture-bytes", 1<<30, "bytes a command prints in the capture row")
	replayCalls := flag.Int("replay-calls", 10000, "tool calls in the generated replay journal")
	flag.Parse()
	if err := run(*runs, *captureBytes, *replayCalls); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-bench:", err)
		os.Exit(1)
	}
}

// row is one line of the table.
type row struct {
	name     string
	subject  samples // dsh-acp
	baseline samples
	unit     string
	// ratio is subject/baseline on medians, or baseline/subject for
	// throughput; target describes the goal.
	ratio  float64
	target string
	ok     bool
	extra  string
}

type samples []float64

func (s samples) sorted() samples {
	c := append(samples(nil), s...)
	sort.Float64s(c)
	return c
}

func (s samples) median() float64 {
	c := s.sorted()
	if len(c) == 0 {
		return 0
	}
	return c[len(c)/2]
}

func (s samples) String() string {
	c := s.sorted()
	if len(c) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f", c[0], c.median(), c[len(c)-1])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func run(runs int, captureBytes int64, replayCalls int) error {
	rows, err := measure(runs, captureBytes, replayCalls)
	if err != nil {
		return err
	}
	printTable(os.Stdout, rows, runs)
	return nil
}

// measure builds the binaries and takes every figure.
func measure(runs int, captureBytes int64, replayCalls int) ([]row, error) {
	work, err := os.MkdirTemp("", "dsh-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	bin, err := buildAgent(work)
	if err != nil {
		return nil, err
	}
	env := benchEnv(work)
	var rows []row
	steps := []func() ([]row, error){
		func() ([]row, error) { return startupRows(work, bin, env, runs) },
		func() ([]row, error) { return callRows(bin, env, work, runs*4) },
		func() ([]row, error) { return captureRows(work, captureBytes, max(3, runs/5)) },
		func() ([]row, error) { return replayRows(work, bin, env, replayCalls, max(3, runs/3)) },
		func() ([]row, error) { return shutdownRows(bin, env, work, runs) },
	}
	for _, step := range steps {
		r, err := step()
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// buildAgent compiles ./cmd/dsh-acp once, as a user would run it.
func buildAgent(work string) (string, error) {
	bin, err := buildPackage(work, "dsh-acp", "./cmd/dsh-acp")
	if err != nil {
		return "", fmt.Errorf("build dsh-acp (run from the repository root): %w", err)
	}
	return bin, nil
}

// buildPackage compiles a main package of this module into work/name.
func buildPackage(work, name, pkg string) (string, error) {
	bin := filepath.Join(work, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return bin, cmd.Run()
}

// benchEnv gives the agent a private state directory and no model (not
// even a key stored by dsh-acp login: its config directory is private too).
func benchEnv(work string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DSH_") || strings.HasPrefix(kv, "DEEPSEEK_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DSH_STATE_DIR="+filepath.Join(work, "state"), "XDG_CONFIG_HOME="+filepath.Join(work, "config"), "DSH_LOG_LEVEL=error")
}

func printTable(w io.Writer, rows []row, runs int) {
	fmt.Fprintf(w, "dsh-acp benchmark (%d runs per figure; min / median / max)\n\n", runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tdsh-acp\tbaseline\tunit\tratio\ttarget\t")
	fmt.Fprintln(tw, "------\t-------\t--------\t----\t-----\t------\t")
	for _, r := range rows {
		verdict := "ok"
		if !r.ok {
			verdict = "MISSED"
		}
		ratio := "-"
		if r.ratio != 0 {
			ratio = fmt.Sprintf("%.2f×", r.ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s %s\t\n", r.name, r.subject, r.baseline, r.unit, ratio, r.target, verdict)
	}
	tw.Flush()
	for _, r := range rows {
		if r.extra != "" {
			fmt.Fprintf(w, "\n%s: %s", r.name, r.extra)
		}
	}
	fmt.Fprintln(w)
}
