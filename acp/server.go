// Package acp is the daemon's ACP side, the top floor: one thin handler per
// method over the session registry, on the JSON-RPC connection of package
// internal/rpc.
//
// Where things go:
//   - a request: a method in the methods table (dispatch.go), decoded once;
//     what must happen in wire order before the next line is read goes in
//     Server.Preempt (initialize, cancel, the prompts' turns);
//   - a session setting (a config option, journaled and restored): a row of
//     settings (settings.go);
//   - a client capability: a field of clientCaps and, for tools, a narrow
//     interface in package tools (caps.go);
//   - a permission kind: package internal/approval (acp only puts its
//     questions: asker.go);
//   - an update shape: presentation (its one encoder, UpdateWriter);
//   - a slash command: a row of internal/slash's Commands, answered in
//     commandReply (commands.go).
//
// Known limits: the turn of a prompt whose session does not exist is
// opened anyway and ends with its error reply; a session's level guessed
// before the executor is ready may change once (announced with
// config_option_update, before its first turn runs).
package acp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/changes"
	"github.com/dsh-acp/dsh-acp/internal/configoption"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/internal/rpc"
	"github.com/dsh-acp/dsh-acp/internal/sandboxlevel"
	"github.com/dsh-acp/dsh-acp/internal/turns"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Config is what the daemon is built from. Executor, Tools and Store are
// required; Model may be nil (no model configured: `!` commands still work,
// prompts that need the model get ACP's auth-required error).
type Config struct {
	Name, Version string

	Executor executor.Executor
	Tools    *tools.Registry
	Model    agent.ModelClient
	Agent    agent.Config
	Store    *replay.Store
	// Changes opens the change store (internal/changes), once, on first
	// use (a session's first look, after the reply that opened it): with
	// it every session tracks what its commands do to its directory's
	// files and offers /undo; nil tracks nothing.
	Changes func() (*changes.Store, error)
	Logger  *zap.Logger
	// MaxLine caps one inbound JSON-RPC line (default rpc.DefaultMaxLine);
	// a longer line is answered -32600 and skipped.
	MaxLine int
	// CardFlushInterval and CardFlushBytes coalesce live card output (see
	// presentation.FlushPolicy; defaults one frame at 60 Hz and 64 KiB).
	CardFlushInterval time.Duration
	CardFlushBytes    int
	// ShutdownGrace bounds how long shutdown waits for the replies to the
	// requests already read and for processes to die (default 5 s).
	ShutdownGrace time.Duration
	// ModelsWait bounds how long the first session/new waits for the
	// provider's model list (default 2 s); a list that comes later is
	// announced with config_option_update.
	ModelsWait time.Duration

	// DefaultMode is a new session's permission mode (default ask).
	DefaultMode permission.Mode
	// Sandbox is the sandbox level new sessions start at, asked for
	// explicitly (--sandbox): journaled with each session, and refused
	// command by command where it cannot be built. Empty means the
	// executor's default level (executor.Confiner), chosen, not asked for.
	Sandbox executor.Level
	// UserRules is the user's permission rule file ("" for none); each
	// session's project file is read from its cwd. The user's MCP
	// allowance file sits beside it (mcp.UserRulesPath).
	UserRules string
	// TrustDir keeps the project rule files the user approved (see
	// permission.TrustStore); empty means none is ever trusted, so project
	// files contribute only their deny rules.
	TrustDir string

	// Auth, when set, offers terminal login and looks the model up again
	// whenever a prompt needs it (see AuthConfig); Model is then the first
	// answer.
	Auth *AuthConfig

	// MCP is how each session's MCP servers are started and called (the
	// zero value works; Logger and the client name default to the
	// daemon's).
	MCP mcp.Config

	// Started, when set, is called once, when the client's first message
	// other than initialize arrives, before it is handled: set-up that the
	// initialize reply need not wait for goes there (the daemon installs its
	// signal handlers in it). Nothing the daemon starts (a session, a
	// command, an MCP server) can start before it.
	Started func()
}

