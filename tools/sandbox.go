package tools

import (
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

// sandboxRefusal is the result of a command the executor refused because
// its sandbox level cannot be built (err wraps executor.ErrSandbox). Its
// first line — the card's reason line — names the level, where (this
// machine, or the host commands run on) and why; the second tells the
// model what to tell the user: the executor's fix when err carries an
// executor.SandboxReason.
func sandboxRefusal(level executor.Level, err error) event.Result {
	why := err.Error()
	if i := strings.LastIndex(why, executor.ErrSandbox.Error()+": "); i >= 0 {
		why = why[i+len(executor.ErrSandbox.Error())+2:]
	}
	where, advice := "here", "they can make bubblewrap work here, or choose another sandbox level (/sandbox)."
	if r := executor.ReasonOf(err); r != nil {
		where = r.Where()
		if r.Fix != "" {
			advice = r.Fix + " Or they can choose another sandbox level (/sandbox)."
		}
	}
	return event.Result{IsError: true, Text: fmt.Sprintf("Not run: sandbox level %s cannot be built %s: %s\n"+
		"Commands are refused rather than run unsandboxed. Tell the user: %s", level, where, why, advice)}
}

// Output that says a confined command ran into its sandbox: a write to a
// read-only mount, a connection without a network.
var (
	blockedWrite = []string{"Read-only file system"}
	blockedNet   = []string{"Network is unreachable", "Temporary failure in name resolution",
		"Could not resolve host", "Name or service not known", "Connection refused"}
)

// sandboxMarker is the extra marker line of a failed command whose output
// says its sandbox blocked a write or (at a level without the network) a
// connection: "[sandbox: level workspace blocked a write (writable: …;
// network: off)]". It is "" at LevelOff and when the output says neither.
func sandboxMarker(level executor.Level, res executor.Result) string {
	if !level.Confined() {
		return ""
	}
	out := string(res.Stdout) + "\n" + string(res.Stderr)
	write := containsAny(out, blockedWrite)
	conn := !level.Network() && containsAny(out, blockedNet)
	var what string
	switch {
	case write && conn:
		what = "a write and a connection"
	case write:
		what = "a write"
	case conn:
		what = "a connection"
	default:
		return ""
	}
	writable, network := "/tmp, ~/.cache", "off"
	if level.Writable() {
		writable = "the workspace, " + writable
	}
	if level.Network() {
		network = "on"
	}
	return fmt.Sprintf("[sandbox: level %s blocked %s (writable: %s; network: %s)]", level, what, writable, network)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
