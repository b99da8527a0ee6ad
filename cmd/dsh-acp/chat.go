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
	"syscall"

	"github.com/dsh-acp/dsh-acp/internal/chat"
)

// chatSubdir is the state subdirectory of the chat's own sessions, spill
// files and agent log: chat sessions stay out of an editor's history
// (session/list of the daemon the editor runs lists <state-dir>/sessions).
const chatSubdir = "chat"

// chatStateDir is where `dsh-acp chat` keeps its sessions.
func chatStateDir(stateDir string) string { return filepath.Join(stateDir, chatSubdir) }

// runChat is `dsh-acp chat`: a terminal client that spawns this daemon (or
// any ACP agent given after --agent) and sends each input line as a prompt.
// It takes every daemon flag and forwards those set to the daemon it runs,
// which reads the same environment. Its usage (--help) goes to usage.
func runChat(args []string, usage io.Writer) int {
	fs := flag.NewFlagSet("dsh-acp chat", flag.ContinueOnError)
	fs.SetOutput(usage)
	cf := addConfigFlags(fs, os.LookupEnv)
	cwd, _ := os.Getwd()
	fs.StringVar(&cwd, "cwd", cwd, "the session's working directory (with --resume: the one the session recorded)")
	approve := fs.String("approve", "", `answer permission questions without asking: "allow" (once) or "reject"`)
	resume := fs.String("resume", "", "continue the session with this id (see dsh-acp sessions)")
	agentMode := fs.Bool("agent", false, "the remaining arguments are the agent command line (default: this dsh-acp)")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintln(out, "Usage: dsh-acp chat [flags] [--resume ID] [--agent CMD ARGS…]")
		fmt.Fprintln(out, "Sends each prompt to the agent; a prompt starting with ! runs a command directly.")
		fmt.Fprintln(out, "On a terminal: Enter sends, Ctrl-J adds a line, Up recalls earlier prompts, Ctrl-L clears the screen;")
		fmt.Fprintln(out, "a question is answered by the key shown. Piped input: each line is a prompt.")
		fmt.Fprintln(out, "Ctrl-C cancels the running turn (at the prompt: clears the input), twice within a second quits; Ctrl-D quits.")
		fmt.Fprintln(out, "Every daemon flag is accepted and passed on to the agent; chat sessions live in <state-dir>/chat,")
		fmt.Fprintln(out, "the agent's log in <state-dir>/chat/agent.log, the prompt history in <state-dir>/chat/history.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := cf.config(fs)
	if err == nil && *approve != "" && *approve != "allow" && *approve != "reject" {
		err = fmt.Errorf("--approve must be allow or reject, got %q", *approve)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp chat:", err)
		return 2
	}
	cwdSet := false
	fs.Visit(func(f *flag.Flag) { cwdSet = cwdSet || f.Name == "cwd" })
	o, logFile, err := chatOptions(cfg, chatRequest{
		agentMode: *agentMode, rest: fs.Args(), forward: cf.forwarded(fs, "state-dir"),
		resume: *resume, cwd: cwd, cwdSet: cwdSet, approve: *approve,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp chat:", err)
		return 2
	}
	defer logFile.Close()
	interrupts := make(chan os.Signal, 4)
	signal.Notify(interrupts, syscall.SIGINT)
	defer signal.Stop(interrupts)
	o.Interrupts = interrupts
	if err := chat.Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp chat:", err)
		return 1
	}
	return 0
}

// chatRequest is what the chat's command line asked for.
type chatRequest struct {
	agentMode bool
	rest      []string // the agent command line with --agent
	forward   []string // daemon flags set, for this binary's daemon
	resume    string
	cwd       string
	cwdSet    bool
	approve   string
}

// chatOptions resolves the chat: the state directory its daemon uses (the
// chat's own, or the editor's for a resumed editor session), the session's
// cwd, the agent command line and the agent's log file (opened here; the
// caller closes it).
func chatOptions(cfg config, req chatRequest) (chat.Options, io.Closer, error) {
	if err := checkStateDir(cfg.StateDir); err != nil {
		return chat.Options{}, nil, err
	}
	dir := chatStateDir(cfg.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return chat.Options{}, nil, fmt.Errorf("state directory: %w", err)
	}
	if err := checkStateDir(dir); err != nil {
		return chat.Options{}, nil, err
	}
	agentState, cwd := dir, req.cwd
	if req.resume != "" && !req.agentMode {
		found, err := findSession(cfg.StateDir, req.resume)
		if err != nil {
			return chat.Options{}, nil, err
		}
		agentState = found.stateDir
		if !req.cwdSet {
			cwd = found.Cwd
		}
	}
	argv, err := chatAgent(req, agentState)
	if err != nil {
		return chat.Options{}, nil, err
	}
	logPath := filepath.Join(dir, "agent.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return chat.Options{}, nil, fmt.Errorf("agent log: %w", err)
	}
	o := chat.Options{
		Agent:       argv,
		Cwd:         cwd,
		In:          os.Stdin,
		Out:         os.Stdout,
		Err:         logFile,
		LogPath:     logPath,
		Color:       isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == "",
		Interactive: isTerminal(os.Stdin) && isTerminal(os.Stdout),
		HistoryPath: filepath.Join(dir, "history"),
		Approve:     req.approve,
		Resume:      req.resume,
	}
	if !req.agentMode {
		o.Model = cfg.Model
		o.Sandbox = string(cfg.Sandbox) // the agent's sandbox option wins
	}
	return o, logFile, nil
}

// chatAgent is the agent command line: the given one, or this binary with
// the forwarded daemon flags and its state directory.
func chatAgent(req chatRequest, stateDir string) ([]string, error) {
	if req.agentMode {
		if len(req.rest) == 0 {
			return nil, errors.New("--agent needs a command")
		}
		return req.rest, nil
	}
	if len(req.rest) > 0 {
		return nil, fmt.Errorf("unexpected argument %q (use --agent CMD ARGS… for another agent)", req.rest[0])
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return append(append([]string{self}, req.forward...), "--state-dir="+stateDir), nil
}
