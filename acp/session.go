package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/approval"
	"github.com/dsh-acp/dsh-acp/internal/changes"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/journalsink"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/sandboxlevel"
	"github.com/dsh-acp/dsh-acp/internal/slash"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// session is one open ACP session: its conversation, its journal and the
// presenter that draws its cards.
type session struct {
	id      string
	cwd     string
	agent   *agent.Session
	journal *replay.Journal
	present *presentation.Presenter
	updates *presentation.UpdateWriter
	// journalSink writes the session's events to its journal.
	journalSink *journalsink.Sink
	policy      *approval.Policy
	title       *titler
	box         *mcp.Toolbox     // the daemon's tools and the session's MCP tools
	tracker     *changes.Tracker // nil: changes are not tracked
	log         *zap.Logger
	catalog     *llm.Catalog           // the provider's models, for the model option
	window      func(model string) int // a model's context window
	// sandboxes is the levels the daemon offers; the session's level is
	// its agent's (agent.Session.Sandbox).
	sandboxes sandboxlevel.Offer
	// models is the model client in force, shared by every session.
	models *llm.InForce
	// settled is closed once the session's sandbox level is final (see
	// settleSandbox); sandboxChosen: the user chose a level.
	settled       chan struct{}
	sandboxChosen atomic.Bool
	// thinkingGone: the provider refused the thinking setting and the
	// client was sent the options without it.
	thinkingGone atomic.Bool

	mu          sync.Mutex
	afterOpened []func() // what waits for the reply that opened the session (afterOpen)
	closed      bool
	mcp         *sessionMCP    // nil without MCP servers
	running     sync.WaitGroup // this session's turns in flight
	// announced: the reply that opened the session went out (and with it
	// the commands); optionsVersion: the model catalog version the client
	// last got.
	announced      bool
	optionsVersion int

	closeOnce sync.Once
}

// hasModel reports whether a model client is in force now.
func (ss *session) hasModel() bool { return ss.models.Current() != nil }

// beginTurn counts a turn of this session; false once the session closed.
func (ss *session) beginTurn() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	ss.running.Add(1)
	return true
}

func (ss *session) endTurn() { ss.running.Done() }

// send writes one session/update of this session that is not about a card
// (a mode change). It never uses a turn's context.
func (ss *session) send(u sdk.SessionUpdate) {
	sendUpdate(ss.updates, ss.id, ss.log, u)
}

// sendUpdate writes one update of session id through w.
func sendUpdate(w *presentation.UpdateWriter, id string, log *zap.Logger, u sdk.SessionUpdate) {
	err := w.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: sdk.SessionId(id), Update: u})
	if err != nil {
		log.Debug("session/update not sent", zap.String("session", id), zap.Error(err))
	}
}

// fanout gives each event to its sinks in order. A session's puts the
// journal before the presenter: a record is written (write(2)) before the
// card that shows it goes out, so a daemon killed at any point has lost
// nothing the user saw.
type fanout []event.Sink

func (f fanout) Emit(ev event.Event) {
	for _, s := range f {
		s.Emit(ev)
	}
}

// EmitBatch gives the batch to each sink in turn (the journal writes it
// with one write).
func (f fanout) EmitBatch(evs []event.Event) {
	for _, s := range f {
		event.EmitAll(s, evs...)
	}
}

func (s *Server) newSession(id, cwd string, j *replay.Journal) *session {
	ss := &session{id: id, cwd: cwd, journal: j, updates: s.updates, log: s.log, catalog: s.catalog, window: s.cfg.Agent.ContextWindow,
		sandboxes: s.sandbox, models: s.models, settled: make(chan struct{})}
	reg := s.cfg.Tools
	if s.tracksChanges() { // the store opens at the first look, after the reply
		ss.tracker = changes.NewTracker(changes.Options{Dir: s.runDir(cwd), Open: s.openChangeStore, Session: id})
		reg = tools.Tracked(reg, ss.tracker)
	}
	ss.box = mcp.NewToolbox(reg)
	ss.present = s.presenter(id, cwd, s.updates, ss.box, false)
	ss.title = &titler{send: ss.send}
	ss.journalSink = journalsink.New(j, s.log, id, ss.present)
	var sink event.Sink = fanout{ss.title, ss.journalSink, ss.present}
	if ss.tracker != nil {
		ss.tracker.SetSink(sink)
		sink = ss.tracker.Sink()
		ss.afterOpen(ss.tracker.Prime) // the first look, after the reply
	}
	ss.policy = approval.New(approval.Config{Session: id, Cwd: cwd, UserRules: s.cfg.UserRules, Trust: s.trust,
		Tools: ss.box, Journal: j, Ask: asker{ss: ss, client: clientConn{s.conn}}, Mode: s.cfg.DefaultMode, Log: s.log})
	ss.agent = agent.NewSession(id, s.runDir(cwd), s.models, ss.box, sink, ss.policy, s.cfg.Agent)
	ss.agent.SetClientFiles(s.clientCaps().files(s.conn, id))
	return ss
}