func (c *Config) defaults() {
	if c.Name == "" {
		c.Name = "dsh-acp"
	}
	if c.MaxLine <= 0 {
		c.MaxLine = rpc.DefaultMaxLine
	}
	if c.CardFlushInterval <= 0 {
		c.CardFlushInterval = presentation.DefaultFlushInterval
	}
	if c.CardFlushBytes <= 0 {
		c.CardFlushBytes = presentation.DefaultFlushBytes
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 5 * time.Second
	}
	if c.ModelsWait <= 0 {
		c.ModelsWait = 2 * time.Second
	}
	if c.Agent.ContextWindow == nil {
		c.Agent.ContextWindow = agent.ContextWindow
	}
	if named, ok := c.Model.(interface{ Model() string }); ok && c.Agent.Model == "" && c.Model != nil {
		c.Agent.Model = named.Model()
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.DefaultMode == "" {
		c.DefaultMode = permission.ModeAsk
	}
}

// Server is one ACP connection's agent.
type Server struct {
	cfg         Config
	changesOnce sync.Once // the change store's failure is logged once
	log         *zap.Logger
	conn        *rpc.Conn
	updates     *presentation.UpdateWriter // session/update notifications: the one encoder of updates
	turns       *turns.Registry
	models      *llm.InForce // the model client in force, shared by all sessions
	catalog     *llm.Catalog // the provider's models, for the model option
	trust       *permission.TrustStore
	hooks       hooks
	sandbox     sandboxlevel.Offer // the levels the executor offers, a new session's level

	mu       sync.Mutex
	caps     clientCaps // negotiated at initialize
	sessions map[string]*session
	closing  bool
	running  sync.WaitGroup // turns in flight

	stopNotices func()
	out         *rpc.Output
	started     sync.Once // runStarted
	begun       sync.Once // begin
}

// begin starts, once, what no reply needs: Config.Started (the daemon's
// signal handlers), the hang-up watcher (a thread blocked in ppoll) and the
// model list's fetch; it returns once they are done (a second caller waits
// for the first). Preempt calls it for every message other than
// initialize and session/new, before that message is handled. A
// session/new waits only for Config.Started (runStarted: a write to a
// closed stdout must fail with EPIPE, not kill the daemon), not for the
// watcher's thread, which would compete with its reply: the rest begins
// once that reply is written (opened), before whatever waited for it, and
// before any MCP server starts (startMCP). So nothing the daemon starts (a
// command, an MCP server, the sandbox probe) starts before it. (The
// executor builds itself after the first session/new reply:
// settleSandbox.)
func (s *Server) begin() {
	s.runStarted()
	s.begun.Do(func() {
		s.out.Watch()
		if s.catalog != nil {
			s.catalog.Start()
		}
	})
}

// runStarted runs Config.Started, once; a second caller waits for the first.
func (s *Server) runStarted() {
	s.started.Do(func() {
		if s.cfg.Started != nil {
			s.cfg.Started()
		}
	})
}

// Serve speaks ACP on in/out until in reaches EOF or fails, out is gone (a
// failed write, or a hang-up seen without writing), or ctx ends. It then
// cancels every turn, answers every request already read (unless out is
// gone), kills every process the daemon started and closes the journals,
// all within ShutdownGrace. It returns nil on a clean end.
func Serve(ctx context.Context, in io.Reader, out io.Writer, cfg Config) error {
	return serve(ctx, in, out, cfg, hooks{})
}

// serve is Serve with test hooks.
func serve(ctx context.Context, in io.Reader, out io.Writer, cfg Config, h hooks) error {
	cfg.defaults()
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		turns:    turns.New(),
		models:   newModels(cfg),
		trust:    permission.NewTrustStore(cfg.TrustDir),
		hooks:    h,
		sessions: map[string]*session{},
		sandbox:  sandboxlevel.New(cfg.Executor, cfg.Sandbox),
	}
	if cfg.Agent.Model != "" {
		mctx, stopModels := context.WithCancel(ctx)
		defer stopModels()
		s.catalog = llm.NewCatalog(mctx, s.models, cfg.Agent.Model, cfg.Logger, s.announceModels)
	}
	s.out = rpc.NewOutput(out, cfg.Logger)
	defer s.out.Close()
	s.updates = presentation.NewUpdateWriter(s.out.Writer())
	if h.input != nil {
		in = h.input(in)
	}
	s.conn = rpc.NewConn(in, s.out, s, rpc.Options{MaxLine: cfg.MaxLine, Handler: s.handle, Logger: cfg.Logger})
	s.stopNotices = tools.WatchCompletions(cfg.Executor, s.deliverNotice)
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go s.conn.Run(rctx)

	var why string
	select {
	case <-s.conn.Done():
		why = "end of input"
		if err := s.conn.Err(); err != nil {
			why = err.Error()
		}
	case <-ctx.Done():
		why = "stopped"
	case <-s.out.Broken():
		why = "stdout closed"
	}
	stopReading()
	s.log.Info("shutting down", zap.String("reason", why))
	return s.shutdown()
}

