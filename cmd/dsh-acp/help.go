package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// helpTopics are the commands `dsh-acp help` knows, in the order it lists
// them; each prints its own usage to w.
type helpTopic struct {
	name  string
	usage func(w io.Writer)
}

func helpTopics() []helpTopic {
	return []helpTopic{
		{"chat", func(w io.Writer) { runChat([]string{"--help"}, w) }},
		{"sessions", func(w io.Writer) { runSessions([]string{"--help"}, w) }},
		{"replay", replayUsage},
		{"login", func(w io.Writer) { _, _ = parseConfig("dsh-acp", []string{"login", "--help"}, noEnv, w) }},
		{"logout", func(w io.Writer) { _, _ = parseConfig("dsh-acp", []string{"logout", "--help"}, noEnv, w) }},
		{"version", func(w io.Writer) {
			fmt.Fprintln(w, "Usage: dsh-acp --version (or dsh-acp version)")
			fmt.Fprintln(w, "Prints the version and the commit it was built from.")
		}},
		{"help", func(w io.Writer) {
			fmt.Fprintln(w, "Usage: dsh-acp help [command]")
			fmt.Fprintln(w, "Prints how to run dsh-acp, or a command's usage:", strings.Join(helpNames(), ", ")+".")
		}},
	}
}

func noEnv(string) (string, bool) { return "", false }

func helpNames() []string {
	topics := helpTopics()
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.name
	}
	return names
}

// runHelp is `dsh-acp help [command]`: the daemon's usage, or the
// command's, on out (exit 0); an unknown command is an error on errOut
// naming the known ones (exit 2).
func runHelp(args []string, out, errOut io.Writer) int {
	if len(args) == 0 {
		_, _ = parseConfig("dsh-acp", []string{"--help"}, noEnv, out)
		return 0
	}
	if len(args) > 1 {
		fmt.Fprintf(errOut, "dsh-acp help: one command at a time, got %q\n", strings.Join(args, " "))
		return 2
	}
	for _, t := range helpTopics() {
		if t.name == args[0] || "--"+t.name == args[0] {
			t.usage(out)
			return 0
		}
	}
	fmt.Fprintf(errOut, "dsh-acp help: no command %q; the commands are %s\n", args[0], strings.Join(helpNames(), ", "))
	return 2
}

// authUsage is the usage of `dsh-acp login` and `dsh-acp logout`, with
// the flags login reads from fs.
func authUsage(w io.Writer, command string, fs *flag.FlagSet) {
	if command == "logout" {
		fmt.Fprintln(w, "Usage: dsh-acp logout")
		fmt.Fprintln(w, "Removes the key dsh-acp login stored (exit 0 also when none was stored).")
		return
	}
	fmt.Fprintln(w, "Usage: dsh-acp login [--base-url URL] [--model NAME]")
	fmt.Fprintln(w, "Checks an API key with the provider (GET <base-url>/models) and stores it with the base URL and")
	fmt.Fprintln(w, "model in $XDG_CONFIG_HOME/dsh-acp/credentials (0600). On a terminal the base URL and model are")
	fmt.Fprintln(w, "offered (Enter keeps them) and the key is typed hidden; piped, the key is the first line of input.")
	fmt.Fprintln(w, "A model the provider does not list is asked again (on a terminal) or refused (piped).")
	own := flag.NewFlagSet("login", flag.ContinueOnError)
	own.SetOutput(w)
	for _, name := range []string{"base-url", "model"} {
		if f := fs.Lookup(name); f != nil {
			own.Var(f.Value, f.Name, f.Usage)
		}
	}
	fmt.Fprintln(w, "Flags:")
	own.PrintDefaults()
}
