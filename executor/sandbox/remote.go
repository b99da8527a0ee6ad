package sandbox

import (
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/executor"
)

// The remote sandbox: the same levels on a host reached over ssh
// (executor/ssh), built there by bash from what the host has. It is the
// local sandbox's namespaces and mounts (read-only root, fresh /dev and
// /proc, private /tmp and /run, no network below workspace-network, no
// capability, its own pid namespace with unshare(1) as the launcher, so
// nothing outlives the command and TERM reaches the command alone), the
// hidden list resolved with the host's $HOME and variables, and the
// protected set's existing entries read-only. Known limits of the remote
// form: absent protected names get no placeholder and parents are not
// pinned (the host-side bookkeeping of the local form is not built), and
// the remote state directory is not hidden (it holds spill files only).

// RemoteProbe is bash that exits 0 where RemoteWrapper can run: bwrap and
// unshare on PATH, and a sandbox that starts.
const RemoteProbe = `command -v bwrap >/dev/null && command -v unshare >/dev/null && ` +
	`unshare --user --map-current-user --pid --fork --kill-child -- bwrap --die-with-parent --unshare-pid --unshare-user ` +
	`--disable-userns --cap-drop ALL --unshare-net --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp -- true`

// RemoteWrapper returns bash that, evaluated in the command's shell on the
// host after it changed to the command's directory, replaces that shell by
// the script held in the variable scriptVar run inside bubblewrap at level
// (confined), with workspace and roots (absolute, on the host: the
// session's additional directories) writable at the workspace levels, the
// protected names inside each read-only. pre names a bash array variable
// whose words go before the launcher (e.g. env -u NAME), or "". A
// workspace or root that does not exist there ends the shell with status
// 126 and a line saying so.
func RemoteWrapper(level executor.Level, workspace, scriptVar, pre string, roots ...string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...); b.WriteString("; ") }
	w(`__dsh_w=$(realpath -e -- %s 2>/dev/null) || { printf 'dsh-acp: the workspace %%s does not exist on the host\n' %s >&2; exit 126; }`,
		shq(workspace), shq(workspace))
	w(`__dsh_r=("$__dsh_w")`)
	for _, r := range roots {
		w(`__dsh_x=$(realpath -e -- %s 2>/dev/null) || { printf 'dsh-acp: the additional directory %%s does not exist on the host\n' %s >&2; exit 126; }; __dsh_r+=("$__dsh_x")`,
			shq(r), shq(r))
	}
	w(`__dsh_a=(--die-with-parent --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-user --disable-userns --cap-drop ALL)`)
	if !level.Network() {
		w(`__dsh_a+=(--unshare-net)`)
	}
	w(`__dsh_a+=(--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run)`)
	w(`[ -d "$HOME" ] && __dsh_a+=(--ro-bind "$HOME" "$HOME")`)
	w(`for __dsh_p in "$HOME/.cache"; do [ -d "$__dsh_p" ] && __dsh_a+=(--tmpfs "$__dsh_p"); done`)
	bind := "--ro-bind"
	if level.Writable() {
		bind = "--bind"
	}
	w(`for __dsh_d in "${__dsh_r[@]}"; do __dsh_a+=(%s "$__dsh_d" "$__dsh_d"); done`, bind)
	if level.Writable() {
		var rel []string
		for _, r := range DefaultProtected {
			rel = append(rel, shq(r))
		}
		for _, g := range gitProtected {
			rel = append(rel, shq(".git/"+g.name))
		}
		// After every bind: a root inside another cannot re-open what is protected there.
		w(`for __dsh_d in "${__dsh_r[@]}"; do for __dsh_p in %s; do __dsh_q=$(realpath -e -- "$__dsh_d/$__dsh_p" 2>/dev/null) || continue; `+
			`case $__dsh_q in "$__dsh_d"/*) [ "$__dsh_p" = .git ] && [ -d "$__dsh_q" ] || __dsh_a+=(--ro-bind "$__dsh_q" "$__dsh_q");; esac; done; done`,
			strings.Join(rel, " "))
	}
	// Hidden after protected: a protected directory re-shows what is below it.
	w(`__dsh_h=(%s)`, strings.Join(remoteHidden(), " "))
	w(`for __dsh_p in "${__dsh_h[@]}"; do [ -n "$__dsh_p" ] || continue; __dsh_q=$(realpath -e -- "$__dsh_p" 2>/dev/null) || continue; ` +
		`[ "$__dsh_q" = / ] && continue; if [ -d "$__dsh_q" ]; then __dsh_a+=(--tmpfs "$__dsh_q" --remount-ro "$__dsh_q"); ` +
		`else __dsh_a+=(--ro-bind /dev/null "$__dsh_q"); fi; done`)
	// The shell's own bash by its path ($BASH), named bash ($0), as an
	// unsandboxed command runs: bwrap's execvp would take the first bash on
	// the command's PATH, which may be one the workspace holds.
	launch := `unshare --user --map-current-user --pid --fork --kill-child -- bwrap "${__dsh_a[@]}" --chdir "$PWD" -- "$BASH" -c "$` + scriptVar + `" bash`
	if pre != "" {
		launch = `"${` + pre + `[@]}" ` + launch
	}
	b.WriteString("unset -v __dsh_p __dsh_q __dsh_h __dsh_d __dsh_r __dsh_x; exec " + launch)
	return b.String()
}

// remoteHidden is the Credentials table as bash words for the host: the
// home's entries, both config and data places, and the variables' values
// (split at colons).
func remoteHidden() []string {
	var out []string
	for _, c := range Credentials {
		rel := ""
		if c.Path != "" {
			rel = "/" + c.Path
		}
		switch {
		case c.Base == "~":
			out = append(out, `"$HOME"`+shq(rel))
		case c.Base == "config":
			out = append(out, `"$HOME/.config"`+shq(rel), `"${XDG_CONFIG_HOME:+$XDG_CONFIG_HOME`+strings.ReplaceAll(rel, `"`, ``)+`}"`)
		case c.Base == "data":
			out = append(out, `"$HOME/.local/share"`+shq(rel), `"${XDG_DATA_HOME:+$XDG_DATA_HOME`+strings.ReplaceAll(rel, `"`, ``)+`}"`)
		case strings.HasPrefix(c.Base, "$"):
			v := c.Base[1:]
			// Every colon-separated element, with rel after it.
			out = append(out, `$(IFS=:; for __dsh_x in ${`+v+`-}; do printf '%s\n' "$__dsh_x"`+shq(rel)+`; done)`)
		}
	}
	return out
}

// shq single-quotes s for bash (a pair of quotes for the empty string).
func shq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