// tracksChanges reports whether sessions track their changes: a change
// store is configured and commands run on this machine. It opens nothing.
func (s *Server) tracksChanges() bool {
	if s.cfg.Changes == nil {
		return false
	}
	_, remote := s.remote()
	return !remote
}

// changeStore is the change store, opened on first use — a session's
// first look (its tracker's Open), a change card's diff, session/delete —
// never on the way to the reply that opens a session; nil when the daemon
// tracks no changes (none configured, an executor on another machine, or
// the store cannot be opened: logged once).
func (s *Server) changeStore() *changes.Store {
	if !s.tracksChanges() {
		return nil
	}
	st, err := s.cfg.Changes()
	if err != nil {
		s.changesOnce.Do(func() { s.log.Warn("change tracking off", zap.Error(err)) })
		return nil
	}
	return st
}

// errChangesOff fails a tracker's looks when the change store cannot be
// opened (changeStore logged why).
var errChangesOff = errors.New("change tracking is off")

// openChangeStore is a tracker's Options.Open.
func (s *Server) openChangeStore() (*changes.Store, error) {
	if st := s.changeStore(); st != nil {
		return st, nil
	}
	return nil, errChangesOff
}

// storeContents is a presenter's change-card contents: the change store,
// opened on the first card that diffs (a card with changes comes after a
// look, which opened it).
type storeContents struct{ s *Server }

func (c storeContents) Get(hash string) ([]byte, error) {
	st := c.s.changeStore()
	if st == nil {
		return nil, changes.ErrNotKept
	}
	return st.Get(hash)
}

