package acp_test

import (
	"context"
	sdk "github.com/coder/acp-go-sdk"

	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/chat"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden transcripts under testdata/transcripts")

// replayClient is a client's capabilities as initialize sends them.
type replayClient struct {
	name     string
	caps     func() map[string]any
	terminal bool // the client draws terminal cards (_meta.terminal_output)
}

func replayClients() []replayClient {
	return []replayClient{
		{name: "zed", caps: acptest.ZedCapabilities, terminal: true},
		{name: "plain", caps: acptest.PlainCapabilities},
	}
}

// TestRecordedJournals re-records the journals under -record, then checks
// that each one reads as intended: recorded ones come from a real daemon,
// only the torn one has a warning, and each holds the shape it covers.
func TestRecordedJournals(t *testing.T) {
	if *recordJournals {
		recordAll(t)
	}
	if *recordJournals || *recordV2 {
		writeV2Twins(t)
	}
	var names []string
	for _, c := range journalCases() {
		names = append(names, c.name+".jsonl")
		t.Run(c.name, func(t *testing.T) {
			l := readTestJournal(t, c.name)
			if l.Header.ID == "" || l.Header.Cwd == "" {
				t.Errorf("header %+v", l.Header)
			}
			if hand := l.Header.DaemonVersion == handwrittenVersion; hand != c.handwritten {
				t.Errorf("daemonVersion %q: handwritten=%v, want %v", l.Header.DaemonVersion, hand, c.handwritten)
			}
			switch {
			case c.torn && (len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "incomplete last line")):
				t.Errorf("warnings %q, want one about the torn last line", l.Warnings)
			case !c.torn && len(l.Warnings) > 0:
				t.Errorf("warnings %q", l.Warnings)
			}
			if err := c.shape(l); err != nil {
				t.Errorf("journal lacks its shape (re-record with -record):\n%v", err)
			}
		})
	}
	for _, f := range journalFormats {
		entries, err := os.ReadDir(f.dir)
		if err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			found = append(found, e.Name())
			if !slices.Contains(names, e.Name()) {
				t.Errorf("%s/%s is not listed in journalCases", f.dir, e.Name())
			}
		}
		if len(found) != len(names) {
			t.Errorf("%s holds %d journals, want one per case (%d): rewrite the v2 twins with -record-v2", f.dir, len(found), len(names))
		}
	}
	// The twins are version 2 through and through.
	for _, c := range journalCases() {
		b, err := os.ReadFile(filepath.Join(sessionsDir, "v2", c.name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if strings.HasSuffix(line, "\n") && !strings.HasPrefix(line, `{"v":2,`) {
				t.Errorf("v2/%s: a line of another version: %.80s", c.name, line)
			}
		}
	}
}

// TestReplayRecordedSessions loads every recorded journal into the real
// daemon, for a terminal-capable client and a plain one, and compares what
// session/load sends before its reply with the golden transcript; it also
// checks the card lifecycle independently of the goldens.
func TestReplayRecordedSessions(t *testing.T) { forEachFormat(t, testReplayRecordedSessions) }

func testReplayRecordedSessions(t *testing.T) {
	for _, k := range replayClients() {
		t.Run(k.name, func(t *testing.T) {
			state := t.TempDir()
			ids := installJournals(t, state)
			d := startDaemonIn(t, state, k.caps(), nil)
			for _, c := range journalCases() {
				t.Run(c.name, func(t *testing.T) {
					l := readTestJournal(t, c.name)
					raw, err := d.loadSession(ids[c.name], t.TempDir())
					if err != nil {
						t.Fatalf("session/load: %v", err)
					}
					checkReplay(t, k, l, raw)
					if c.torn && strings.Contains(rawText(raw), tornText) {
						t.Error("the torn record reached the client")
					}
					compareGolden(t, filepath.Join(transcriptsDir, c.name+"."+k.name+".json"), renderTranscript(raw, journalNormalizer(l)))
				})
			}
		})
	}
}

