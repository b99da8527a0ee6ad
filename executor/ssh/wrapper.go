package ssh

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// reader is the command sshd hands to the login shell for every channel: it
// reads a decimal length line, then exactly that many bytes of bash from
// stdin (read -N reads them in bulk and never past them: LC_ALL=C makes it
// count bytes), and evaluates them. Everything else a channel needs, the
// command, its directory and environment, travels on stdin after it, so
// nothing of it passes through the login shell's parser or its argument
// limits. It is one line without quotes, backslashes or '!', so that a
// non-bash login shell passes it to bash unchanged inside single quotes.
const reader = `IFS= read -r n && LC_ALL=C IFS= read -r -N "$n" p && eval "$p"`

// commandLine is the exec request's command: the reader itself when the
// login shell is bash (no second shell to start), else bash started by the
// login shell without rc files.
func commandLine(loginBash bool) string {
	if loginBash {
		return reader
	}
	return "exec bash --norc --noprofile -c '" + reader + "' bash"
}

// stream is what a channel's stdin starts with: the length line and the
// prelude the reader evaluates.
func stream(prelude string) []byte {
	return []byte(strconv.Itoa(len(prelude)) + "\n" + prelude)
}

// probeLine is the exec command that tells whether the login shell is a
// bash recent enough to run the reader (read -N needs bash 4.1); its output
// line is "dsh-acp-probe MAJOR MINOR", or "x x" from another shell.
const probeLine = `echo "dsh-acp-probe ${BASH_VERSINFO[0]-x} ${BASH_VERSINFO[1]-x}"`

// probeBash runs the same probe in the bash on PATH, for non-bash login
// shells.
const probeBash = `exec bash --norc --noprofile -c 'echo "dsh-acp-probe ${BASH_VERSINFO[0]} ${BASH_VERSINFO[1]}"'`

// maxInline is the longest script sent inline in the exec request (one
// argv string may not exceed 128 KiB, and quoting may grow it).
const maxInline = 32 << 10

// launch is one command's prelude: the wrapper that runs the command in the
// remote shell's own session and process group.
//
// sshd starts every session's shell as the leader of a new session and
// process group (setsid), without a terminal. The prelude, evaluated by that
// shell, changes to the command's directory (or reports why not), points
// stdin at /dev/null (or a private temporary file holding Spec.Stdin), sets
// the environment, registers the group with the connection's supervisor
// (its pid and start time, appended to the registry file), prints
// "MARK ok PGID START" and evaluates the command in place, so the group
// leader is the command's own shell and sshd's exit-status or exit-signal
// is the command's. At LevelOff nothing is started before the command,
// between the header and it or after it, so the exit the channel reports
// cannot be the wrapper's, and a command costs no process beyond its own.
// At a confined level the shell runs the sandbox wrapper
// (sandbox.RemoteWrapper), which at the writable levels makes the
// placeholders before the sandbox, waits for it, removes them and exits
// with the sandbox's status.
//
// An inline launch (a login bash, a short script, no Spec.Stdin or Spec.Env)
// is the exec request itself: the prelude with the script quoted in it. Any
// other goes through the reader: its prelude and then the script and
// Spec.Stdin travel on stdin.
type launch struct {
	marker   string
	script   string
	stdin    []byte
	dir      string
	unset    []string // variables of the remote login environment to drop
	envUnset []string // the same, with names bash cannot unset (env -u)
	export   []string // NAME=value, set last
	private  bool     // export holds Spec.Env: keep it off the command line
	registry string   // the supervisor's registry file
	// sandbox, when set, is the bash (sandbox.RemoteWrapper) that runs the
	// script ($__dsh_s) inside the host's bubblewrap, after the words of
	// the array __dsh_pre, and ends the shell with its status.
	sandbox string
}

// inline reports whether l can be the exec request itself for a host whose
// login shell is bash (the script and the sandbox wrapper, 16 KiB at the
// writable levels, within maxInline). The request's command is the shell's argv, which
// other users of the host can read: a script may be there (a local
// command's is too), Spec.Env may not.
func (l *launch) inline(loginBash bool) bool {
	return loginBash && len(l.script)+len(l.sandbox) <= maxInline && len(l.stdin) == 0 && !l.private
}

