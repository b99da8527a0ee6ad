package main

import (
	"bytes"
	"strings"
	"testing"
)

// `dsh-acp help` prints the daemon's usage; `help COMMAND` that command's
// own, on stdout with exit 0; an unknown command is an error naming them.
func TestHelpCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runHelp(nil, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "Usage: dsh-acp [flags]") || !strings.Contains(out.String(), "help [command]") {
		t.Errorf("help: %d\n%s", code, out.String())
	}
	for _, name := range helpNames() {
		out.Reset()
		want := "Usage: dsh-acp " + name
		if name == "version" {
			want = "Usage: dsh-acp --version"
		}
		if code := runHelp([]string{name}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), want) {
			t.Errorf("help %s: %d\n%s", name, code, out.String())
		}
	}
	errOut.Reset()
	if code := runHelp([]string{"nope"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `no command "nope"; the commands are chat, sessions`) {
		t.Errorf("help nope: %d %q", code, errOut.String())
	}
}

// Each subcommand's --help prints its own usage, not the daemon's: the
// binary, as a user runs it.
func TestSubcommandHelp(t *testing.T) {
	for _, args := range [][]string{{"login", "--help"}, {"--mode", "auto", "login", "--help"}, {"logout", "--help"}, {"chat", "--help"}, {"sessions", "--help"}, {"replay", "--help"}, {"help", "login"}} {
		stdout, stderr, err := runBinary(t, "", args...)
		usage := stdout + stderr
		name := args[len(args)-2]
		if args[0] == "help" {
			name = args[1]
		}
		if err != nil || !strings.HasPrefix(usage, "Usage: dsh-acp "+name) || strings.Contains(usage, "serve ACP on stdin/stdout") {
			t.Errorf("%q: %v\n%s", args, err, usage)
		}
	}
}