// TestReplayCommandPrintsRecordedJournals runs `dsh-acp replay FILE` on each
// journal and compares its output with the golden text.
func TestReplayCommandPrintsRecordedJournals(t *testing.T) {
	forEachFormat(t, testReplayCommandPrintsRecordedJournals)
}

func testReplayCommandPrintsRecordedJournals(t *testing.T) {
	bin := acptest.BuildBinary(t)
	for _, c := range journalCases() {
		t.Run(c.name, func(t *testing.T) {
			l := readTestJournal(t, c.name)
			cmd := exec.Command(bin, "replay", testJournalPath(c.name))
			cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0") // a -race build sleeps 1 s at exit
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("dsh-acp replay: %v\n%s", err, stderr.String())
			}
			if bytes.Contains(out, []byte("\x1b[")) {
				t.Error("colors written to a pipe")
			}
			if !bytes.Contains(out, []byte(l.Header.ID)) {
				t.Errorf("output does not name the session %s", l.Header.ID)
			}
			if c.torn && bytes.Contains(out, []byte(tornText)) {
				t.Error("the torn record was printed")
			}
			checkPrintedResults(t, l, string(out))
			compareGolden(t, filepath.Join(transcriptsDir, c.name+".replay.txt"), []byte(journalNormalizer(l)(string(out))))
		})
	}
}

// TestCrashRecovery SIGKILLs a daemon while a command runs and tears the
// journal's last line, then loads the session in a new daemon: the history
// up to the kill is replayed, the running command as interrupted, the torn
// record is skipped, and the session takes new prompts.
func TestCrashRecovery(t *testing.T) {
	marker := acptest.NewMarker()
	t.Cleanup(func() { killMarkedGroups(t, marker) }) // whatever happens below
	d1 := startDaemon(t, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d1.newSession(cwd)
	d1.promptExpect(sid, "!echo before-crash", "end_turn")
	sleeper := "!export ACPTEST_MARKER=" + marker + "; sleep 600"
	d1.promptInBackground(sid, sleeper)
	d1.waitToolCall(sid, "sleep 600")
	waitMarkedProcs(t, marker, 1) // running: its tool_call is journaled
	d1.sigkill()
	if autoLevel(t).Confined() {
		// The sandbox ends the command with the daemon.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		left, err := acptest.WaitNoProcsWithMarker(ctx, marker)
		cancel()
		if err != nil {
			t.Errorf("the sandboxed command outlived the SIGKILLed daemon: %v", left)
		}
	} else if n := killMarkedGroups(t, marker); n == 0 {
		t.Error("no orphan found: the known escape of a SIGKILLed daemon's unsandboxed command did not happen; update this test")
	}

	path := d1.journalFilePath(sid)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"v":1,"seq":9,"t":"2026-01-02T03:04:05Z","type":"user_prompt","text":"` + tornText); err != nil {
		t.Fatal(err)
	}
	f.Close()
	crashed, err := replay.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	d2 := startDaemonIn(t, d1.stateDir, acptest.ZedCapabilities(), nil)
	raw, err := d2.loadSession(sid, cwd)
	if err != nil {
		t.Fatalf("session/load after the crash: %v", err)
	}
	checkReplay(t, replayClients()[0], crashed, raw)
	if strings.Contains(rawText(raw), tornText) {
		t.Error("the torn record reached the client")
	}
	us := decodeUpdates(t, raw)
	if got := replayedPrompts(us); !slices.Equal(got, []string{"!echo before-crash", sleeper}) {
		t.Errorf("replayed prompts %q", got)
	}
	var ids []string
	for _, u := range us {
		if u.Kind == "tool_call" {
			ids = append(ids, u.ToolCallID)
		}
	}
	cs := cards(us)
	if len(ids) != 2 {
		t.Fatalf("replayed %d cards, want 2: %+v", len(ids), us)
	}
	first, second := cs[ids[0]], cs[ids[1]]
	if first.final == nil || first.final.Status != "completed" || strings.Join(first.outputs, "") != "before-crash\n" {
		t.Errorf("first card: final %+v, output %q", first.final, first.outputs)
	}
	if second.final == nil || second.final.Status != "failed" || second.final.Meta.Exit == nil ||
		!slices.ContainsFunc(second.contentTexts(), func(s string) bool { return strings.Contains(s, replay.InterruptedText) }) {
		t.Errorf("sleep card: final %+v, content %q", second.final, second.contentTexts())
	}

	d2.promptExpect(sid, "!echo after", "end_turn")
	if c := cards(decodeUpdates(t, d2.Updates(sid)[len(raw):])); len(c) != 1 {
		t.Errorf("the prompt after the reload drew %d cards", len(c))
	}
	d2.closeAndWait()
	l, err := replay.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) > 0 {
		t.Errorf("journal warnings after the repair: %q", l.Warnings)
	}
	if err := journalHasResult("the echo after the reload", func(r event.ToolResult) bool {
		return r.Result.CardOutput == "after\n" && exitCodeIs(r.Result, 0)
	})(l); err != nil {
		t.Error(err)
	}
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(tornText)) {
		t.Error("the torn line is still in the journal")
	}
}