// clientCaps is what the client can do.
func (s *Server) clientCaps() clientCaps {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// presenter is a presenter for session id drawing through w with cards,
// with the client's capabilities; replay marks one that draws a recorded
// session.
func (s *Server) presenter(id, cwd string, w *presentation.UpdateWriter, cards presentation.CardIntents, replay bool) *presentation.Presenter {
	caps := s.clientCaps()
	var contents presentation.Contents
	if s.tracksChanges() {
		contents = storeContents{s}
	}
	return presentation.NewPresenter(presentation.PresenterOptions{
		Contents: contents,
		Send:     func(u sdk.SessionUpdate) { sendUpdate(w, id, s.log, u) },
		SendExtension: func(u any) {
			if err := w.Extension(id, u); err != nil {
				s.log.Debug("session/update not sent", zap.String("session", id), zap.Error(err))
			}
		},
		Cards:    cards,
		Caps:     caps.present,
		Cwd:      s.runDir(cwd),
		Location: s.location(),
		Flush:    presentation.FlushPolicy{Interval: s.cfg.CardFlushInterval, Bytes: s.cfg.CardFlushBytes},
		Replay:   replay,
	})
}

// prompt runs one turn: a slash command by the daemon, a `!` command
// directly, anything else through the model.
func (ss *session) prompt(ctx context.Context, blocks []sdk.ContentBlock) event.StopReason {
	ss.waitSettled(ctx)
	pb := promptBlocks(blocks)
	if name, args, text, extra, ok := slash.Parse(pb); ok {
		return ss.command(ctx, name, args, text, extra)
	}
	if word, ok := slash.Word(firstText(pb)); ok && !ss.hasModel() {
		return ss.command(ctx, slash.Unknown, word, strings.TrimSpace(firstText(pb)), 0)
	}
	if emptyDirect(pb) {
		return ss.agent.Command(ctx, "!", func(context.Context) string { return emptyDirectText })
	}
	var reason event.StopReason
	var err error
	if cmd, ok := isDirect(firstText(pb)); ok && len(pb) == 1 {
		reason, err = ss.agent.RunDirect(ctx, cmd)
	} else {
		ss.syncTools(ctx)
		reason, err = ss.agent.PromptBlocks(ctx, pb)
		ss.thinkingMayBeGone()
	}
	if err != nil {
		ss.log.Error("turn failed", zap.String("session", ss.id), zap.Error(err))
	}
	return reason
}

// close refuses new turns, waits (until ctx ends) for the running one to
// record its last events — its turns must already be cancelled — stops
// its MCP servers and closes the journal.
func (ss *session) close(ctx context.Context) {
	ss.mu.Lock()
	ss.closed = true
	ss.mu.Unlock()
	waitBounded(ctx, &ss.running)
	ss.closeMCP(ctx)
	if ss.tracker != nil {
		ss.tracker.Close()
	}
	ss.closeOnce.Do(func() {
		ss.journalSink.Close()
		if err := ss.journal.Close(); err != nil {
			ss.log.Error("journal close failed", zap.String("session", ss.id), zap.Error(err))
		}
	})
}

// isDirect reports whether a prompt is a `!` command and returns it.
func isDirect(text string) (string, bool) {
	t := strings.TrimLeft(text, " \t\r\n")
	if !strings.HasPrefix(t, "!") {
		return "", false
	}
	cmd := strings.TrimSpace(t[1:])
	return cmd, cmd != ""
}

// emptyDirectText answers a `!` prompt with no command.
const emptyDirectText = "Nothing to run: type a shell command after the ! (for example !git status).\n\n"

// emptyDirect reports whether a prompt is a lone `!` with no command (only
// blanks after it): answered by the daemon, never run nor sent to the model.
func emptyDirect(pb []agent.PromptBlock) bool {
	t := strings.TrimSpace(firstText(pb))
	return len(pb) == 1 && t == "!"
}

// firstText is the first block's text, when it is a text block.
func firstText(pb []agent.PromptBlock) string {
	if len(pb) == 0 || pb[0].Type != "text" {
		return ""
	}
	return pb[0].Text
}

// promptBlocks converts ACP content blocks into the loop's own shape. Every
// block is kept — an image, audio or binary resource as a block the loop
// tells the user it could not give the model (agent.Unsent).
func promptBlocks(blocks []sdk.ContentBlock) []agent.PromptBlock {
	out := make([]agent.PromptBlock, 0, len(blocks))
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			out = append(out, agent.PromptBlock{Type: "text", Text: b.Text.Text})
		case b.ResourceLink != nil:
			pbl := agent.PromptBlock{Type: "resource_link", URI: b.ResourceLink.Uri, Name: b.ResourceLink.Name}
			if b.ResourceLink.MimeType != nil {
				pbl.MimeType = *b.ResourceLink.MimeType
			}
			out = append(out, pbl)
		case b.Resource != nil:
			if t := b.Resource.Resource.TextResourceContents; t != nil {
				pbl := agent.PromptBlock{Type: "resource", URI: t.Uri, Text: t.Text}
				if t.MimeType != nil {
					pbl.MimeType = *t.MimeType
				}
				out = append(out, pbl)
			} else if bl := b.Resource.Resource.BlobResourceContents; bl != nil {
				pbl := agent.PromptBlock{Type: "blob", URI: bl.Uri}
				if bl.MimeType != nil {
					pbl.MimeType = *bl.MimeType
				}
				out = append(out, pbl)
			}
		case b.Image != nil:
			out = append(out, agent.PromptBlock{Type: "image", MimeType: b.Image.MimeType})
		case b.Audio != nil:
			out = append(out, agent.PromptBlock{Type: "audio", MimeType: b.Audio.MimeType})
		}
	}
	return out
}

