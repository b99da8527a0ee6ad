package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The chat's package does no work at package initialisation: the daemon
// is the same binary and would pay for it at every start. Read from
// GODEBUG=inittrace=1 of this test binary, which links what the daemon
// links.
func TestChatPackageHasNoInit(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "init github.com/dsh-acp/dsh-acp/") {
		t.Fatalf("no init trace of the project's packages:\n%s", out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "init github.com/dsh-acp/dsh-acp/internal/chat ") {
			t.Errorf("internal/chat initialises at every start of the daemon: %s", l)
		}
	}
}
