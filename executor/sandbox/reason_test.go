package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
)

// This machine's reasons: a missing program is named with the install
// advice; anything else points at what bubblewrap needs.
func TestLocalReason(t *testing.T) {
	if localReason(nil) != nil {
		t.Fatal("no reason without an error")
	}
	missing := fmt.Errorf("%w: bubblewrap (bwrap) not found: %w", executor.ErrSandbox, &exec.Error{Name: "bwrap", Err: exec.ErrNotFound})
	r := executor.ReasonOf(localReason(missing))
	if r == nil || r.Host != "" || r.Missing != "bwrap" || !strings.Contains(r.Fix, "apt install bubblewrap") || r.Where() != "here" {
		t.Errorf("missing bwrap: %+v", r)
	}
	refused := fmt.Errorf("%w: bubblewrap cannot start here: bwrap: setting up uid map: Permission denied", executor.ErrSandbox)
	got := localReason(refused)
	if r := executor.ReasonOf(got); r == nil || r.Missing != "" || strings.Contains(r.Fix, "apt install") || got.Error() != refused.Error() || !errors.Is(got, executor.ErrSandbox) {
		t.Errorf("refused by the kernel: %v %+v", got, r)
	}
}
