package main

import (
	"fmt"
	"os"

	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// runReplay is `dsh-acp replay FILE|ID`: print a journaled session as a
// person would read it.
func runReplay(args []string) int {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(os.Stderr, "Usage: dsh-acp replay FILE|SESSION-ID")
		if len(args) == 1 {
			return 0
		}
		return 2
	}
	l, err := loadForReplay(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp replay:", err)
		return 1
	}
	// Settle as session/load does, so an interrupted call shows its end,
	// and draw each call with its tool's own presentation.
	l.Events = replay.Settle(l.Events)
	box := tools.NewSet(nil, tools.Config{}) // presentation only: runs nothing
	opts := replay.PrintOptions{
		Color: isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == "",
		Tool: func(name string) (replay.Presenter, bool) {
			t, ok := box.Lookup(name)
			return t, ok
		},
	}
	if err := replay.PrintWith(os.Stdout, l, opts); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp replay:", err)
		return 1
	}
	return 0
}

// loadForReplay reads a journal by path, or by session id from the state
// directory.
func loadForReplay(arg string) (*replay.Loaded, error) {
	if _, err := os.Stat(arg); err == nil {
		return replay.LoadFile(arg)
	}
	cfg, err := parseConfig("dsh-acp", nil, os.LookupEnv, os.Stderr)
	if err != nil {
		return nil, err
	}
	store, err := replay.OpenStore(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	return store.Load(arg)
}
