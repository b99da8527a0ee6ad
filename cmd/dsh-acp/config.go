package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/ssh"
	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/internal/rpc"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Built-in defaults of the model endpoint.
const (
	defaultBaseURL = "https://api.deepseek.com"
	defaultModel   = "deepseek-flash"
)

// config is everything the daemon is configured with: flags, with
// environment variables as fallbacks. The API key is environment-only (or
// stored by `dsh-acp login`: see credentials.go).
type config struct {
	// Command is "login" or "logout" for those subcommands, "" to serve.
	Command         string
	BaseURL         string
	Model           string
	BaseURLSet      bool   // BaseURL came from --base-url or DSH_BASE_URL
	ModelSet        bool   // Model came from --model or DSH_MODEL
	APIKey          string // from DSH_API_KEY or DEEPSEEK_API_KEY only
	StateDir        string
	LogFile         string
	LogLevel        string
	Timeout         time.Duration
	MaxTimeout      time.Duration
	KillGrace       time.Duration
	OutputLimit     int
	CardOutputLimit int
	MaxLine         int
	MaxTurnRequests int
	ModelIdle       time.Duration
	AllowEnv        []string
	Mode            permission.Mode
	// Sandbox is the sandbox level asked for; "" is auto (workspace where
	// bubblewrap can start, else off).
	Sandbox executor.Level
	// Thinking is new sessions' thinking setting ("": the provider's).
	Thinking llm.Thinking
	Session  agent.Config // the context window, compaction threshold, price
	// Executor is "local" or an ssh://[user@]host[:port][/path] address
	// (SSHTarget is then set); SSHIdentity and SSHKnownHosts configure it.
	Executor      string
	SSHTarget     *ssh.Target
	SSHIdentity   string
	SSHKnownHosts string
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// envLookup is os.LookupEnv, replaceable in tests.
type envLookup func(string) (string, bool)

func envOr(env envLookup, name, def string) string {
	if v, ok := env(name); ok && v != "" {
		return v
	}
	return def
}

// defaultStateDir is $XDG_STATE_HOME/dsh-acp, else ~/.local/state/dsh-acp.
// A relative XDG_STATE_HOME is ignored, as the XDG Base Directory
// specification says. It is the one place the state directory is resolved.
func defaultStateDir(env envLookup) string {
	if d := envOr(env, "XDG_STATE_HOME", ""); filepath.IsAbs(d) {
		return filepath.Join(d, "dsh-acp")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "dsh-acp-state")
	}
	return filepath.Join(home, ".local", "state", "dsh-acp")
}