// TestSessionList lists sessions with and without a cwd filter, across
// pages: titles come from the first prompt, updatedAt is set, and paging
// neither repeats nor skips a session.
func TestSessionList(t *testing.T) {
	state := t.TempDir()
	other := t.TempDir()
	store, err := replay.OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	const stored = 53 // more than one page (50)
	var storedIDs []string
	for range stored {
		id := replay.NewSessionID()
		j, err := store.Create(id, other, "test")
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(event.UserPrompt{Text: "stored prompt\nsecond line"}); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		storedIDs = append(storedIDs, id)
	}
	store.Close()

	d := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	titled := d.newSession(cwd)
	d.promptExpect(titled, "  \n!echo alpha\necho beta", "end_turn")
	untitled := d.newSession(cwd)

	// The session with no turn yet is left out (clients that open one per
	// chat would fill their pickers with them; replay's TestList holds that
	// it stays loadable by id).
	page := d.listSessions(map[string]any{"cwd": cwd})
	if len(page.Sessions) != 1 || page.NextCursor != nil {
		t.Fatalf("cwd filter: %+v", page)
	}
	byID := map[string]listedSession{}
	for _, s := range page.Sessions {
		byID[s.SessionID] = s
		if s.Cwd != cwd {
			t.Errorf("session %s: cwd %q", s.SessionID, s.Cwd)
		}
		if s.UpdatedAt == nil {
			t.Errorf("session %s: no updatedAt", s.SessionID)
		} else if _, err := time.Parse(time.RFC3339, *s.UpdatedAt); err != nil {
			t.Errorf("session %s: updatedAt %q: %v", s.SessionID, *s.UpdatedAt, err)
		}
	}
	if s, ok := byID[titled]; !ok || s.Title == nil || *s.Title != "!echo alpha" {
		t.Errorf("titled session: %+v", s)
	}
	if s, ok := byID[untitled]; ok {
		t.Errorf("session without a turn is listed: %+v", s)
	}

	all, pages := d.listAllSessions(t, map[string]any{})
	want := append(slices.Clone(storedIDs), titled)
	if !sameIDs(all, want) || pages != 2 {
		t.Errorf("paged listing: %d sessions on %d pages, want %d on 2", len(all), pages, len(want))
	}
	filtered, pages := d.listAllSessions(t, map[string]any{"cwd": other})
	if !sameIDs(filtered, storedIDs) || pages != 2 {
		t.Errorf("paged listing of %s: %d sessions on %d pages, want %d on 2", other, len(filtered), pages, len(storedIDs))
	}
	err = d.Call(ctxT(t), "session/list", map[string]any{"cursor": "not-a-cursor"}, nil)
	if rpcCode(err) != jsonrpc2.CodeInvalidParams {
		t.Errorf("bad cursor: %v", err)
	}
}

