// Command dsh-acp is an ACP agent for Zed and other ACP clients: with no
// arguments it serves the Agent Client Protocol on stdin/stdout, running an
// LLM loop whose tools run shell commands shown as live terminal cards.
//
// Subcommands: `chat` (a terminal client) and `replay` (print a session).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "chat":
			return runChat(args[1:])
		case "replay":
			return runReplay(args[1:])
		case "version", "--version":
			fmt.Println("dsh-acp", version)
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
	if err := serve(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp:", err)
		return 1
	}
	return 0
}

// serve wires the daemon and serves ACP on stdio until stdin closes, stdout
// breaks, or SIGTERM/SIGINT/SIGHUP arrives.
func serve(cfg config) error {
	log, logOut, closeLog, err := newLogger(cfg.LogFile, cfg.LogLevel)
	if err != nil {
		return err
	}
	defer closeLog()
	tuneGC(os.LookupEnv)
	local.ResetSignalDispositions()
	if err := local.MakeNonDumpable(); err != nil {
		log.Warn("cannot make the daemon non-dumpable", zap.Error(err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	// With SIGPIPE handled, a write to a closed stdout returns EPIPE instead
	// of killing the process; the server treats it as the end of the session.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	var secrets []string
	if cfg.APIKey != "" {
		secrets = append(secrets, cfg.APIKey)
	}
	ex, err := local.New(local.Config{
		DefaultTimeout: cfg.Timeout,
		MaxTimeout:     cfg.MaxTimeout,
		Grace:          cfg.KillGrace,
		StateDir:       cfg.StateDir,
		AllowEnv:       cfg.AllowEnv,
		SecretValues:   secrets,
		Logger:         log,
	})
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	store, err := replay.OpenStore(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	box := tools.NewBash(ex, tools.Config{
		OutputLimit:     cfg.OutputLimit,
		CardOutputLimit: cfg.CardOutputLimit,
		DefaultTimeout:  cfg.Timeout,
		MaxTimeout:      cfg.MaxTimeout,
	})
	var model agent.ModelClient
	if cfg.APIKey != "" {
		model = llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model, IdleTimeout: cfg.ModelIdle, Logger: log})
	}
	log.Info("serving", zap.String("version", version), zap.Bool("model", model != nil), zap.String("stateDir", cfg.StateDir))
	return acp.Serve(ctx, os.Stdin, os.Stdout, acp.Config{
		Name:     "dsh-acp",
		Version:  version,
		Executor: ex,
		Tools:    box,
		Model:    model,
		Agent: agent.Config{
			MaxTurnRequests: cfg.MaxTurnRequests,
			HistoryBudget:   cfg.HistoryBudget,
			Logger:          log,
		},
		DefaultMode: cfg.Mode,
		Store:       store,
		Logger:      log,
		SDKLogger:   slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
		MaxLine:     cfg.MaxLine,
		UserRules:   userRulesPath(),
	})
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
