package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-acp/dsh-acp/replay"
)

// storedSession is a journaled session and the state directory holding it.
type storedSession struct {
	replay.Summary
	stateDir string
	from     string // "chat" or "editor"
}

// sessionDirs are the state directories sessions live in: the chat's own
// and the one an editor's daemon uses.
func sessionDirs(stateDir string) []struct{ dir, from string } {
	return []struct{ dir, from string }{{chatStateDir(stateDir), "chat"}, {stateDir, "editor"}}
}

// listSessions lists every session of both state directories, most
// recently updated first; cwd, when set, keeps those of that directory. A
// state directory without sessions lists none (nothing is created).
func listSessions(stateDir, cwd string) ([]storedSession, error) {
	var out []storedSession
	for _, d := range sessionDirs(stateDir) {
		if _, err := os.Stat(filepath.Join(d.dir, "sessions")); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := checkStateDir(d.dir); err != nil {
			return nil, err
		}
		store, err := replay.OpenStore(d.dir)
		if err != nil {
			return nil, err
		}
		list, _, err := store.List(cwd, "", 0)
		store.Close()
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			out = append(out, storedSession{Summary: s, stateDir: d.dir, from: d.from})
		}
	}
	slices.SortStableFunc(out, func(a, b storedSession) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return out, nil
}

// findSession finds session id in the chat's or the editor's state
// directory.
func findSession(stateDir, id string) (storedSession, error) {
	if err := replay.ValidID(id); err != nil {
		return storedSession{}, fmt.Errorf("%q is not a session id (dsh-acp sessions lists them)", id)
	}
	all, err := listSessions(stateDir, "")
	if err != nil {
		return storedSession{}, err
	}
	for _, s := range all {
		if s.ID == id {
			return s, nil
		}
	}
	return storedSession{}, fmt.Errorf("no session %s in %s or %s (dsh-acp sessions lists them)",
		id, filepath.Join(chatStateDir(stateDir), "sessions"), filepath.Join(stateDir, "sessions"))
}

// runSessions is `dsh-acp sessions`: a table of the sessions `chat
// --resume` can continue, newest first. Its usage (--help) goes to usage.
func runSessions(args []string, usage io.Writer) int {
	fset := flag.NewFlagSet("dsh-acp sessions", flag.ContinueOnError)
	fset.SetOutput(usage)
	stateDir := fset.String("state-dir", envOr(os.LookupEnv, "DSH_STATE_DIR", defaultStateDir(os.LookupEnv)), "the state directory (env DSH_STATE_DIR)")
	cwd := fset.String("cwd", "", "list only the sessions of this directory")
	fset.Usage = func() {
		fmt.Fprintln(fset.Output(), "Usage: dsh-acp sessions [--cwd DIR] [--state-dir DIR]")
		fmt.Fprintln(fset.Output(), "Lists chat and editor sessions, newest first; continue one with dsh-acp chat --resume ID.")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "dsh-acp sessions: unexpected argument %q\n", fset.Arg(0))
		return 2
	}
	if *cwd != "" {
		abs, err := filepath.Abs(*cwd)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dsh-acp sessions:", err)
			return 2
		}
		*cwd = abs
	}
	list, err := listSessions(*stateDir, *cwd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp sessions:", err)
		return 1
	}
	printSessions(os.Stdout, list, *stateDir)
	return 0
}

// printSessions writes the table: id, when it was last updated (local
// time), where it came from, its cwd (~ for the home directory) and title.
func printSessions(w io.Writer, list []storedSession, stateDir string) {
	if len(list) == 0 {
		fmt.Fprintf(w, "no sessions in %s\n", stateDir)
		return
	}
	home, _ := os.UserHomeDir()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tFROM\tCWD\tTITLE")
	for _, s := range list {
		cwd := s.Cwd
		if home != "" && (cwd == home || strings.HasPrefix(cwd, home+"/")) {
			cwd = "~" + strings.TrimPrefix(cwd, home)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.UpdatedAt.Local().Format(time.DateTime[:16]), s.from, cwd, s.Title)
	}
	tw.Flush()
}