// parseConfig reads flags (args excludes the program name) with
// environment fallbacks. Usage goes to usage.
func parseConfig(name string, args []string, env envLookup, usage io.Writer) (config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usage)
	cf := addConfigFlags(fs, env)
	fs.Usage = func() {
		fmt.Fprintf(usage, "Usage: %s [flags]            serve ACP on stdin/stdout\n", name)
		fmt.Fprintf(usage, "       %s chat [flags]       a terminal client for this (or any) ACP agent\n", name)
		fmt.Fprintf(usage, "       %s sessions           list the sessions chat can resume\n", name)
		fmt.Fprintf(usage, "       %s replay FILE|ID     print a journaled session\n", name)
		fmt.Fprintf(usage, "       %s login [flags]      check an API key with the provider and store it for you\n", name)
		fmt.Fprintf(usage, "       %s logout             remove the stored key\n", name)
		fmt.Fprintf(usage, "       %s --version          print the version and commit\n", name)
		fmt.Fprintf(usage, "       %s help [command]     this, or a command's own usage\n\n", name)
		fmt.Fprintf(usage, "The API key is read from DSH_API_KEY or DEEPSEEK_API_KEY (never a flag), else from what login stored.\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	command := ""
	if fs.NArg() > 0 && (fs.Arg(0) == "login" || fs.Arg(0) == "logout") {
		// `dsh-acp [flags] login [flags]`: a client runs the agent's own
		// command line with "login" appended.
		command = fs.Arg(0)
		fs.Usage = func() { authUsage(usage, command, fs) }
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return config{}, err
		}
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c, err := cf.config(fs)
	c.Command = command
	return c, err
}

// configFlags is the daemon's flags, registered on a flag set with their
// environment fallbacks: `dsh-acp` parses them alone, `dsh-acp chat`
// beside its own and forwards the ones set to the agent it spawns.
type configFlags struct {
	c        config
	mode     *string
	sandbox  *string
	thinking *string
	allow    stringList
	session  sessionFlags
	env      envLookup
	names    map[string]bool // the daemon's flag names
}

// addConfigFlags registers the daemon's flags on fs.
func addConfigFlags(fs *flag.FlagSet, env envLookup) *configFlags {
	cf := &configFlags{env: env, names: map[string]bool{}}
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	c := &cf.c
	fs.StringVar(&c.BaseURL, "base-url", envOr(env, "DSH_BASE_URL", defaultBaseURL), "OpenAI-compatible API base URL (env DSH_BASE_URL)")
	fs.StringVar(&c.Model, "model", envOr(env, "DSH_MODEL", defaultModel), "model name (env DSH_MODEL)")
	fs.StringVar(&c.StateDir, "state-dir", envOr(env, "DSH_STATE_DIR", defaultStateDir(env)), "where session journals and spill files live (env DSH_STATE_DIR)")
	fs.StringVar(&c.LogFile, "log-file", envOr(env, "DSH_LOG_FILE", ""), "log to this file instead of stderr (env DSH_LOG_FILE)")
	fs.StringVar(&c.LogLevel, "log-level", envOr(env, "DSH_LOG_LEVEL", "info"), "debug, info, warn or error (env DSH_LOG_LEVEL)")
	fs.DurationVar(&c.Timeout, "timeout", tools.DefaultTimeout, "default timeout of a foreground command")
	fs.DurationVar(&c.MaxTimeout, "max-timeout", tools.DefaultMaxTimeout, "cap on any foreground command's timeout")
	fs.DurationVar(&c.KillGrace, "kill-grace", 2*time.Second, "time between TERM and KILL when stopping a command")
	fs.IntVar(&c.OutputLimit, "output-limit", tools.DefaultOutputLimit, "characters of command output the model sees (the tail is kept)")
	fs.IntVar(&c.CardOutputLimit, "card-output-limit", tools.DefaultCardOutputLimit, "bytes of output streamed to one terminal card (at most 2 MiB, what the journal keeps)")
	fs.IntVar(&c.MaxLine, "max-line", rpc.DefaultMaxLine, "longest JSON-RPC line accepted on stdin, in bytes (at most 10 MiB)")
	fs.IntVar(&c.MaxTurnRequests, "max-turn-requests", agent.DefaultMaxTurnRequests, "model requests allowed in one turn")
	fs.DurationVar(&c.ModelIdle, "model-idle-timeout", 2*time.Minute, "abort a model request after this long without a byte from the provider (keep-alives count)")
	cf.thinking = fs.String("thinking", envOr(env, "DSH_THINKING", "default"), "how much the model thinks in new sessions: default (the provider's), off, low, high or max (env DSH_THINKING)")
	cf.mode = fs.String("mode", envOr(env, "DSH_MODE", "ask"), "permission mode of new sessions: ask, auto or read-only (env DSH_MODE)")
	fs.StringVar(&c.Executor, "executor", envOr(env, "DSH_EXECUTOR", "local"), "where commands run: local, or ssh://[user@]host[:port][/path] (the path, when given, is the remote directory the project maps to) (env DSH_EXECUTOR)")
	fs.StringVar(&c.SSHIdentity, "ssh-identity", envOr(env, "DSH_SSH_IDENTITY", ""), "private key file for the ssh executor (unencrypted; else ssh-agent via SSH_AUTH_SOCK, else ~/.ssh/id_*) (env DSH_SSH_IDENTITY)")
	fs.StringVar(&c.SSHKnownHosts, "ssh-known-hosts", envOr(env, "DSH_SSH_KNOWN_HOSTS", ""), "known_hosts file the ssh executor checks host keys against (default ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts; an unknown or changed key is refused) (env DSH_SSH_KNOWN_HOSTS)")
	cf.sandbox = fs.String("sandbox", envOr(env, "DSH_SANDBOX", "auto"), "sandbox level of new sessions: read-only, workspace, workspace-network or off; auto is workspace where bubblewrap can start, else off (env DSH_SANDBOX)")
	fs.Var(&cf.allow, "allow-env", "pass this scrubbed environment variable through to commands (repeatable)")
	cf.session.register(fs, env)
	fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			cf.names[f.Name] = true
		}
	})
	return cf
}

