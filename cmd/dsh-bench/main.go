// Command dsh-bench measures the built dsh-acp daemon from outside, as a
// client sees it: every row drives the binary over stdio. Each figure is
// paired with a baseline that shares no project code (a minimal Go
// responder, a plain pipe read, a plain streaming JSON decode), run by run,
// alternating which goes first; a row reports the median of the per-run
// ratios (or differences) with their min and max, its target, and ok or
// MISSED. The machine may be noisy: read the paired figures.
//
//	go run ./cmd/dsh-bench [-runs N] [-only REGEXP] [-capture-bytes N] [-replay-calls N] [-latency-lines N] [-changes-files N]
//
// # Adding rows
//
// A bench is a function from the harness to rows (see bench and benches in
// benches.go). Write one in a file of its own: drive the daemon with
// h.spawn (h.env for its environment, extra KEY=value settings on top),
// measure with pair(h.runs(div), subject, baseline) — each a func returning
// one figure per run — or plain samples, turn them into rows with ratioRow
// (subject/baseline), addedRow (subject−baseline) or boundRow (an absolute
// ceiling), and list the function in benches. A baseline must share no
// project code. Give slow sizes a flag (and options field), keep the smoke
// test's sizes tiny, and add the new rows' names to its list.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
)

func main() {
	if len(os.Args) > 1 {
		if child, ok := children[os.Args[1]]; ok {
			os.Exit(child(os.Args[2:]))
		}
	}
	var o options
	flag.IntVar(&o.runs, "runs", 15, "paired runs per figure (slow rows take a third or a fifth of it, at least 3)")
	flag.Int64Var(&o.captureBytes, "capture-bytes", 1<<30, "bytes a command prints in the capture rows")
	flag.IntVar(&o.replayCalls, "replay-calls", 100000, "tool calls in the generated replay journal")
	flag.IntVar(&o.latencyLines, "latency-lines", 300, "lines a command prints in each live latency run")
	flag.IntVar(&o.changesFiles, "changes-files", 10000, "files in the big tree of the change-tracking rows")
	only := flag.String("only", "", "run only the benches whose name matches this regular expression")
	flag.Parse()
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dsh-bench: -only:", err)
			os.Exit(2)
		}
		o.only = re
	}
	rows, err := measure(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-bench:", err)
		os.Exit(1)
	}
	printTable(os.Stdout, rows, o)
}

// children are the subcommands this program runs itself as: the commands
// and baselines the benches need, free of project code.
var children = map[string]func([]string) int{
	"tick":   tickChild,
	"decode": decodeChild,
}
