package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The start-up reference links every third-party package the daemon
// links, so its row shows what the libraries' initialisation costs on its
// own: a library added to the daemon and not to floor fails here.
func TestFloorLinksTheDaemonsLibraries(t *testing.T) {
	deps := func(pkg string) map[string]bool {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		set := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			first, _, _ := strings.Cut(p, "/")
			if strings.Contains(first, ".") && !strings.HasPrefix(p, "github.com/dsh-acp/dsh-acp") {
				set[p] = true
			}
		}
		return set
	}
	daemon, floor := deps("../dsh-acp"), deps("./floor")
	if len(daemon) == 0 {
		t.Fatal("go list found no third-party package in the daemon")
	}
	for p := range daemon {
		if !floor[p] {
			t.Errorf("the daemon links %s and cmd/dsh-bench/floor does not", p)
		}
	}
}