// reopen restores a journaled session: it takes the journal's write lock
// (a second daemon is refused), streams the journal — drawing each event as
// it is decoded when replayToClient, so the first update goes out at once —
// and rebuilds the model's history from the same events. The session runs
// in the client's cwd when it names an existing directory, else in the one
// the journal recorded (a moved or deleted project can still be read).
func (s *Server) reopen(id, cwd string, replayToClient bool) (*session, error) {
	if _, err := s.session(sdk.SessionId(id)); err == nil {
		return nil, invalidParams("session %s is already open", id)
	}
	if cwd != "" && !filepath.IsAbs(cwd) {
		return nil, invalidParams("cwd must be an absolute path, got %q", cwd)
	}
	clientCwd := cwd != "" && s.checkSessionCwd(context.Background(), cwd) == nil
	j, err := s.cfg.Store.OpenAppend(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, sessionNotFound(id)
	}
	if err != nil {
		return nil, invalidParams("cannot open session %s: %v", id, err)
	}
	if cut := j.Repaired(); cut > 0 {
		s.log.Warn("journal: cut a torn last record", zap.String("session", id), zap.Int64("bytes", cut))
	}
	r := &reopening{server: s, id: id, cwd: filepath.Clean(cwd), journal: j, draw: replayToClient, state: map[string]json.RawMessage{}}
	defer r.finish()
	settler := replay.NewSettler(r.event)
	warnings, err := s.cfg.Store.Stream(id, func(rec replay.Record) error {
		switch {
		case rec.Header != nil && rec.Header.Cwd != "" && r.ss == nil:
			r.recordedCwd = rec.Header.Cwd
			if !clientCwd {
				r.cwd = rec.Header.Cwd
			}
		case rec.Event != nil:
			return settler.Push(rec.Event)
		case rec.State != nil:
			r.state[rec.State.Key] = rec.State.Value
			if strings.HasPrefix(rec.State.Key, mcp.StatePrefix) {
				r.session().learnState(rec.State.Key, rec.State.Value) // before the calls it draws
			}
		}
		return nil
	})
	if err == nil {
		err = settler.Close()
	}
	if err != nil {
		j.Close()
		return nil, invalidParams("cannot read session %s: %v", id, err)
	}
	for _, w := range warnings {
		s.log.Warn("journal", zap.String("session", id), zap.String("warning", w))
	}
	ss := r.session()
	r.finish()
	if r.drawFailed != nil {
		ss.close(context.Background())
		return nil, r.drawFailed
	}
	ss.restoreSettings(r.state)
	ss.policy.Restore(r.state)
	ss.startSandbox(r.state, false)
	s.restoreRoots(ss, r.state)
	if r.firstPrompt != nil {
		if replayToClient {
			ss.title.announce(*r.firstPrompt) // the title session/list shows, again
		} else {
			ss.title.done.Store(true) // resume sends nothing; the client has it
		}
	}
	if gone := settler.RunningTasks(); len(gone) > 0 {
		note := replay.GoneTasksNote(gone)
		if replayToClient {
			ss.present.Emit(event.ErrorMessage{Text: note})
		}
		defer ss.agent.QueueNotice(note)
	}
	if err := s.register(ss); err != nil {
		ss.close(context.Background())
		return nil, err
	}
	s.log.Info("session reopened", zap.String("session", id), zap.Bool("replayed", replayToClient), zap.Int("events", r.events))
	return ss, nil
}

// sessionNotFound is ACP's resource-not-found (-32002) for a session id
// with no journal, its message plain (no file names).
func sessionNotFound(id string) error {
	msg := fmt.Sprintf("no session %q: it was never created here, or it was deleted", id)
	return &sdk.RequestError{Code: -32002, Message: "Resource not found: " + msg, Data: map[string]any{"error": msg, "sessionId": id}}
}

// reopening is a session being rebuilt from its journal. Each event is
// folded into the model's history as it is decoded; for session/load it is
// also drawn, on a second goroutine, while the journal is still being
// decoded, so replay costs about max(decode, draw), not their sum.
type reopening struct {
	server  *Server
	id, cwd string // cwd: where the session runs from now on
	// recordedCwd is the journal's cwd: recorded cards are drawn as they
	// looked live, in the directory they ran in.
	recordedCwd string
	journal     *replay.Journal
	draw        bool
	ss          *session
	restore     *agent.Restorer // holds the session until finish
	events      int
	state       map[string]json.RawMessage // latest journaled value per key
	firstPrompt *string                    // the first UserPrompt's text, once seen

	drawQ      chan []event.Event // batches, so the two goroutines meet once per batch
	drawing    []event.Event      // the batch being gathered
	drawn      bool               // the first batch went out
	drawDone   chan struct{}
	drawFailed error // the drawer panicked (see containDraw)
	batch      *presentation.LineBatch
}

// drawBatch is how many events go to the drawer at a time, and drawAhead
// how many batches the decoder may run ahead of it: enough to keep both
// busy, few enough to keep replay's memory flat.
const (
	drawBatch = 256
	drawAhead = 4
)

// session creates the session on first use, once the header named its cwd.
func (r *reopening) session() *session {
	if r.ss == nil {
		r.ss = r.server.newSession(r.id, r.cwd, r.journal)
		r.ss.present.PlanMayStand() // the client may show a plan: the next turn clears it
		r.restore = r.ss.agent.BeginRestore()
		if r.draw {
			drawCwd := r.recordedCwd
			if drawCwd == "" {
				drawCwd = r.cwd
			}
			r.batch = presentation.NewLineBatch(r.server.out.Writer())
			p := r.server.presenter(r.id, drawCwd, presentation.NewUpdateWriter(r.batch), r.ss.box, true)
			r.drawQ = make(chan []event.Event, drawAhead)
			r.drawDone = make(chan struct{})
			go r.drawer(p)
		}
	}
	return r.ss
}