// request returns the exec request's command and what the channel's stdin
// starts with, for a host whose channels run cmdline (commandLine).
func (l *launch) request(cmdline string, loginBash bool) (string, []byte) {
	if l.inline(loginBash) {
		return l.prelude(true), nil
	}
	data := append(stream(l.prelude(false)), l.script...)
	return cmdline, append(data, l.stdin...)
}

// prelude is the bash that runs l, all on one line so that the command's
// own $LINENO counts from 1 (eval adds the line it stands on). inline puts
// the script in it; otherwise it reads the script from stdin.
func (l *launch) prelude(inline bool) string {
	m := sandbox.Quote(l.marker)
	dir := sandbox.Quote(l.dir)
	var b []string
	add := func(format string, args ...any) { b = append(b, fmt.Sprintf(format, args...)) }
	if inline {
		add("__dsh_s=%s", sandbox.Quote(l.script))
	} else {
		add("unset -v n p")
		add("__dsh_s=")
		if len(l.script) > 0 {
			add("LC_ALL=C IFS= read -r -N %d __dsh_s || { printf '%%s fail script\\n' %s; exit 0; }", len(l.script), m)
		}
		if len(l.stdin) > 0 {
			add(`__dsh_in="${TMPDIR:-/tmp}/dsh-acp-stdin.$$.$RANDOM"`)
			add(`{ ( umask 077; set -C; : >"$__dsh_in" ) && head -c %d >"$__dsh_in"; } 2>/dev/null || { rm -f -- "$__dsh_in"; printf '%%s fail stdin\n' %s; exit 0; }`, len(l.stdin), m)
		}
	}
	add("printf '%%s\\n' %s >&2", m)
	cleanup := ""
	if len(l.stdin) > 0 {
		cleanup = `rm -f -- "$__dsh_in"; `
	}
	add("cd -- %s 2>/dev/null || { %sif [ ! -e %s ]; then __dsh_e=ENOENT; elif [ ! -d %s ]; then __dsh_e=ENOTDIR; else __dsh_e=EACCES; fi; printf '%%s workdir %%s\\n' %s \"$__dsh_e\"; exit 0; }",
		dir, cleanup, dir, dir, m)
	if len(l.stdin) > 0 {
		add(`exec <"$__dsh_in"; rm -f -- "$__dsh_in"`)
	} else {
		add("exec </dev/null")
	}
	if len(l.unset) > 0 {
		add("unset -v %s 2>/dev/null", strings.Join(l.unset, " "))
	}
	if len(l.export) > 0 {
		q := make([]string, len(l.export))
		for i, kv := range l.export {
			q[i] = sandbox.Quote(kv)
		}
		add("export %s", strings.Join(q, " "))
	}
	// The leader's start time (/proc/PID/stat field 22) tells the
	// supervisor the group's leader from a process that took its pid.
	add(`__dsh_t=; read -r __dsh_t < /proc/$$/stat 2>/dev/null && { set -- ${__dsh_t##*) }; __dsh_t=${20-}; set --; }`)
	add(`printf '%%s %%s\n' "$$" "$__dsh_t" >> %s 2>/dev/null`, sandbox.Quote(l.registry))
	add(`printf '%%s ok %%s %%s\n' %s "$$" "$__dsh_t"`, m)
	add("unset -v __dsh_e __dsh_in __dsh_t")
	var u []string
	for _, n := range l.envUnset {
		u = append(u, "-u "+sandbox.Quote(n))
	}
	switch {
	case l.sandbox != "":
		// The wrapper stays the group leader (its pid and start time, as
		// registered, own its placeholders), waits for the launcher and
		// exits with its status; read-only levels exec the launcher.
		pre := ""
		if len(u) > 0 {
			pre = "env " + strings.Join(u, " ")
		}
		add("__dsh_pre=(%s)", pre)
		add("%s", l.sandbox)
	case len(l.envUnset) > 0:
		// Names bash cannot unset itself: env removes them, and bash -c
		// runs the command in the same process.
		add(`exec env %s bash -c "$__dsh_s"`, strings.Join(u, " "))
	default:
		add(`eval "unset -v __dsh_s; $__dsh_s"`)
	}
	return strings.Join(b, "; ")
}

// seconds formats d for sleep(1): "0.2".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// isName reports whether s is a name bash can set or unset.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// newMarker returns a marker no command output can predict.
func newMarker() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails
	return "dsh-acp-" + hex.EncodeToString(b[:])
}
