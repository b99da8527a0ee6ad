// Command dsh-acp is an ACP agent for Zed and other ACP clients: with no
// arguments it serves the Agent Client Protocol on stdin/stdout, running an
// LLM loop whose tools run shell commands shown as live terminal cards.
//
// Subcommands: `chat` (a terminal client), `sessions` (list the sessions
// chat can resume), `replay` (print a session), `login` and `logout` (store
// or remove an API key), `--version`, and `help [command]`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/changes"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "chat":
			return runChat(args[1:], os.Stderr)
		case "replay":
			return runReplay(args[1:], os.Stderr)
		case "sessions":
			return runSessions(args[1:], os.Stderr)
		case "help":
			return runHelp(args[1:], os.Stdout, os.Stderr)
		case "version", "--version":
			printVersion(os.Stdout)
			return 0
		}
	}
	cfg, err := parseConfig("dsh-acp", args, os.LookupEnv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp:", err)
		return 2
	}
	if cfg.Command != "" {
		return runAuthCommand(cfg)
	}
	if isTerminal(os.Stdin) {
		// A person, not an editor: say what this is instead of reading
		// their typing as JSON-RPC.
		fmt.Fprint(os.Stderr, bareHint)
		return 2
	}
	if err := serve(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp:", err)
		return 1
	}
	return 0
}

// bareHint is what `dsh-acp` run on a terminal prints.
const bareHint = "dsh-acp is an ACP agent for editors such as Zed: it speaks JSON-RPC on stdin/stdout (see docs/zed.md).\n" +
	"To use it from this terminal, run: dsh-acp chat\n"