// shutdown cancels all turns, waits for the replies to every request
// already read, kills every process group and closes the journals, all
// bounded by ShutdownGrace.
func (s *Server) shutdown() error {
	s.turns.CancelAll()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	// Processes die while the cancelled turns answer: commands and MCP
	// servers alike.
	killed := make(chan error, 1)
	go func() { killed <- s.cfg.Executor.Shutdown(ctx) }()
	mcpDone := make(chan struct{})
	go func() { closeAllMCP(ctx, s.openSessions()); close(mcpDone) }()
	if n := s.conn.Wait(ctx); n > 0 {
		s.log.Warn("exiting with requests unanswered", zap.Int("count", n))
	}

	s.mu.Lock()
	s.closing = true
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	err := <-killed
	<-mcpDone
	s.stopNotices()
	// The cancelled turns still record their last events (the killed
	// command's result, the turn end) before the journals close.
	waitBounded(ctx, &s.running)
	for _, ss := range sessions {
		ss.close(ctx)
	}
	return err
}

// invalidParams is -32602 whose message says what is wrong (clients show
// the message; the SDK's own constructor says only "Invalid params").
func invalidParams(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &sdk.RequestError{Code: -32602, Message: "Invalid params: " + msg, Data: map[string]any{"error": msg}}
}

// Authenticate re-reads the stored credential for the terminal method (see
// auth.go).
func (s *Server) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (resp sdk.AuthenticateResponse, err error) {
	return s.authenticate(p)
}

// checkCwd enforces an absolute, existing directory.
func checkCwd(cwd string) error {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return invalidParams("cwd must be an absolute path, got %q", cwd)
	}
	fi, err := os.Stat(cwd)
	if err != nil {
		return invalidParams("cwd %q does not exist", cwd)
	}
	if !fi.IsDir() {
		return invalidParams("cwd %q is not a directory", cwd)
	}
	return nil
}

// NewSession creates a session with a journal.
func (s *Server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (resp opened, err error) {
	if err := s.checkSessionCwd(ctx, p.Cwd); err != nil {
		return resp, err
	}
	roots, err := s.checkRoots(ctx, p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return resp, err
	}
	id := replay.NewSessionID()
	j, err := s.cfg.Store.Create(id, filepath.Clean(p.Cwd), s.cfg.Version)
	if err != nil {
		s.log.Error("journal create failed", zap.String("session", id), zap.Error(err))
		return resp, sdk.NewInternalError(map[string]any{"error": "cannot create the session journal: " + err.Error()})
	}
	ss := s.newSession(id, filepath.Clean(p.Cwd), j)
	ss.afterOpen(j.SyncSoon) // the journal's first fsync, off the reply's way
	s.setRoots(ss, roots)
	s.startMCP(ss, p.McpServers) // before a prompt can find the session
	ss.startSandbox(nil, true)
	ss.afterOpen(ss.reportModel)
	if err := s.register(ss); err != nil {
		ss.close(ctx)
		return resp, err
	}
	s.log.Info("session/new", zap.String("session", id), zap.Int("mcpServers", len(p.McpServers)))
	s.waitModels(ctx)
	return opened{id, sdk.NewSessionResponse{SessionId: sdk.SessionId(id), Modes: configoption.ModeState(ss.policy.Mode()), ConfigOptions: ss.configOptions()}}, nil
}

// waitModels lets a reply that opens a session carry the provider's model
// list when it comes within ModelsWait (a later one is announced).
func (s *Server) waitModels(ctx context.Context) {
	if s.catalog != nil {
		s.catalog.Wait(ctx, s.cfg.ModelsWait)
	}
}

func (s *Server) register(ss *session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return sdk.NewInternalError(map[string]any{"error": "daemon is shutting down"})
	}
	if _, dup := s.sessions[ss.id]; dup {
		return invalidParams("session %s is already open", ss.id)
	}
	s.sessions[ss.id] = ss
	return nil
}

// beginTurn counts a turn in flight, unless the daemon is shutting down.
func (s *Server) beginTurn() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return sdk.NewInternalError(map[string]any{"error": "daemon is shutting down"})
	}
	s.running.Add(1)
	return nil
}

// waitBounded waits for wg until ctx ends.
func waitBounded(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (s *Server) session(id sdk.SessionId) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[string(id)]
	if !ok {
		return nil, invalidParams("unknown session %q", string(id))
	}
	return ss, nil
}

// prompt runs one turn and answers it. Its context is its turn's, opened
// in wire order by Preempt: a cancel applies to exactly the prompts before
// it on the wire. It waits until the session's previous prompt was
// answered, so replies keep wire order relative to the next prompt's
// updates.
func (s *Server) prompt(r *rpc.Request, pc *promptCall) {
	if pc.err != nil {
		r.Reply(nil, pc.err)
		return
	}
	t := pc.turn
	defer func() {
		r.Reply(nil, rpc.InternalError(sdk.AgentMethodSessionPrompt)) // after a panic: answered first
		s.turns.Answered(t)
	}()
	t.WaitPrevious()
	reason, err := s.runTurn(t.Context(), pc.p)
	if err != nil {
		r.Reply(nil, err)
		return
	}
	r.Reply(sdk.PromptResponse{StopReason: sdk.StopReason(reason)}, nil)
}

