// Package sandboxlevel is the daemon's side of the sandbox levels, as the
// user meets them: what the executor can build now (Offer), the level a
// new session starts at, the `sandbox` config option, and the texts that
// say what a level does and why commands run unconfined or are refused.
//
// Contract: an Offer never waits for the executor. An executor that builds
// itself in the background (a Warmer: the local one, whose sandbox probe
// costs a bubblewrap start) is asked nothing that would wait until it is
// ready; until then its Expected levels stand in, and each session settles
// once it is (acp's settleSandbox, through WaitReady). A level chosen
// explicitly (the flag, the environment, the option, /sandbox) is never
// silently loosened: where it cannot be built the executor refuses every
// command, and the texts here say why.
//
// The texts speak of the executor in use: the reason is the executor's own
// error (wrapping executor.ErrSandbox), and where it carries an
// executor.SandboxReason — which names the machine commands run on, the
// program it lacks and what the user can do there — the texts use it;
// otherwise they give the error as it is and point at docs/security.md,
// never at a machine or a package they cannot know about.
//
// # Known limits
//
// An explicit level that cannot be built stays offered as the current
// value, so the option shows what the user chose, not what runs (nothing
// runs). The texts are English only.
package sandboxlevel
