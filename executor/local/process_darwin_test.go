package local

import (
	"strings"
	"testing"
)

// helpers are the roles the test binary plays when re-executed
// (helperEnv); the Linux ones read /proc.
func helpers() map[string]func() { return nil }

// TestMakeNonDumpable: on darwin it says it cannot protect the environment.
func TestMakeNonDumpable(t *testing.T) {
	err := MakeNonDumpable()
	if err == nil || !strings.Contains(err.Error(), "KERN_PROCARGS2") {
		t.Errorf("MakeNonDumpable: %v; want the darwin limit named", err)
	}
}
