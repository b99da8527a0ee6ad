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
// The judge is an allowlist everywhere: a program runs unasked only when it
// is on the read-only table and every option it gets is on that program's
// option list (one getopt-style spec language, spec.go; code only for the
// languages of sed, awk, find and git's subcommand tree); every word, every
// redirection, every expansion and every node type of the parsed line must
// be one the judge knows harmless (features.go). Literal words come from
// mvdan.cc/sh/v3/expand. Where the parser and bash can read a line
// differently (a comment ending in a backslash, single quotes inside
// double-quoted expansions and unquoted here-documents, quotes in
// arithmetic, odd here-document delimiters, alias definitions) the line
// cannot be judged, so deny rules are not trusted to see it either.
//
// Inputs of a decision (Request): the Mode (ask, auto, read-only), the Rules
// (allow and deny lists of word prefixes from the user's and the project's
// permissions.json; deny always wins), the prefixes the user allowed for the
// session ("always allow"), and whether the command runs as a background
// task, which runs unasked only when the judge knows it ends
// (Verdict.Ends). Judge reads no files unless Request.Stat is set, and keeps
// no state, so callers own the session's allow list and the loaded Rules.
//
// A project's rule file takes effect only after the user approved its exact
// content: LoadTrustedRules applies its allow rules only when the TrustStore
// (the user's state directory) holds the SHA-256 of that content, and
// reports the file otherwise, with the hash to approve and a summary of its
// rules for the question.
//
// The built-in tables (the read-only list, subcommands, option allowlists,
// name lists) are built on first use, not at package init, so a process
// that links the package but judges nothing pays nothing for them;
// TablesBuilt counts what was built.
//
// docs/permissions.md describes the behaviour for users; a test reads its
// examples table.
//
// # Known limits
//
//   - Read-only means "changes nothing", not "reveals nothing".
//   - Programs are judged by their command line, not by what they read:
//     configuration in the working tree or HOME (rustup's
//     rust-toolchain.toml behind cargo --version, a nested repository's git
//     config, npm's and pip's files) is not inspected.
//   - In auto mode, code bash evaluates from a variable's value (arithmetic on
//     a name read from a file) is not checked against deny rules; ask and
//     read-only mode do not run such lines unasked.
//   - Whether a command ends is known only for read-only commands; a file
//     that is a named pipe is seen only through Request.Stat.
//   - go list and go mod graph may fill the module cache from the network;
//     lsof without -n may resolve host names.
//   - Option lists are of GNU, util-linux, procps and git as of 2026; a
//     program with another option of the same name but another meaning (a
//     BSD tool) is judged by the GNU meaning.
package permission