// TestSessionResume restores a session in a new daemon without replaying
// it: nothing is sent before the reply, and the session works on, with the
// model seeing the earlier history.
func TestSessionResume(t *testing.T) {
	d1 := startDaemon(t, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d1.newSession(cwd)
	d1.promptExpect(sid, "!echo first-run", "end_turn")
	d1.closeAndWait()

	srv := llmtest.New(t, llmtest.Reply("You ran echo first-run."))
	d2 := startDaemonIn(t, d1.stateDir, acptest.ZedCapabilities(), nil, "DSH_BASE_URL="+srv.URL(), "DSH_API_KEY=test-key")
	if err := d2.Call(ctxT(t), "session/resume", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	// Nothing is replayed; the session's commands follow the reply.
	if _, err := d2.WaitUpdate(ctxT(t), sid, func(u json.RawMessage) bool {
		return acptest.UpdateKind(u) == "available_commands_update"
	}); err != nil {
		t.Fatalf("no available_commands_update after session/resume: %v", err)
	}
	if us := d2.Updates(sid); len(us) != 1 {
		t.Fatalf("session/resume sent %d updates, want only the commands: %s", len(us), us)
	}
	d2.promptExpect(sid, "!echo second-run", "end_turn")
	c := onlyCard(t, decodeUpdates(t, d2.Updates(sid)[1:]))
	if c.final == nil || c.final.Status != "completed" || strings.Join(c.outputs, "") != "second-run\n" {
		t.Errorf("card after resume: final %+v, output %q", c.final, c.outputs)
	}
	d2.promptExpect(sid, "what did I run?", "end_turn")
	if history := srv.Last().String(); !strings.Contains(history, "first-run") || !strings.Contains(history, "second-run") {
		t.Errorf("the model's history after resume lacks the earlier commands:\n%s", history)
	}
}

// TestSessionClose kills the session's running command, ends its prompt,
// and frees the session: a later prompt to it fails, and it can be loaded
// again.
func TestSessionClose(t *testing.T) {
	marker := acptest.NewMarker()
	t.Cleanup(func() { killMarkedGroups(t, marker) })
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	reply := d.promptInBackground(sid, "!export ACPTEST_MARKER="+marker+"; sleep 600")
	d.waitToolCall(sid, "sleep 600")
	waitMarkedProcs(t, marker, 1)
	if err := d.Call(ctxT(t), "session/close", map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	select {
	case got := <-reply:
		if got != "cancelled" {
			t.Errorf("the running prompt ended with %q, want cancelled", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running prompt was not answered after session/close")
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Fatalf("session/close left the command running: %v %v", left, err)
	}
	err := d.Call(ctxT(t), "session/prompt", promptParams(sid, "!echo closed"), nil)
	if err == nil || rpcCode(err) == 0 {
		t.Fatalf("prompt to a closed session: %v, want a JSON-RPC error", err)
	}
	if n := d.count(sid, "tool_call", "echo closed"); n != 0 {
		t.Error("a closed session ran a command")
	}
	raw, err := d.loadSession(sid, cwd)
	if err != nil {
		t.Fatalf("session/load after session/close: %v", err)
	}
	c := onlyCard(t, decodeUpdates(t, raw))
	if c.final == nil || c.final.Status != "failed" {
		t.Errorf("the closed command replays as %+v, want failed", c.final)
	}
}

// TestSessionLockedByAnotherDaemon: a session one daemon has open cannot
// be loaded or resumed by a second daemon on the same state directory until
// the first closes it.
func TestSessionLockedByAnotherDaemon(t *testing.T) {
	d1 := startDaemon(t, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d1.newSession(cwd)
	d1.promptExpect(sid, "!echo held", "end_turn")
	d2 := startDaemonIn(t, d1.stateDir, acptest.ZedCapabilities(), nil)
	for _, method := range []string{"session/load", "session/resume"} {
		err := d2.Call(ctxT(t), method, map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil)
		if err == nil {
			t.Fatalf("%s of a session another daemon holds succeeded", method)
		}
		if !lockedErrRE.MatchString(rpcErrorText(err)) {
			t.Errorf("%s: error %q does not say the session is in use", method, rpcErrorText(err))
		}
	}
	if us := d2.Updates(sid); len(us) > 0 {
		t.Errorf("the refused daemon sent %d updates", len(us))
	}
	if err := d1.Call(ctxT(t), "session/close", map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.loadSession(sid, cwd); err != nil {
		t.Fatalf("session/load after the first daemon closed the session: %v", err)
	}
}

var lockedErrRE = regexp.MustCompile(`(?i)locked|in use|another dsh-acp|elsewhere`)

// rpcErrorText is a Call error's message and data.
func rpcErrorText(err error) string {
	var e *jsonrpc2.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	s := e.Message
	if e.Data != nil {
		s += " " + string(*e.Data)
	}
	return s
}

// --- helpers ---

// loadSession sends session/load and returns the session's updates received by
// the time the reply arrived.
// loadSession loads sid and returns the updates sent before the reply (the
// replay); those that follow it (the commands, the usage) are left out.
// Nothing else may run on d meanwhile.
func (d *daemon) loadSession(sid, cwd string) ([]json.RawMessage, error) {
	from := len(d.Inbound())
	err := d.Call(ctxT(d.t), "session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil)
	return updatesBeforeReply(d.Inbound()[from:], sid), err
}

// updatesBeforeReply is the updates of sid among msgs up to the first reply.
func updatesBeforeReply(msgs []json.RawMessage, sid string) []json.RawMessage {
	var out []json.RawMessage
	for _, m := range msgs {
		var env struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				SessionID string          `json:"sessionId"`
				Update    json.RawMessage `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(m, &env) != nil {
			continue
		}
		if env.Method == "" && env.ID != nil {
			break // the reply
		}
		if env.Method == "session/update" && env.Params.SessionID == sid {
			out = append(out, env.Params.Update)
		}
	}
	return out
}

type listedSession struct {
	SessionID string  `json:"sessionId"`
	Cwd       string  `json:"cwd"`
	Title     *string `json:"title"`
	UpdatedAt *string `json:"updatedAt"`
}

type sessionPage struct {
	Sessions   []listedSession `json:"sessions"`
	NextCursor *string         `json:"nextCursor"`
}

func (d *daemon) listSessions(params map[string]any) sessionPage {
	d.t.Helper()
	var p sessionPage
	if err := d.Call(ctxT(d.t), "session/list", params, &p); err != nil {
		d.t.Fatalf("session/list: %v", err)
	}
	return p
}

// listAllSessions follows the cursors and returns every listed id and the
// number of pages. It fails on an empty page that carries a cursor.
func (d *daemon) listAllSessions(t *testing.T, params map[string]any) (ids []string, pages int) {
	t.Helper()
	page := params
	for pages = 1; ; pages++ {
		if pages > 10 {
			t.Fatal("session/list does not stop paging")
		}
		p := d.listSessions(page)
		for _, s := range p.Sessions {
			ids = append(ids, s.SessionID)
		}
		if p.NextCursor == nil {
			return ids, pages
		}
		if len(p.Sessions) == 0 {
			t.Fatal("an empty page with a cursor")
		}
		page = map[string]any{"cursor": *p.NextCursor}
		for k, v := range params {
			page[k] = v
		}
	}
}

func sameIDs(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

func readTestJournal(t *testing.T, name string) *replay.Loaded {
	t.Helper()
	l, err := replay.LoadFile(testJournalPath(name))
	if err != nil {
		t.Fatalf("%v (record it with -record)", err)
	}
	return l
}

// installJournals copies every testdata journal into state's sessions
// directory (0700) as <session id>.jsonl (0600), and returns the ids.
func installJournals(t *testing.T, state string) map[string]string {
	t.Helper()
	dir := filepath.Join(state, "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, c := range journalCases() {
		l := readTestJournal(t, c.name)
		b, err := os.ReadFile(testJournalPath(c.name))
		if err != nil {
			t.Fatal(err)
		}
		for other, id := range ids {
			if id == l.Header.ID {
				t.Fatalf("%s and %s hold the same session %s", other, c.name, id)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, l.Header.ID+".jsonl"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		ids[c.name] = l.Header.ID
	}
	return ids
}

// renderTranscript renders updates as the golden file holds them: a JSON array,
// one indented update after another, volatile values normalised.
func renderTranscript(raw []json.RawMessage, norm func(string) string) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, u := range raw {
		var ind bytes.Buffer
		if err := json.Indent(&ind, u, "  ", "  "); err != nil {
			ind.Reset()
			ind.Write(u)
		}
		b.WriteString("  ")
		b.Write(ind.Bytes())
		if i < len(raw)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return []byte(norm(b.String()))
}

func replayedPrompts(us []update) []string {
	var out []string
	for _, u := range us {
		if u.Kind == "user_message_chunk" {
			out = append(out, u.ChunkText)
		}
	}
	return out
}

// checkReplay checks a replay against its journal, independently of the
// golden transcript: the replayed cards are the journal's calls (ids kept,
// in order, calls that never finished settled as interrupted), every card
// ends completed or failed with nothing after, terminal cards follow the
// tool_call → one terminal_output → terminal_exit lifecycle for a terminal
// client and show a console block otherwise.
func checkReplay(t *testing.T, k replayClient, l *replay.Loaded, raw []json.RawMessage) {
	t.Helper()
	us := decodeUpdates(t, raw)
	recorded := map[string]bool{}
	for _, ev := range l.Events {
		if r, ok := ev.(event.ToolResult); ok {
			recorded[r.ID] = true
		}
	}
	var wantIDs, prompts, texts, thoughts []string
	calls, results := map[string]event.ToolCall{}, map[string]event.ToolResult{}
	taskStatus := map[string]string{}
	for _, ev := range replay.Settle(l.Events) {
		switch e := ev.(type) {
		case event.ToolCall:
			wantIDs = append(wantIDs, e.ID)
			calls[e.ID] = e
		case event.ToolResult:
			results[e.ID] = e
			if tk := e.Result.Task; tk != nil && tk.ID != "" && tk.Status != "" {
				taskStatus[tk.ID] = tk.Status
			}
		case event.UserPrompt:
			prompts = append(prompts, e.Text)
		case event.AssistantMessage:
			if e.Text != "" {
				texts = append(texts, e.Text)
			}
			if e.Reasoning != "" {
				thoughts = append(thoughts, e.Reasoning)
			}
		case event.ErrorMessage:
			texts = append(texts, e.Text)
		}
	}

	var gotIDs, gotTexts, gotThoughts []string
	for _, u := range us {
		switch {
		case u.Status == "pending":
			t.Errorf("a replayed update is pending: %+v", u)
		case u.Kind == "tool_call_update" && u.Status == "in_progress":
			t.Errorf("a replayed card goes back in progress: %+v", u)
		case u.Kind == "tool_call":
			gotIDs = append(gotIDs, u.ToolCallID)
		case u.Kind == "agent_message_chunk":
			gotTexts = append(gotTexts, u.ChunkText)
		case u.Kind == "agent_thought_chunk":
			gotThoughts = append(gotThoughts, u.ChunkText)
		}
	}
	if !slices.Equal(gotIDs, wantIDs) {
		t.Errorf("replayed card ids %q, want the journal's %q", gotIDs, wantIDs)
	}
	if got := replayedPrompts(us); !slices.Equal(got, prompts) {
		t.Errorf("replayed prompts %q, want %q", got, prompts)
	}
	if !slices.Equal(gotThoughts, thoughts) {
		t.Errorf("replayed reasoning %q, want %q", gotThoughts, thoughts)
	}
	for _, want := range texts {
		if !slices.Contains(gotTexts, want) {
			t.Errorf("agent text %q not replayed (got %q)", want, gotTexts)
		}
	}
	for id, status := range taskStatus {
		if status == "running" && !slices.ContainsFunc(gotTexts, func(s string) bool {
			return strings.Contains(s, id) && strings.Contains(s, replay.GoneNote)
		}) {
			t.Errorf("no note that background task %s is gone (texts %q)", id, gotTexts)
		}
	}

	cs := cards(us)
	for _, id := range wantIDs {
		c, res := cs[id], results[id]
		if c == nil {
			continue // reported above
		}
		if c.final == nil {
			t.Errorf("card %s is left in progress", id)
			continue
		}
		if last := c.updates[len(c.updates)-1]; last.Status != "completed" && last.Status != "failed" {
			t.Errorf("card %s: an update follows the final one: %+v", id, last)
		}
		if got, want := c.final.Status == "failed", wantFinalFailed(res); got != want {
			t.Errorf("card %s: final status %q, want failed=%v (result %+v)", id, c.final.Status, want, res.Result)
		}
		if !recorded[id] && !slices.ContainsFunc(c.contentTexts(), func(s string) bool { return strings.Contains(s, res.Result.Text) }) {
			t.Errorf("interrupted card %s: content %q lacks %q", id, c.contentTexts(), res.Result.Text)
		}
		term := isTerminalCall(calls[id])
		if k.terminal && term {
			checkReplayedTerminal(t, id, c, res.Result)
			continue
		}
		for _, u := range append([]update{c.open}, c.updates...) {
			if u.Meta.Info != nil || u.Meta.Output != nil || u.Meta.Exit != nil {
				t.Errorf("card %s: terminal _meta on a card that is not a terminal: %+v", id, u)
			}
		}
		if term && !res.Result.IsError {
			checkReplayedConsole(t, id, c, res.Result.CardOutput)
		}
	}
}

// wantFinalFailed is the final status a result calls for, by the tool contract.
func wantFinalFailed(r event.ToolResult) bool {
	res := r.Result
	return res.IsError || res.Declined != "" ||
		r.Name == "bash" && (tools.OutcomeOf(res).Signal != "" || tools.OutcomeOf(res).TimedOut || tools.OutcomeOf(res).ExitCode != nil && *tools.OutcomeOf(res).ExitCode != 0)
}

// isTerminalCall reports whether a call is a foreground bash run with valid
// arguments: the calls drawn as terminal cards.
func isTerminalCall(c event.ToolCall) bool {
	if c.Name != "bash" {
		return false
	}
	var a struct {
		Command         string   `json:"command"`
		Description     string   `json:"description"`
		TimeoutMs       *float64 `json:"timeoutMs"`
		Workdir         string   `json:"workdir"`
		RunInBackground bool     `json:"run_in_background"`
	}
	return json.Unmarshal(c.Args, &a) == nil && strings.TrimSpace(a.Command) != "" && !a.RunInBackground
}

func checkReplayedTerminal(t *testing.T, id string, c *card, res event.Result) {
	t.Helper()
	if c.open.Meta.Info == nil || c.open.Meta.Info.TerminalID != id {
		t.Errorf("card %s: tool_call without terminal_info: %+v", id, c.open)
	}
	// The recorded output, then the line that says why the call did not
	// run normally, if it did not.
	out := res.CardOutput
	if reason := tools.NewBash(nil, tools.Config{}).PresentResult("bash", nil, res).Reason; reason != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += presentation.ReasonPrefix + reason + "\n"
	}
	wantOut := []string{}
	if out != "" {
		wantOut = []string{strings.ToValidUTF8(out, "\uFFFD")}
	}
	if !slices.Equal(append([]string{}, c.outputs...), wantOut) {
		t.Errorf("card %s: terminal_output %q, want exactly %q", id, c.outputs, wantOut)
	}
	e := c.final.Meta.Exit
	if e == nil || e.TerminalID != id {
		t.Errorf("card %s: final update without terminal_exit: %+v", id, c.final)
		return
	}
	var wantCode *int
	wantSignal := ""
	if res.Declined == "" {
		wantCode, wantSignal = tools.OutcomeOf(res).ExitCode, tools.OutcomeOf(res).Signal
	}
	if (e.ExitCode == nil) != (wantCode == nil) || e.ExitCode != nil && *e.ExitCode != *wantCode {
		t.Errorf("card %s: exit_code %v, want %v", id, optString(e.ExitCode), optString(wantCode))
	}
	if got := optString(e.Signal); got != optString(optSignal(wantSignal)) {
		t.Errorf("card %s: signal %s, want %q", id, got, wantSignal)
	}
}

var sgrRE = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// checkReplayedConsole checks that a plain client's card shows the output's
// last line in a fenced console block.
func checkReplayedConsole(t *testing.T, id string, c *card, output string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(sgrRE.ReplaceAllString(output, ""), "\n"), "\n")
	last := lines[len(lines)-1]
	if last == "" {
		return
	}
	for _, s := range c.contentTexts() {
		if strings.HasPrefix(s, "```") && strings.Contains(s, "console\n") && strings.Contains(s, last) {
			return
		}
	}
	t.Errorf("card %s: content %q has no console block with %q", id, c.contentTexts(), last)
}

// optString renders an optional value for messages: "<nil>" or the value.
func optString[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

func optSignal(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// rawText joins updates into one string, for searching.
func rawText(raw []json.RawMessage) string {
	var b strings.Builder
	for _, r := range raw {
		b.Write(r)
	}
	return b.String()
}

// checkPrintedResults checks that a printed session shows every call's
// outcome in the frame under the call, as a replay to a client does: a
// foreground run's output, any other result's text, and the interrupted
// note of a call that never got a result (the settled journal, as
// session/load draws it).
func checkPrintedResults(t *testing.T, l *replay.Loaded, printed string) {
	t.Helper()
	var framed strings.Builder
	for line := range strings.Lines(plainText(printed)) {
		if body, ok := strings.CutPrefix(strings.TrimSpace(line), "│"); ok {
			framed.WriteString(body + "\n")
		}
	}
	printed = framed.String()
	calls := map[string]event.ToolCall{}
	for _, ev := range replay.Settle(l.Events) {
		switch e := ev.(type) {
		case event.ToolCall:
			calls[e.ID] = e
		case event.ToolResult:
			shown := e.Result.Text
			if isTerminalCall(calls[e.ID]) && !e.Result.IsError {
				shown = e.Result.CardOutput // the model's text repeats it with markers
			}
			for line := range strings.Lines(plainText(shown)) {
				if line = strings.TrimSpace(line); line != "" && !strings.Contains(printed, line) {
					t.Errorf("the printout does not show the outcome of %s %s: %q", e.Name, e.ID, line)
					break
				}
			}
		}
	}
}

// plainText drops terminal escapes and replacement characters, which a
// printout may render differently.
func plainText(s string) string {
	return strings.ReplaceAll(sgrRE.ReplaceAllString(s, ""), "\ufffd", "")
}

// TestChatAndReplayDrawAlike holds the one-renderer promise: for every
// recorded session, what the chat client draws from the daemon's
// session/load is byte for byte what `dsh-acp replay` prints after its
// header line (journal warnings, which no client receives, aside).
func TestChatAndReplayDrawAlike(t *testing.T) {
	bin := acptest.BuildBinary(t)
	state := t.TempDir()
	ids := installJournals(t, state)
	d := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	for _, c := range journalCases() {
		t.Run(c.name, func(t *testing.T) {
			raw, err := d.loadSession(ids[c.name], t.TempDir())
			if err != nil {
				t.Fatalf("session/load: %v", err)
			}
			var chatOut bytes.Buffer
			r := chat.NewRenderer(&chatOut, false)
			for _, u := range raw {
				var su sdk.SessionUpdate
				if err := json.Unmarshal(u, &su); err != nil {
					t.Fatalf("update %s: %v", u, err)
				}
				r.Update(su)
			}
			r.EndTurn(sdk.StopReasonEndTurn)

			cmd := exec.Command(bin, "replay", testJournalPath(c.name))
			cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "NO_COLOR=1")
			printed, err := cmd.Output()
			if err != nil {
				t.Fatalf("dsh-acp replay: %v", err)
			}
			_, body, _ := strings.Cut(string(printed), "\n\n") // the header line
			if c.torn {
				body, _, _ = strings.Cut(body, "journal: ")
				body = strings.TrimRight(body, "\n") + "\n"
			}
			if got := strings.TrimRight(chatOut.String(), "\n") + "\n"; got != strings.TrimRight(body, "\n")+"\n" {
				t.Errorf("chat draws\n%s\nreplay prints\n%s", got, body)
			}
		})
	}
}
