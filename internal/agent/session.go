package agent

import (
	"context"
	_ "embed"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// ModelClient streams one model response. *llm.Client implements it.
type ModelClient interface {
	// Stream sends req, passes text and reasoning pieces to onDelta as they
	// arrive, and returns the response assembled so far, also with an
	// error. The error is ctx's when ctx ended.
	Stream(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error)
}

// Toolbox is the set of tools a session offers the model.
type Toolbox interface {
	// Lookup finds a tool by the name the model calls it by.
	Lookup(name string) (tools.Tool, bool)
	// All lists the tools, in the order the model should see them.
	All() []tools.Tool
	// PromptSection is the tools' part of the system prompt of session s
	// ("" for none); it depends on nothing but s.
	PromptSection(s tools.Session) string
}

// DefaultMaxTurnRequests bounds a turn's model requests when
// Config.MaxTurnRequests is zero.
const DefaultMaxTurnRequests = 50

// Config tunes a Session. Zero fields take the defaults.
type Config struct {
	// SystemPrompt replaces the embedded base prompt; the tools' section is
	// appended to either.
	SystemPrompt string
	// MaxTurnRequests bounds the model requests of one turn
	// (DefaultMaxTurnRequests); past it the turn ends max_turn_requests.
	MaxTurnRequests int
	// Model is the model the session asks for at first ("": the client's
	// own, when it names one); SetModel changes it.
	Model string
	// Thinking is the thinking setting the session starts with (the
	// provider's default when empty); SetThinking changes it.
	Thinking llm.Thinking
	// ContextWindow is a model's context window, in tokens (nil:
	// ContextWindow, the built-in table, else DefaultContextWindow).
	ContextWindow func(model string) int
	// CompactThreshold is the share of the window past which the history
	// is compacted before a request (DefaultCompactThreshold; at most 0.95).
	CompactThreshold float64
	// Price, when set, gives usage a cost.
	Price *Price
	// InstructionsLimit caps the AGENTS.md text in the system prompt, in
	// bytes (DefaultInstructionsLimit); negative reads none.
	InstructionsLimit int
	// OmitToolCallReasoning stops sending back the reasoning of messages that
	// made tool calls. By default it is sent back (DeepSeek's thinking mode
	// rejects a conversation whose tool-call messages lost it); the
	// reasoning of answers without tool calls is never sent back.
	OmitToolCallReasoning bool
	// Logger receives ids, counts and durations, never content.
	Logger *zap.Logger
}

// Session is one conversation. Its methods are safe for concurrent use; turns
// (Prompt, RunDirect) and Restore run one at a time.
type Session struct {
	id, cwd  string
	model    ModelClient
	box      Toolbox
	sink     event.Sink
	approver Approver
	cfg      Config
	files    tools.ClientFiles // the client's file methods; nil: none (SetClientFiles)
	log      *zap.Logger
	base     string // the rendered base system prompt

	turn   chan struct{} // holds a token while a turn (or Restore) runs
	hist   history       // guarded by turn
	system string        // this turn's system prompt; guarded by turn
	acct   *ledger       // the history's accounting, readable without the turn

	modelMu   sync.Mutex
	modelName string
	thinking  llm.Thinking   // guarded by modelMu
	level     executor.Level // the sandbox level; guarded by modelMu
	roots     []string       // additional directories (SetAdditionalDirectories); guarded by modelMu

	noticeMu sync.Mutex
	notices  []string
	infos    []string // told to the user in the next turn
}

//go:embed system.md
var baseSystemPrompt string

// NewSession returns a session with the given id and absolute cwd. model may
// be nil (no model is configured; prompts then explain how
// to configure one, and direct commands still work). box may be nil (no
// tools); approver may be nil (every call is allowed). Every event the
// session produces goes to sink.
func NewSession(id, cwd string, model ModelClient, box Toolbox, sink event.Sink, approver Approver, cfg Config) *Session {
	if cfg.MaxTurnRequests <= 0 {
		cfg.MaxTurnRequests = DefaultMaxTurnRequests
	}
	if c, ok := model.(*llm.Client); ok && c == nil {
		model = nil // a typed nil is as good as none
	}
	if cfg.ContextWindow == nil {
		cfg.ContextWindow = ContextWindow
	}
	if cfg.CompactThreshold <= 0 || cfg.CompactThreshold > 0.95 {
		cfg.CompactThreshold = DefaultCompactThreshold
	}
	if cfg.InstructionsLimit == 0 {
		cfg.InstructionsLimit = DefaultInstructionsLimit
	}
	if named, ok := model.(interface{ Model() string }); ok && cfg.Model == "" {
		cfg.Model = named.Model()
	}
	if box == nil {
		box = emptyBox{}
	}
	if sink == nil {
		sink = event.SinkFunc(func(event.Event) {})
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Session{
		id: id, cwd: cwd, model: model, box: box, sink: sink, approver: approver, cfg: cfg,
		log:       log.With(zap.String("session", id)),
		turn:      make(chan struct{}, 1),
		acct:      &ledger{},
		modelName: cfg.Model,
		thinking:  cfg.Thinking,
	}
	s.hist = newHistory(s.acct)
	s.base = renderBase(cfg.SystemPrompt, cwd)
	// The tools' section (which may ask the executor for its default
	// level) joins at the first turn's refreshSystem, off the session/new
	// reply's way.
	s.system = s.base
	return s
}

// renderBase fills the base prompt's one field, the working directory (by
// hand, as summaryPrompt does); a custom prompt is used as is.
func renderBase(custom, cwd string) string {
	if custom != "" {
		return strings.TrimSpace(custom)
	}
	return strings.TrimSpace(strings.ReplaceAll(baseSystemPrompt, "{{.Cwd}}", cwd))
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// Cwd is the session's working directory.
func (s *Session) Cwd() string { return s.cwd }

// QueueNotice queues context (a background task's completion notice) for the
// next model request, which carries it once. Safe from any goroutine; it
// does not start a turn.
func (s *Session) QueueNotice(text string) {
	s.noticeMu.Lock()
	defer s.noticeMu.Unlock()
	s.notices = append(s.notices, text)
}

// QueueInfo queues a message for the user (an Info event, never sent to
// the model), told in the next turn right after its prompt or command.
// Safe from any goroutine; it does not start a turn.
func (s *Session) QueueInfo(text string) {
	s.noticeMu.Lock()
	defer s.noticeMu.Unlock()
	s.infos = append(s.infos, text)
}

// tellInfos records the queued messages for the user. The turn token must
// be held.
func (s *Session) tellInfos() {
	for _, ev := range s.takeInfos() {
		s.record(ev)
	}
}

// takeInfos takes the messages queued with QueueInfo, as Info events.
func (s *Session) takeInfos() []event.Event {
	s.noticeMu.Lock()
	infos := s.infos
	s.infos = nil
	s.noticeMu.Unlock()
	evs := make([]event.Event, 0, len(infos))
	for _, text := range infos {
		evs = append(evs, event.Info{Text: text})
	}
	return evs
}

// SetAdditionalDirectories sets the session's additional directories
// (absolute, checked by the caller): its commands may write them as they
// may the working directory, and the system prompt names them from the
// next turn on.
func (s *Session) SetAdditionalDirectories(dirs []string) {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	s.roots = slices.Clone(dirs)
}

// AdditionalDirectories are the session's additional directories.
func (s *Session) AdditionalDirectories() []string {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	return s.roots
}

// rootsSection tells the model of the additional directories; "" when none.
func rootsSection(dirs []string) string {
	if len(dirs) == 0 {
		return ""
	}
	return "The project also has these directories, which commands may use and write as they may the working directory: " +
		strings.Join(dirs, ", ") + "."
}

// SetSandbox sets the sandbox level the session's commands run at (empty:
// the executor's default). A call the permission step gives a level of its
// own (Approval.Level) runs at that one. The system prompt states the level
// from the next turn on.
func (s *Session) SetSandbox(l executor.Level) {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	s.level = l
}

// Sandbox is the session's sandbox level ("" until SetSandbox).
func (s *Session) Sandbox() executor.Level {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	return s.level
}

func (s *Session) takeNotices() []string {
	s.noticeMu.Lock()
	defer s.noticeMu.Unlock()
	n := s.notices
	s.notices = nil
	return n
}

// acquire takes the turn token, or gives up when ctx ends first.
func (s *Session) acquire(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case s.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Session) release() { <-s.turn }

// record emits ev and folds it into the history.
func (s *Session) record(ev event.Event) {
	s.sink.Emit(ev)
	s.hist.apply(ev)
}

// recordAll records events that follow each other with nothing in between
// as one batch (event.EmitAll: the journal writes them with one write).
func (s *Session) recordAll(evs ...event.Event) {
	event.EmitAll(s.sink, evs...)
	for _, ev := range evs {
		s.hist.apply(ev)
	}
}

// Restore replaces the history with the one the recorded events describe
// (UserPrompt, Notice, AssistantMessage, ToolCall, ToolResult, TurnEnd,
// Compaction, Usage, Instructions; others are ignored), exactly as the live
// session had it, compactions included. The events pass
// through replay's Settler first, so a call that never got a result (the
// daemon died mid-call) is answered as a replay shows it; Restore returns
// those synthetic results, in order. It waits for a running turn to end.
func (s *Session) Restore(events []event.Event) []event.ToolResult {
	r := s.BeginRestore()
	for _, ev := range events {
		r.Apply(ev)
	}
	return r.Done()
}

// Restorer rebuilds a session's history one event at a time, so a caller
// streaming a journal need not hold it all. While it is open the session
// runs no turn.
type Restorer struct {
	s       *Session
	settler *replay.Settler
	emitted []event.Event // what the settler passed on for the current Apply
	made    []event.ToolResult
}

// BeginRestore waits for a running turn to end, empties the history and
// holds the session until Done.
func (s *Session) BeginRestore() *Restorer {
	s.turn <- struct{}{}
	s.acct.reset()
	s.hist = newHistory(s.acct)
	r := &Restorer{s: s}
	r.settler = replay.NewSettler(func(ev event.Event) error {
		r.emitted = append(r.emitted, ev)
		r.s.hist.apply(ev)
		return nil
	})
	return r
}

// Apply folds one recorded event into the history (see Restore). Events
// already settled (as session/load streams them) pass unchanged.
func (r *Restorer) Apply(ev event.Event) {
	r.emitted = r.emitted[:0]
	_ = r.settler.Push(ev) // the emit function never fails
	r.collect(len(r.emitted) - 1)
}

// Done answers calls left without a result, releases the session and
// returns the synthetic results the settler made. Call it once.
func (r *Restorer) Done() []event.ToolResult {
	r.emitted = r.emitted[:0]
	_ = r.settler.Close()
	r.collect(len(r.emitted))
	r.s.release()
	return r.made
}

// collect keeps the synthetic results among the first n emitted events.
func (r *Restorer) collect(n int) {
	for _, ev := range r.emitted[:max(n, 0)] {
		if res, ok := ev.(event.ToolResult); ok {
			r.made = append(r.made, res)
		}
	}
}

func (s *Session) toolDefs() []llm.ToolDef {
	all := s.box.All()
	defs := make([]llm.ToolDef, 0, len(all))
	for _, t := range all {
		defs = append(defs, llm.ToolDef{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
	}
	return defs
}

func (s *Session) toolSession() tools.Session {
	return tools.Session{ID: s.id, Cwd: s.cwd, Roots: s.AdditionalDirectories(), Level: s.Sandbox(), Files: s.files}
}

// SetClientFiles gives the session's tool calls the client's file methods
// (nil: none). Call it before the session's first turn.
func (s *Session) SetClientFiles(f tools.ClientFiles) { s.files = f }

// emptyBox is the toolbox of a session given none.
type emptyBox struct{}

func (emptyBox) Lookup(string) (tools.Tool, bool)   { return nil, false }
func (emptyBox) All() []tools.Tool                  { return nil }
func (emptyBox) PromptSection(tools.Session) string { return "" }
