package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/dsh-acp/dsh-acp/internal/chat"
)

// runChat is `dsh-acp chat`: a terminal client that spawns this daemon (or
// any ACP agent given after --agent) and sends each input line as a prompt.
func runChat(args []string) int {
	fs := flag.NewFlagSet("dsh-acp chat", flag.ContinueOnError)
	cwd, _ := os.Getwd()
	fs.StringVar(&cwd, "cwd", cwd, "the session's working directory")
	approve := fs.String("approve", "", `answer permission questions without asking: "allow" (once) or "reject"`)
	agentMode := fs.Bool("agent", false, "the remaining arguments are the agent command line (default: this dsh-acp)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: dsh-acp chat [--cwd DIR] [--approve allow|reject] [--agent CMD ARGS…]")
		fmt.Fprintln(fs.Output(), "Sends each line of input as a prompt; a line starting with ! runs a command directly.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	agentCmd, err := chatAgent(*agentMode, fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp chat:", err)
		return 2
	}
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, syscall.SIGINT)
	err = chat.Run(context.Background(), chat.Options{
		Agent:      agentCmd,
		Env:        chatEnv(*agentMode),
		Cwd:        cwd,
		In:         os.Stdin,
		Out:        os.Stdout,
		Err:        os.Stderr,
		Color:      isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == "",
		Approve:    *approve,
		Interrupts: interrupts,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp chat:", err)
		return 1
	}
	return 0
}

// chatAgent is the agent command line: the given one, or this binary.
func chatAgent(agentMode bool, rest []string) ([]string, error) {
	if agentMode {
		if len(rest) == 0 {
			return nil, errors.New("--agent needs a command")
		}
		return rest, nil
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("unexpected argument %q (use --agent CMD ARGS… for another agent)", rest[0])
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{self}, nil
}

// chatEnv quiets this daemon's info logs, which would interleave with the
// drawing, unless the user chose a level.
func chatEnv(agentMode bool) []string {
	env := os.Environ()
	if _, set := os.LookupEnv("DSH_LOG_LEVEL"); !set && !agentMode {
		env = append(env, "DSH_LOG_LEVEL=warn")
	}
	return env
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
