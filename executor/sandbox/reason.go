package sandbox

import (
	"errors"
	"os/exec"

	"github.com/dsh-acp/dsh-acp/executor"
)

// localReason gives why bubblewrap cannot run on this machine (wrapping
// executor.ErrSandbox) what the user can do here: install the program
// that is missing, else read what bubblewrap needs. nil stays nil.
func localReason(why error) error {
	if why == nil || executor.ReasonOf(why) != nil {
		return why
	}
	r := &executor.SandboxReason{Err: why,
		Fix: "See docs/security.md for what bubblewrap needs to start here (unprivileged user namespaces), then restart the agent."}
	var missing *exec.Error
	if errors.As(why, &missing) && errors.Is(missing.Err, exec.ErrNotFound) {
		r.Missing = missing.Name
		r.Fix = "Install what is missing (Debian/Ubuntu: apt install bubblewrap util-linux) and restart the agent; see docs/security.md."
	}
	return r
}
