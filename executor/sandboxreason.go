package executor

import "errors"

// SandboxReason is why confined levels cannot be built, in the user's
// terms, from the executor that knows where commands run: the machine,
// what it lacks and what the user can do there. An error wrapping
// ErrSandbox (Confiner.Unavailable, a refused Run or Start) may carry one;
// find it with ReasonOf. The texts that tell the user why commands run
// unconfined or are refused (internal/sandboxlevel, the bash tool's
// refusal) use it, so they name the host and what it lacks instead of
// giving this machine's advice for another one. An executor that gives no
// reason gets neutral texts (the error as it is, docs/security.md).
type SandboxReason struct {
	// Host is the machine commands run on, as the user names it; "" for
	// this one.
	Host string
	// Missing is the program the sandbox needs there and does not find
	// ("bwrap", "unshare"); "" when something else is wrong.
	Missing string
	// Fix says what the user can do: whole sentences, ending in a period.
	Fix string
	// Err is the executor's own error; it wraps ErrSandbox.
	Err error
}

// Error is Err's text: a reason changes no error message.
func (r *SandboxReason) Error() string { return r.Err.Error() }

// Unwrap returns Err.
func (r *SandboxReason) Unwrap() error { return r.Err }

// Where is where the sandbox cannot be built: "here", or "on the host H".
func (r *SandboxReason) Where() string {
	if r.Host == "" {
		return "here"
	}
	return "on the host " + r.Host
}

// ReasonOf is the SandboxReason err carries, or nil.
func ReasonOf(err error) *SandboxReason {
	var r *SandboxReason
	if errors.As(err, &r) {
		return r
	}
	return nil
}