// serve wires the daemon and serves ACP on stdio until stdin closes, stdout
// breaks, or SIGTERM/SIGINT/SIGHUP arrives.
func serve(cfg config) error {
	log, _, closeLog, err := newLogger(cfg.LogFile, cfg.LogLevel)
	if err != nil {
		return err
	}
	defer closeLog()
	tuneGC(os.LookupEnv)
	local.ResetSignalDispositions()
	if err := local.MakeNonDumpable(); err != nil {
		log.Warn("cannot make the daemon non-dumpable", zap.Error(err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var signals signalHandlers
	defer signals.stop()

	if err := checkStateDir(cfg.StateDir); err != nil {
		return err
	}
	models := newModelSource(cfg, log)
	cred, model := models.current()
	var secrets []string
	for _, k := range []string{cfg.APIKey, cred.APIKey} {
		if k != "" {
			secrets = append(secrets, k)
		}
	}
	ex, err := newExecutor(cfg, secrets, log)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	logSandbox(log, ex, cfg.Sandbox)
	store, err := replay.OpenStore(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	box := tools.NewBuiltin(ex, tools.Config{
		OutputLimit:     cfg.OutputLimit,
		CardOutputLimit: cfg.CardOutputLimit,
		DefaultTimeout:  cfg.Timeout,
		MaxTimeout:      cfg.MaxTimeout,
	})
	ver, _ := buildVersion(debug.ReadBuildInfo())
	log.Info("serving", zap.String("version", ver), zap.Bool("model", model != nil),
		zap.String("keySource", string(cred.Source)), zap.String("stateDir", cfg.StateDir))
	if cred.SetAside != "" {
		log.Warn("stored credential not used", zap.String("why", cred.SetAside))
	}
	return acp.Serve(ctx, os.Stdin, os.Stdout, acp.Config{
		Name:     "dsh-acp",
		Version:  ver,
		Executor: ex,
		Tools:    box,
		Model:    model,
		Auth:     &acp.AuthConfig{Model: models.Model, Logout: models.Logout, Command: executable()},
		Agent: agent.Config{
			MaxTurnRequests:  cfg.MaxTurnRequests,
			Model:            cfg.Model,
			Thinking:         cfg.Thinking,
			ContextWindow:    cfg.Session.ContextWindow,
			CompactThreshold: cfg.Session.CompactThreshold,
			Price:            cfg.Session.Price,
			Logger:           log,
		},
		DefaultMode: cfg.Mode,
		Sandbox:     cfg.Sandbox,
		Store:       store,
		Changes:     sync.OnceValues(func() (*changes.Store, error) { return changes.OpenStore(cfg.StateDir, 0) }),
		Logger:      log,
		MaxLine:     cfg.MaxLine,
		// The signal handlers start a thread; installed after the first
		// reply, they do not delay it (see signalHandlers).
		Started:   func() { signals.install(cancel) },
		UserRules: userRulesPath(),
		TrustDir:  filepath.Join(cfg.StateDir, "trust"),
		MCP: mcp.Config{
			// The servers Zed names get what commands get: the daemon's
			// environment without credentials, plus the variables Zed gives.
			Env:         local.ScrubEnv(os.Environ(), cfg.AllowEnv, secrets),
			Grace:       cfg.KillGrace,
			OutputLimit: cfg.OutputLimit,
			Spill:       spillerOf(ex),
			Logger:      log,
		},
	})
}

// spillerOf is ex's spill store for MCP results, nil when it has none.
func spillerOf(ex executor.Executor) mcp.Spiller {
	if sp, ok := ex.(mcp.Spiller); ok {
		return sp
	}
	return nil
}

// logSandbox logs that an executor offers no sandbox levels at all; one
// that does logs the level it can build when it first probes.
func logSandbox(log *zap.Logger, ex executor.Executor, explicit executor.Level) {
	if _, ok := ex.(executor.Confiner); !ok {
		log.Info("sandbox: none for this executor", zap.Bool("explicit", explicit != ""))
	}
	// A confining executor probes on first use, off the start-up path,
	// and logs the level it can build then.
}

// newLogger logs to stderr, or to a file when one is named; never stdout.
// It also returns the destination, for the SDK's own logger.
func newLogger(file, level string) (*zap.Logger, io.Writer, func(), error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--log-level: %w", err)
	}
	var out io.Writer = os.Stderr
	closeFn := func() {}
	if file != "" {
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		out = f
		closeFn = func() { f.Close() }
	}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	core := zapcore.NewCore(enc, zapcore.AddSync(out), lvl)
	log := zap.New(core)
	return log, out, func() { _ = log.Sync(); closeFn() }, nil
}

// userRulesPath is the user's permission rule file ("" when no home is known).
func userRulesPath() string {
	p, err := permission.UserRulesPath(os.Getenv)
	if err != nil {
		return ""
	}
	return p
}

// signalHandlers make SIGTERM, SIGINT and SIGHUP end the daemon cleanly
// (cancelling Serve's context) and a write to a closed stdout return EPIPE
// instead of killing the process (the server treats it as the end of the
// session). They are installed once the first reply is written: os/signal
// starts a thread of its own, and until that reply nothing runs that a
// clean end would have to stop, so a signal before it ends the daemon by
// its default action.
type signalHandlers struct {
	mu      sync.Mutex
	stopped bool
	undo    func()
	// pipe keeps SIGPIPE notified for the rest of the process's life once
	// installed (by install, or by stop if install never ran): a reply
	// written during shutdown to a client that went away (the hang-up
	// watcher may start the shutdown before the first request's handler
	// writes) must return EPIPE, not kill the daemon.
	pipe chan os.Signal
}

// catchPipe notifies SIGPIPE, once. Called with mu held.
func (h *signalHandlers) catchPipe() {
	if h.pipe == nil {
		h.pipe = make(chan os.Signal, 1)
		signal.Notify(h.pipe, syscall.SIGPIPE)
	}
}

// install installs the handlers, once, unless stop came first (SIGPIPE's
// in any case).
func (h *signalHandlers) install(cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.catchPipe()
	if h.stopped || h.undo != nil {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	stopWatch := context.AfterFunc(ctx, cancel)
	h.undo = func() { stopWatch(); stop() }
}

// stop removes the TERM, INT and HUP handlers (and keeps a later install
// from installing them); SIGPIPE stays caught.
func (h *signalHandlers) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.catchPipe()
	if h.undo != nil {
		h.undo()
	}
}