// config completes and validates the configuration once fs was parsed.
func (cf *configFlags) config(fs *flag.FlagSet) (config, error) {
	c := cf.c
	c.AllowEnv = cf.allow
	m, err := permission.ParseMode(*cf.mode)
	if err != nil {
		return c, fmt.Errorf("--mode: %w", err)
	}
	c.Mode = m
	if c.Sandbox, err = parseSandbox(*cf.sandbox); err != nil {
		return c, fmt.Errorf("--sandbox: %w", err)
	}
	if c.Thinking, err = llm.ParseThinking(*cf.thinking); err != nil {
		return c, fmt.Errorf("--thinking: %w", err)
	}
	if strings.HasPrefix(c.Executor, "ssh://") {
		t, err := ssh.ParseTarget(c.Executor)
		if err != nil {
			return c, fmt.Errorf("--executor: %w", err)
		}
		c.SSHTarget = &t
	}
	c.APIKey = envOr(cf.env, "DSH_API_KEY", envOr(cf.env, "DEEPSEEK_API_KEY", ""))
	c.BaseURLSet = envOr(cf.env, "DSH_BASE_URL", "") != ""
	c.ModelSet = envOr(cf.env, "DSH_MODEL", "") != ""
	fs.Visit(func(f *flag.Flag) {
		c.BaseURLSet = c.BaseURLSet || f.Name == "base-url"
		c.ModelSet = c.ModelSet || f.Name == "model"
	})
	return c, errors.Join(c.validate(), cf.session.agentConfig(&c.Session))
}

// parseSandbox reads a --sandbox value: a level, or "auto" (or nothing)
// for the executor's default.
func parseSandbox(s string) (executor.Level, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || s == "auto" {
		return "", nil
	}
	l, err := executor.ParseLevel(s)
	if err != nil {
		return "", fmt.Errorf("unknown sandbox level %q (want auto, read-only, workspace, workspace-network or off)", s)
	}
	return l, nil
}

// forwarded is the daemon flags set on fs, as arguments for the daemon
// (each value of a repeated flag on its own), except those named in skip.
func (cf *configFlags) forwarded(fs *flag.FlagSet, skip ...string) []string {
	var args []string
	fs.Visit(func(f *flag.Flag) {
		if !cf.names[f.Name] || slices.Contains(skip, f.Name) {
			return
		}
		if l, ok := f.Value.(*stringList); ok {
			for _, v := range *l {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}

func (c config) validate() error {
	var errs []error
	if c.Timeout <= 0 || c.MaxTimeout <= 0 {
		errs = append(errs, errors.New("--timeout and --max-timeout must be positive"))
	}
	if c.OutputLimit < 1000 {
		errs = append(errs, errors.New("--output-limit must be at least 1000"))
	}
	if c.CardOutputLimit < 1024 || c.CardOutputLimit > event.MaxCardOutput {
		errs = append(errs, fmt.Errorf("--card-output-limit must be between 1024 and %d bytes (the journal keeps at most %d of a card, and a reloaded card must show what the live one did)",
			event.MaxCardOutput, event.MaxCardOutput))
	}
	if c.MaxLine < 1<<16 || c.MaxLine > rpc.DefaultMaxLine {
		errs = append(errs, fmt.Errorf("--max-line must be between 65536 and %d", rpc.DefaultMaxLine))
	}
	if c.ModelIdle <= 0 {
		errs = append(errs, errors.New("--model-idle-timeout must be positive"))
	}
	if c.MaxTurnRequests < 1 {
		errs = append(errs, errors.New("--max-turn-requests must be at least 1"))
	}
	if c.Executor != "local" && c.SSHTarget == nil {
		errs = append(errs, fmt.Errorf("--executor must be local or ssh://[user@]host[:port][/path], got %q", c.Executor))
	}
	if c.SSHTarget == nil && (c.SSHIdentity != "" || c.SSHKnownHosts != "") {
		errs = append(errs, errors.New("--ssh-identity and --ssh-known-hosts need --executor ssh://…"))
	}
	if !filepath.IsAbs(c.StateDir) {
		errs = append(errs, fmt.Errorf("--state-dir must be absolute, got %q", c.StateDir))
	}
	return errors.Join(errs...)
}
