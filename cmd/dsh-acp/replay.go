package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/changes"
	"github.com/dsh-acp/dsh-acp/internal/chat"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// runReplay is `dsh-acp replay FILE|ID`: print a journaled session as the
// chat client draws it on `session/load`. Its usage (--help) goes to
// usage; a wrong command line's to stderr.
func runReplay(args []string, usage io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		replayUsage(usage)
		return 0
	}
	if len(args) != 1 {
		replayUsage(os.Stderr)
		return 2
	}
	l, stateDir, err := locateForReplay(args[0], os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp replay:", err)
		return 1
	}
	var contents presentation.Contents
	if store, err := openChangeStore(stateDir); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp replay: the change cards show no diffs:", err)
	} else if store != nil {
		defer store.Close()
		contents = store // a nil *Store must not become a non-nil interface
	}
	color := isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
	if err := printSession(os.Stdout, l, contents, color, terminalWidth(os.Stdout)); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp replay:", err)
		return 1
	}
	return 0
}

func replayUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: dsh-acp replay FILE|SESSION-ID")
	fmt.Fprintln(w, "Prints a journaled session (a chat's or an editor's) as the chat draws it on resume;")
	fmt.Fprintln(w, "an id is looked up in <state-dir>/sessions and <state-dir>/chat/sessions (state dir: DSH_STATE_DIR).")
}

// printSession draws l the way session/load shows it to a client: the
// events are settled as on load, presented by a replaying presenter with
// the tools' own cards (MCP tools' as journaled) and the change cards'
// diffs from contents (nil: listed as not kept), sent through the wire
// encoding, and drawn by the chat client's renderer — by lines wrapped at
// width, as the chat on a terminal draws, when width is not 0. Journal
// warnings follow as notices.
func printSession(w io.Writer, l *replay.Loaded, contents presentation.Contents, color bool, width int) error {
	r := chat.NewRenderer(w, color)
	r.SetWidth(width)
	r.SetCwd(l.Header.Cwd)
	defer r.Flush()
	h := l.Header
	r.Notice("session %s in %s, started %s", h.ID, h.Cwd, h.Created.UTC().Format(time.RFC3339))
	var sendErr error
	cards := mcp.NewCards(tools.NewBuiltin(nil, tools.Config{})) // presentation only: runs nothing
	for k, v := range l.State {
		cards.LearnState(k, v) // how each MCP tool's cards were drawn
	}
	p := presentation.NewPresenter(presentation.PresenterOptions{
		Send: func(u sdk.SessionUpdate) {
			wire, err := overTheWire(u)
			if err != nil {
				sendErr = errors.Join(sendErr, err)
				return
			}
			r.Update(wire)
		},
		Cards:    cards,
		Caps:     presentation.Caps{Terminal: true},
		Cwd:      l.Header.Cwd,
		Replay:   true,
		Contents: contents,
	})
	s := replay.NewSettler(func(ev event.Event) error {
		p.Emit(ev)
		return nil
	})
	for _, ev := range l.Events {
		_ = s.Push(ev) // the emit function never fails
	}
	_ = s.Close()
	if gone := s.RunningTasks(); len(gone) > 0 {
		p.Emit(event.ErrorMessage{Text: replay.GoneTasksNote(gone)})
	}
	for _, w := range l.Warnings {
		r.Notice("journal: %s", w)
	}
	r.EndTurn(sdk.StopReasonEndTurn)
	return sendErr
}

// overTheWire is u as a client decodes it: encoded to JSON and back, so
// the renderer sees exactly what the chat client sees.
func overTheWire(u sdk.SessionUpdate) (sdk.SessionUpdate, error) {
	var out sdk.SessionUpdate
	b, err := json.Marshal(u)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	return out, err
}

// loadForReplay reads a journal by path, or by session id from the state
// directory (the editor's sessions, then the chat's). It reads no
// configuration but where the state directory is.
func loadForReplay(arg string, env envLookup) (*replay.Loaded, error) {
	l, _, err := locateForReplay(arg, env)
	return l, err
}

// locateForReplay is loadForReplay, also naming the state directory the
// journal belongs to ("" when a journal file lies outside one's sessions
// directory).
func locateForReplay(arg string, env envLookup) (*replay.Loaded, string, error) {
	if _, err := os.Stat(arg); err == nil {
		l, err := replay.LoadFile(arg)
		return l, journalStateDir(arg), err
	}
	if replay.ValidID(arg) != nil {
		return nil, "", fmt.Errorf("%q is neither a journal file nor a session id", arg)
	}
	stateDir := envOr(env, "DSH_STATE_DIR", defaultStateDir(env))
	var dirs []string
	for _, d := range []string{stateDir, chatStateDir(stateDir)} {
		sessions := filepath.Join(d, "sessions")
		dirs = append(dirs, sessions)
		if _, err := os.Stat(sessions); err != nil {
			continue // nothing to open, and nothing is created
		}
		l, err := loadFrom(d, arg)
		if !errors.Is(err, fs.ErrNotExist) {
			return l, d, err
		}
	}
	return nil, "", fmt.Errorf("no session %s in %s (dsh-acp sessions lists them)", arg, strings.Join(dirs, " or "))
}

// journalStateDir is the state directory of the journal file at path:
// the parent of the sessions directory it lies in, else "".
func journalStateDir(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil || filepath.Base(filepath.Dir(abs)) != "sessions" {
		return ""
	}
	return filepath.Dir(filepath.Dir(abs))
}

// openChangeStore opens the change store of stateDir to read the change
// cards' contents: nil (and no error) when stateDir has none, so a replay
// creates no store; one that exists is opened without a sweep (a replay
// removes nothing).
func openChangeStore(stateDir string) (*changes.Store, error) {
	if stateDir == "" {
		return nil, nil
	}
	if fi, err := os.Lstat(filepath.Join(stateDir, changes.StoreDir)); err != nil || !fi.IsDir() {
		return nil, nil
	}
	return changes.OpenStore(stateDir, replayNoSweep)
}

// replayNoSweep is the store's max age for a replay: a century, so that
// opening it removes nothing.
const replayNoSweep = 100 * 365 * 24 * time.Hour

// loadFrom loads session id from the store of stateDir.
func loadFrom(stateDir, id string) (*replay.Loaded, error) {
	if err := checkStateDir(stateDir); err != nil {
		return nil, err
	}
	store, err := replay.OpenStore(stateDir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return store.Load(id)
}