// drawer presents queued events in order.
func (r *reopening) drawer(p *presentation.Presenter) {
	defer close(r.drawDone)
	defer r.containDraw()
	for evs := range r.drawQ {
		for _, ev := range evs {
			if h := r.server.hooks.beforeDraw; h != nil {
				h()
			}
			p.Emit(ev)
		}
	}
}

// finish waits until every queued event was drawn and written, sends the
// session's updates straight out again and releases the rebuilt history
// to the session. Idempotent.
func (r *reopening) finish() {
	if r.drawQ != nil {
		if len(r.drawing) > 0 {
			r.drawQ <- r.drawing
			r.drawing = nil
		}
		close(r.drawQ)
		<-r.drawDone
		r.drawQ = nil
		if err := r.batch.Flush(); err != nil {
			r.server.log.Debug("replay flush", zap.String("session", r.id), zap.Error(err))
		}
	}
	if r.restore != nil {
		r.restore.Done()
		r.restore = nil
	}
}

// event receives each settled event: folded into the history and, for
// session/load, queued for drawing. (Folding here, on the decoding
// goroutine, balances the two: drawing costs more than decoding.)
func (r *reopening) event(ev event.Event) error {
	r.session()
	r.events++
	r.restore.Apply(ev)
	if r.ss.tracker != nil {
		r.ss.tracker.Observe(ev)
	}
	if p, ok := ev.(event.UserPrompt); ok && r.firstPrompt == nil {
		r.firstPrompt = &p.Text
	}
	if r.drawQ != nil {
		// The first event goes out alone, so the client sees the replay
		// start at once.
		r.drawing = append(r.drawing, ev)
		if len(r.drawing) >= drawBatch || !r.drawn {
			r.drawQ <- r.drawing
			r.drawing, r.drawn = make([]event.Event, 0, drawBatch), true
		}
	}
	return nil
}

// opened sends what follows the reply that opened session id: the slash
// commands, the full model list when the reply had a shorter one, and the
// usage of a restored session.
func (s *Server) opened(id string) {
	ss, err := s.session(sdk.SessionId(id))
	if err != nil {
		return
	}
	// Marked announced before the catalog's version is read: a list that
	// arrives from now on is sent by announceModels, one that arrived
	// before is sent here.
	ss.mu.Lock()
	ss.announced = true
	stale := false
	if ss.catalog != nil {
		_, version := ss.catalog.List()
		stale = ss.optionsVersion != version
	}
	waiting := ss.afterOpened
	ss.afterOpened = nil
	ss.mu.Unlock()
	ss.send(slash.Available())
	go func() { // they may wait (for MCP servers to connect): not on the writer
		s.begin() // what a session/new's reply did not wait for, before any process
		for _, fn := range waiting {
			fn()
		}
	}()
	if stale {
		ss.sendConfigOptions()
	}
	if u := ss.agent.Usage(); u.Used > 0 {
		ss.send(sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{Used: u.Used, Size: u.Size, Cost: usageCost(u.Cost, u.Currency)}})
	}
}

// usageCost is usage_update's cost: only when a price is configured.
func usageCost(amount float64, currency string) *sdk.Cost {
	if currency == "" {
		return nil
	}
	return &sdk.Cost{Amount: amount, Currency: currency}
}

// afterOpen runs fn, on a goroutine of its own, once the reply that opened
// the session was written (after its slash commands), with whatever else
// was queued before it. Call it from the handler of the request that opens
// the session, before it returns.
func (ss *session) afterOpen(fn func()) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.afterOpened = append(ss.afterOpened, fn)
}

// containDraw ends the session/load drawing goroutine after a panic: the
// panic is logged, recorded for reopen to answer -32603, and the rest of the
// queue is drained so the decoding side never blocks on it.
func (r *reopening) containDraw() {
	v := recover()
	if v == nil {
		return
	}
	r.server.log.Error("replay drawing panicked", zap.String("session", r.id), zap.Any("panic", v),
		zap.ByteString("stack", debug.Stack()))
	r.drawFailed = sdk.NewInternalError(map[string]any{"error": fmt.Sprintf("internal error while replaying session %s", r.id)})
	for range r.drawQ {
	}
}