// runTurn runs the prompt p of a session in ctx.
func (s *Server) runTurn(ctx context.Context, p sdk.PromptRequest) (event.StopReason, error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return "", err
	}
	if err := s.needModel(p.Prompt); err != nil {
		return "", err
	}
	if err := s.beginTurn(); err != nil {
		return "", err
	}
	defer s.running.Done()
	if !ss.beginTurn() {
		return "", invalidParams("session %s is closed", ss.id)
	}
	defer ss.endTurn()
	start := time.Now()
	reason := ss.prompt(ctx, p.Prompt)
	s.log.Info("session/prompt", zap.String("session", ss.id), zap.String("stopReason", string(reason)), zap.Duration("took", time.Since(start)))
	return reason, nil
}

// CloseSession cancels the session's turn, kills its tasks and frees it.
func (s *Server) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (resp sdk.CloseSessionResponse, err error) {
	s.mu.Lock()
	ss, ok := s.sessions[string(p.SessionId)]
	delete(s.sessions, string(p.SessionId))
	s.mu.Unlock()
	if !ok {
		return resp, invalidParams("unknown session %q", string(p.SessionId))
	}
	s.turns.CancelSession(ss.id)
	kctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	s.cfg.Executor.KillOwned(kctx, ss.id)
	ss.close(kctx)
	s.log.Info("session/close", zap.String("session", ss.id))
	return resp, nil
}

// ListSessions lists journaled sessions, newest first.
func (s *Server) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (resp sdk.ListSessionsResponse, err error) {
	cwd, cursor := "", ""
	if p.Cwd != nil {
		cwd = filepath.Clean(*p.Cwd)
	}
	if p.Cursor != nil {
		cursor = *p.Cursor
	}
	list, next, err := s.cfg.Store.List(cwd, cursor, 50)
	if err != nil {
		return resp, invalidParams("%v", err)
	}
	resp.Sessions = make([]sdk.SessionInfo, 0, len(list))
	for _, it := range list {
		info := sdk.SessionInfo{SessionId: sdk.SessionId(it.ID), Cwd: it.Cwd}
		if it.Title != "" {
			info.Title = sdk.Ptr(it.Title)
		}
		if !it.UpdatedAt.IsZero() {
			info.UpdatedAt = sdk.Ptr(it.UpdatedAt.UTC().Format(time.RFC3339))
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	if next != "" {
		resp.NextCursor = sdk.Ptr(next)
	}
	return resp, nil
}

// LoadSession replays a journaled session, then keeps it open.
func (s *Server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (resp opened, err error) {
	roots, err := s.checkRoots(ctx, p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return resp, err
	}
	ss, err := s.reopen(string(p.SessionId), p.Cwd, true)
	if err != nil {
		return resp, err
	}
	s.setRoots(ss, roots) // else the recorded ones (reopen)
	s.startMCP(ss, p.McpServers)
	s.waitModels(ctx)
	return opened{ss.id, sdk.LoadSessionResponse{Modes: configoption.ModeState(ss.policy.Mode()), ConfigOptions: ss.configOptions()}}, nil
}

// ResumeSession restores a journaled session without replaying it.
func (s *Server) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (resp opened, err error) {
	roots, err := s.checkRoots(ctx, p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return resp, err
	}
	ss, err := s.reopen(string(p.SessionId), p.Cwd, false)
	if err != nil {
		return resp, err
	}
	s.setRoots(ss, roots) // else the recorded ones (reopen)
	s.startMCP(ss, p.McpServers)
	s.waitModels(ctx)
	return opened{ss.id, sdk.ResumeSessionResponse{Modes: configoption.ModeState(ss.policy.Mode()), ConfigOptions: ss.configOptions()}}, nil
}

// deliverNotice queues a background task's completion notice on its owning
// session; false drops it (the session is gone).
func (s *Server) deliverNotice(owner, text string) (delivered bool) {
	defer func() { // an executor goroutine: contain a panic, drop the notice
		if p := recover(); p != nil {
			s.log.Error("notice delivery panicked", zap.String("session", owner), zap.Any("panic", p))
			delivered = false
		}
	}()
	s.mu.Lock()
	ss, ok := s.sessions[owner]
	s.mu.Unlock()
	if !ok {
		return false
	}
	ss.agent.QueueNotice(text)
	return true
}
