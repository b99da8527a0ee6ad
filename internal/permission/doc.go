// Package permission is the policy core of the permission step between the
// model's tool call and the executor: it decides whether a `bash` command
// runs (Allow), needs the user's approval (Ask) or is refused (Deny).
//
// A command is parsed with a real shell parser (mvdan.cc/sh/v3/syntax) and
// judged by every command it contains — each side of `&&`, `||`, `;` and `|`,
// subshells, command and process substitutions, here-documents, function
// bodies, the scripts of `sh -c '…'` and `eval`, the targets of wrappers such
// as `env`, `timeout`, `xargs`, `sudo` and `find -exec` — and by the files its
// redirections write. Never by its first word alone.
//
// Three inputs shape a decision: the Mode (ask, auto, read-only), the Rules
// (allow and deny lists of word prefixes from the user's and the project's
// permissions.json; deny always wins), and the prefixes the user allowed for
// the session ("always allow"). Decide is pure: it reads no files and keeps
// no state, so callers own the session's allow list and the loaded Rules.
//
// docs/permissions.md describes the behaviour for users.
package permission
