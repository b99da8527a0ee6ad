package sandbox

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/executor"
)

// The remote sandbox: the same levels on a host reached over ssh
// (executor/ssh), built there by bash from what the host has, in the one
// wrapper each command's prelude evaluates (no round trip of its own). It
// is the local sandbox's namespaces and mounts (read-only root, fresh /dev
// and /proc, private /tmp and /run, no network below workspace-network, no
// capability, its own pid namespace with unshare(1) as the launcher, so
// nothing outlives the command and TERM reaches the command alone), the
// hidden list resolved with the host's $HOME and variables, the remote
// state directory hidden except the session's spill directory (shown
// read-only), and at the workspace levels the protected set held by
// construction as the local form holds it (protect.go), for the workspace
// and every additional directory:
//
//   - the same names and kinds, from the same tables (DefaultProtected,
//     HomeProtected when the host's $HOME is inside a root, gitProtected
//     for the root's repository, for every nested repository found by the
//     same bounded search — 4 deep, 3 000 directories, not node_modules —
//     and for the git directory a .git file names), and the hooks path the
//     root's repository configures (core.hooksPath) when inside the root;
//   - an existing entry is a read-only bind of itself; an absent one gets a
//     placeholder (the topmost missing component; a directory outside a git
//     directory, gitProtected's kind inside one), unless the run carries
//     AllowNewRepository for the workspace's .git;
//   - every directory between a root and an entry, a hidden path, the
//     state directory or another session's directory (RemoteSpec.Others),
//     and every git directory and other session's directory itself, is
//     bound onto itself (shallowest first): none can be renamed away and
//     replaced by a copy or a symlink; a workspace whose path leads
//     through a symlink inside another session's directory is refused.
//
// Placeholders live across processes through a registry on the host
// (RemoteSpec.StateDir/placeholders): one record file per wrapper, named
// by its owner (the wrapper's pid and start time: the wrapper is the
// group leader the connection's supervisor registered), lines "DEV INO
// KIND SIZE PATH" separated by \x1f, read and changed only under flock(1)
// on the directory's lock file. Before a command the wrapper sweeps the
// records of owners no longer running (a SIGKILLed command's), then takes
// the placeholders: a name another live owner's record holds is shared
// (recorded again, not remade). After the command it removes each of its
// placeholders no other live owner holds, and only while it is still the
// entry made (the same device and inode; an empty directory, or a regular
// file of the size made), then its record. The wrapper does not exec the
// launcher: it stays the group leader, waits for it and exits with its
// status; TERM, INT and HUP have a handler (not ignored, so the command
// gets them at their default), so the engine's TERM reaches the command
// and leaves the wrapper to clean up; a TERM before the launch ends the
// wrapper by TERM after cleaning up, and nothing runs.
//
// Known limits of the remote form: no start gate (the local gate_linux.go:
// bwrap ties itself to unshare with --die-with-parent, and unshare is not
// tied to the wrapper; the connection's end stops the group); no IPC
// guard (path sockets and FIFOs reachable, hard-link writes not copied);
// no check that a workspace is still the
// directory it was (renamed and replaced by a real directory between two
// commands; other sessions' directories known to this daemon are pinned
// and a workspace reached through a symlink inside one is refused, as
// locally); the nested search runs at every command (no 30 s reuse); placeholders for a path holding a newline are
// not made (its name is not held); if the directories' mkdir fails as a
// whole (a name created by someone else in the same instant) the
// directories present afterwards count as made. Placeholders are
// recorded before they are made, their inode unknown ("-"), and again
// once made: a wrapper KILLed in between leaves entries the sweep removes
// only while each is an empty directory or a regular file of the planned
// size. The helpers (mkdir, stat, rm, flock) run with TERM, INT and HUP
// ignored, so a TERM cannot cut a placeholder's making, recording or
// removal short; the wrapper alone handles them.

// RemoteTools are the programs RemoteWrapper runs on the host, each with
// the package that has it; RemoteProbe checks every one.
var RemoteTools = [][2]string{
	{"bwrap", "bubblewrap"}, {"unshare", "util-linux"}, {"flock", "util-linux"},
	{"realpath", "coreutils"}, {"stat", "coreutils"}, {"mkdir", "coreutils"}, {"rm", "coreutils"},
}

// RemoteProbe is bash that exits 0 where RemoteWrapper can run: the
// RemoteTools on PATH, GNU realpath -e and stat -c, and a sandbox that
// starts. The first tool missing ends it with status 3 and the line
// "missing NAME <the host's PATH>".
var RemoteProbe = func() string {
	var names []string
	for _, t := range RemoteTools {
		names = append(names, t[0])
	}
	return `for __dsh_p in ` + strings.Join(names, " ") + `; do command -v "$__dsh_p" >/dev/null || ` +
		`{ printf 'missing %s %s\n' "$__dsh_p" "$PATH"; exit 3; }; done && ` +
		`realpath -z -e -- / >/dev/null && stat -c '%d %i %s %f %n' -- / >/dev/null && rm -df -- && ` +
		`unshare --user --map-current-user --pid --fork --kill-child -- bwrap --die-with-parent --unshare-pid --unshare-user ` +
		`--disable-userns --cap-drop ALL --unshare-net --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp -- true`
}()

// RemoteSpec is one command's remote sandbox.
type RemoteSpec struct {
	Level     executor.Level
	Workspace string   // absolute, on the host
	Roots     []string // the session's additional directories, absolute
	// ScriptVar names the bash variable holding the command; Pre a bash
	// array variable whose words go before the launcher (e.g. env -u
	// NAME), or "".
	ScriptVar, Pre string
	// StateDir is the remote state directory: hidden, and its
	// placeholders/ directory is the registry. Required at the writable
	// levels (the command is refused with status 126 without it).
	StateDir string
	// SpillDir is the session's spill directory (below StateDir), shown
	// read-only when it exists.
	SpillDir string
	// AllowNewRepository lets the workspace's absent .git be created
	// (executor.Spec.AllowNewRepository).
	AllowNewRepository bool
	// Others are other sessions' workspaces and additional directories on
	// the host (absolute): each one inside a root is pinned (a command here
	// cannot rename it and put a symlink in its place), and a Workspace
	// whose path leads through a symlink inside one of them is refused
	// with status 126.
	Others []string
}

// RemoteWrapper returns bash that, evaluated in the command's shell on the
// host after it changed to the command's directory, runs the script held in
// s.ScriptVar inside bubblewrap at s.Level (confined), waits for it and
// ends the shell with its status (see the comment above). A workspace or
// root that does not exist there, a writable level without a usable state
// directory, or a registry that cannot be locked end the shell with status
// 126 and a line saying so, before anything ran.
func RemoteWrapper(s RemoteSpec) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...); b.WriteString("\n") }
	w(`__dsh_fail() { printf 'dsh-acp: %%s\n' "$1" >&2; exit 126; }`)
	w(`%s`, remoteBase)
	// Every path the wrapper resolves, in one realpath: the workspace, the
	// roots, the state directory, the home and the hidden paths that
	// exist ("/" stands for none). Forks are what a wrapper costs.
	w(`__dsh_h=(); %s`, strings.Join(remoteHidden(), "; "))
	c := []string{shq(s.Workspace)}
	for _, r := range s.Roots {
		c = append(c, shq(r))
	}
	state := "/"
	if s.StateDir != "" {
		state = s.StateDir
	}
	var others []string
	for _, o := range s.Others {
		others = append(others, shq(o))
	}
	w(`__dsh_c=(%s %s "${HOME:-/}"); __dsh_n=${#__dsh_c[@]}; for __dsh_p in %s; do [ -d "$__dsh_p" ] && __dsh_c+=("$__dsh_p"); done; __dsh_m=${#__dsh_c[@]}; `+
		`for __dsh_p in "${__dsh_h[@]}"; do [ -e "$__dsh_p" ] && __dsh_c+=("$__dsh_p"); done`,
		strings.Join(c, " "), shq(state), strings.Join(others, " "))
	w(`__dsh_z=(); while IFS= read -r -d '' __dsh_x; do __dsh_z+=("$__dsh_x"); done < <(realpath -z -e -- "${__dsh_c[@]}" 2>/dev/null)`)
	w(`if [ ${#__dsh_z[@]} -ne ${#__dsh_c[@]} ]; then __dsh_z=(); for __dsh_p in "${__dsh_c[@]}"; do __dsh_x=$(realpath -e -- "$__dsh_p" 2>/dev/null) || __dsh_x=; __dsh_z+=("$__dsh_x"); done; fi`)
	w(`__dsh_w=${__dsh_z[0]}; [ -n "$__dsh_w" ] || __dsh_fail %s; __dsh_r=("$__dsh_w")`, shq("the workspace "+s.Workspace+" does not exist on the host"))
	for i, r := range s.Roots {
		w(`[ -n "${__dsh_z[%d]}" ] || __dsh_fail %s; __dsh_r+=("${__dsh_z[%d]}")`, i+1, shq("the additional directory "+r+" does not exist on the host"), i+1)
	}
	w(`__dsh_st=${__dsh_z[__dsh_n-2]}; [ "$__dsh_st" = / ] && __dsh_st=; __dsh_hm=${__dsh_z[__dsh_n-1]}; [ -n "${HOME-}" ] || __dsh_hm=`)
	// The hidden paths, resolved (needed for the pins before their mounts).
	w(`__dsh_O=("${__dsh_z[@]:__dsh_n:__dsh_m-__dsh_n}"); __dsh_chk %s`, shq(path.Clean(s.Workspace)))
	w(`__dsh_hd=(); __dsh_hf=(); for __dsh_x in "${__dsh_z[@]:__dsh_m}"; do [ -n "$__dsh_x" ] && [ "$__dsh_x" != / ] || continue; ` +
		`if [ -d "$__dsh_x" ]; then __dsh_hd+=("$__dsh_x"); else __dsh_hf+=("$__dsh_x"); fi; done`)
	w(`__dsh_a=(--die-with-parent --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-user --disable-userns --cap-drop ALL)`)
	if !s.Level.Network() {
		w(`__dsh_a+=(--unshare-net)`)
	}
	w(`__dsh_a+=(--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run)`)
	w(`[ -d "$HOME" ] && __dsh_a+=(--ro-bind "$HOME" "$HOME")`)
	w(`for __dsh_p in "$HOME/.cache"; do [ -d "$__dsh_p" ] && __dsh_a+=(--tmpfs "$__dsh_p"); done`)
	bind := "--ro-bind"
	if s.Level.Writable() {
		bind = "--bind"
	}
	w(`for __dsh_d in "${__dsh_r[@]}"; do __dsh_a+=(%s "$__dsh_d" "$__dsh_d"); done`, bind)
	w(`__dsh_sp=`)
	if rel, ok := strings.CutPrefix(s.SpillDir, strings.TrimSuffix(s.StateDir, "/")+"/"); ok && s.StateDir != "" {
		w(`[ -n "$__dsh_st" ] && __dsh_sp=$__dsh_st/%s`, shq(rel))
	}
	// Bash 4.1: no declare -g, no namerefs; the arrays are the shell's own.
	w(`unset -v __dsh_H __dsh_D __dsh_S __dsh_M __dsh_K __dsh_C __dsh_P; declare -A __dsh_H=() __dsh_D=() __dsh_S=() __dsh_M=() __dsh_K=() __dsh_C=() __dsh_P=(); __dsh_ro=(); __dsh_Df=(); __dsh_rm=(); __dsh_o=; __dsh_g=`)
	w(`%s`, remoteMounts)
	if s.Level.Writable() {
		w(`[ -n "$__dsh_st" ] || __dsh_fail %s`, shq("no usable remote state directory: the sandbox's placeholders cannot be recorded"))
		w(`%s`, strings.NewReplacer("__DSH_WALK", strconv.Itoa(nestedWalkLimit), "__DSH_DEPTH", strconv.Itoa(nestedDepth)).Replace(remoteLib))
		w(`%s`, remoteTables())
		w(`trap '__dsh_g=TERM' TERM; trap '__dsh_g=INT' INT; trap '__dsh_g=HUP' HUP`)
		newRepo := ""
		if s.AllowNewRepository {
			newRepo = "1"
		}
		w(`__dsh_protect %s`, shq(newRepo))
	}
	w(`__dsh_fin`)
	// The shell's own bash by its path ($BASH), named bash ($0), as an
	// unsandboxed command runs: bwrap's execvp would take the first bash on
	// the command's PATH, which may be one the workspace holds.
	launch := `unshare --user --map-current-user --pid --fork --kill-child -- bwrap "${__dsh_a[@]}" --chdir "$PWD" -- "$BASH" -c "$` + s.ScriptVar + `" bash`
	if s.Pre != "" {
		launch = `"${` + s.Pre + `[@]}" ` + launch
	}
	if !s.Level.Writable() {
		w(`unset -v __dsh_p __dsh_q __dsh_h __dsh_hd __dsh_hf __dsh_d __dsh_r __dsh_x __dsh_st __dsh_sp __dsh_c __dsh_z __dsh_n __dsh_m __dsh_hm __dsh_O; exec %s`, launch)
		return b.String()
	}
	w(`if [ -n "$__dsh_g" ]; then __dsh_release; trap - "$__dsh_g"; kill -s "$__dsh_g" $$; exit 143; fi`)
	w(`%s; __dsh_x=$?`, launch)
	w(`__dsh_release; exit "$__dsh_x"`)
	return b.String()
}

// remoteBase is the wrapper's bash for every level: __dsh_in (is $1 $2 or
// below it) and __dsh_chk, which refuses a workspace path ($1, clean) that
// leads through a symlink inside another session's workspace (__dsh_O,
// resolved): a command there could have put it there.
const remoteBase = `__dsh_in() { [ "$2" = / ] || [ "$1" = "$2" ] || [[ $1 == "$2"/* ]]; }
__dsh_chk() {
  local p=$1 o
  while [ -n "$p" ] && [ "$p" != / ]; do
    if [ -L "$p" ]; then for o in "${__dsh_O[@]}"; do [ -n "$o" ] && [ "$p" != "$o" ] && __dsh_in "$p" "$o" &&
      __dsh_fail "the workspace $1 leads through the symlink $p inside another session's workspace $o, which a command there could have made: refusing it"; done; fi
    p=${p%/*}
  done
}`

// remoteMounts is the wrapper's bash that adds the protection's and the
// hidden paths' mounts to __dsh_a, in local args' order: pins (shallowest
// first), protected entries, hidden paths, the state directory.
const remoteMounts = `__dsh_fin() {
  local p d n m
  if [ ${#__dsh_P[@]} -gt 0 ]; then
    m=0; for p in "${!__dsh_P[@]}"; do d=${p//[!\/]/}; [ ${#d} -gt $m ] && m=${#d}; done
    for ((n = 1; n <= m; n++)); do for p in "${!__dsh_P[@]}"; do d=${p//[!\/]/}; [ ${#d} -eq $n ] && [ -d "$p" ] && __dsh_a+=(--bind "$p" "$p"); done; done
  fi
  for p in "${__dsh_ro[@]}"; do [ -e "$p" ] && __dsh_a+=(--ro-bind "$p" "$p"); done
  for p in "${__dsh_hd[@]}"; do __dsh_a+=(--tmpfs "$p" --remount-ro "$p"); done
  for p in "${__dsh_hf[@]}"; do __dsh_a+=(--ro-bind /dev/null "$p"); done
  if [ -n "$__dsh_st" ]; then
    __dsh_a+=(--tmpfs "$__dsh_st"); [ -n "$__dsh_sp" ] && [ -d "$__dsh_sp" ] && [ ! -L "$__dsh_sp" ] && __dsh_a+=(--ro-bind "$__dsh_sp" "$__dsh_sp"); __dsh_a+=(--remount-ro "$__dsh_st")
  fi
}`

// remoteLib is the wrapper's bash for the writable levels: the
// protection (__dsh_protect), the registry (__dsh_lock, __dsh_load,
// __dsh_release) and the mounts (__dsh_fin). Paths are resolved; roots are
// __dsh_r.
const remoteLib = `__dsh_x() { (trap '' TERM INT HUP; exec "$@"); }
__dsh_pin() { local d=${1%/*}; while [ -n "$d" ] && [ "$d" != "$2" ] && __dsh_in "$d" "$2"; do __dsh_P[$d]=1; d=${d%/*}; done; }
__dsh_ent() {
  local w=$1 p=$2 k=$3 c=${4-} q par
  if [ "${5-}" = s ]; then q=$w; par=${p#"$w"/}; while [[ $par == */* ]]; do q=$q/${par%%/*}; par=${par#*/}; [ -L "$q" ] && { set -- "$1" "$2" "$3" "$c" r; break; }; done; fi
  if [ "${5-}" = r ]; then p=$(realpath -m -- "$p" 2>/dev/null) || return; [ "$p" != "$w" ] && __dsh_in "$p" "$w" || return; fi
  q=$p; while [ "$q" != "$w" ] && __dsh_in "$q" "$w"; do
    if [ -n "${__dsh_H[$q]+x}" ]; then __dsh_M[$q]=${__dsh_H[$q]}; __dsh_ro+=("$q"); __dsh_pin "$q" "$w"; return; fi
    q=${q%/*}
  done
  if [ -e "$p" ] || [ -L "$p" ]; then
    q=$p; if [ -L "$p" ]; then q=$(realpath -e -- "$p" 2>/dev/null) || return; fi
    [ "$q" != "$w" ] && __dsh_in "$q" "$w" && { __dsh_ro+=("$q"); __dsh_pin "$q" "$w"; }
    return
  fi
  [ "$k" = - ] && return
  par=${p%/*}
  while [ "$par" != "$w" ] && __dsh_in "$par" "$w" && [ ! -e "$par" ] && [ ! -L "$par" ]; do p=$par; k=d; par=${p%/*}; done
  [[ $p == *$'\n'* ]] && return
  for q in "${!__dsh_K[@]}"; do [ "$q" = "$p" ] || [[ $p == "$q"/* ]] && return; done
  __dsh_K[$p]=$k; __dsh_C[$p]=$c; __dsh_ro+=("$p"); __dsh_pin "$p" "$w"
}
__dsh_gitdir() {
  local w=$1 gd=$2 i
  __dsh_pin "$gd" "$w"; [ "$gd" != "$w" ] && __dsh_P[$gd]=1
  for i in "${!__dsh_gn[@]}"; do __dsh_ent "$w" "$gd/${__dsh_gn[i]}" "${__dsh_gk[i]}" "${__dsh_gc[i]}"; done
}
__dsh_repo() {
  local w=$1 dg=$2 line gd
  if [ -L "$dg" ]; then gd=$(realpath -e -- "$dg" 2>/dev/null) && [ -d "$gd" ] && [ "$gd" != "$w" ] && __dsh_in "$gd" "$w" && { __dsh_pin "$dg" "$w"; __dsh_gitdir "$w" "$gd"; }; return; fi
  if [ -d "$dg" ]; then __dsh_gitdir "$w" "$dg"; return; fi
  if [ ! -e "$dg" ]; then __dsh_ent "$w" "$dg" d; return; fi
  [ -f "$dg" ] || return
  __dsh_ent "$w" "$dg" -
  { IFS= read -r line || [ -n "$line" ]; } < "$dg" 2>/dev/null || return
  line=${line%$'\r'}; [[ $line == gitdir:* ]] || return
  line=${line#gitdir:}; line=${line#"${line%%[![:space:]]*}"}; line=${line%"${line##*[![:space:]]}"}
  case $line in /*) ;; *) line=${dg%/*}/$line;; esac
  gd=$(realpath -e -- "$line" 2>/dev/null) && [ -d "$gd" ] && [ "$gd" != "$w" ] && __dsh_in "$gd" "$w" && __dsh_gitdir "$w" "$gd"
}
__dsh_nested() {
  local w=$1 i=0 d n e; local -a q=("$1") dep=(0)
  [ "$w" = / ] && return
  while [ $i -lt ${#q[@]} ] && [ $i -lt __DSH_WALK ]; do
    d=${q[i]}; n=${dep[i]}; i=$((i+1))
    for e in "$d"/* "$d"/.[!.]* "$d"/..?*; do
      case ${e##*/} in
        .git) [ "$n" -gt 0 ] && { [ -e "$e" ] || [ -L "$e" ]; } && __dsh_repo "$w" "$e";;
        node_modules) ;;
        *) [ $((n+1)) -lt __DSH_DEPTH ] && [ -d "$e" ] && [ ! -L "$e" ] && { q+=("$e"); dep+=($((n+1))); };;
      esac
    done
  done
}
__dsh_hooks() {
  local w=$1 line sec= k v
  [ -f "$w/.git/config" ] || return
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line#"${line%%[![:space:]]*}"}; line=${line%"${line##*[![:space:]]}"}
    case $line in \[*) sec=${line#[}; sec=${sec%]}; sec=${sec#"${sec%%[![:space:]]*}"}; sec=${sec%"${sec##*[![:space:]]}"}; sec=${sec,,}; continue;; *=*) ;; *) continue;; esac
    k=${line%%=*}; k=${k%"${k##*[![:space:]]}"}; [ "$sec" = core ] && [ "${k,,}" = hookspath ] || continue
    v=${line#*=}; v=${v#"${v%%[![:space:]]*}"}; v=${v#\"}; v=${v%\"}
    [ -n "$v" ] || continue; case $v in /*) ;; *) v=$w/$v;; esac
    __dsh_ent "$w" "$v" d "" r
  done < "$w/.git/config"
}
__dsh_alive() { local s f; { read -r s < "/proc/$1/stat"; } 2>/dev/null || return 1; s=${s##*) }; f=($s); [ "${f[19]-}" = "$2" ]; }
__dsh_lock() {
  __dsh_R=$__dsh_st/placeholders
  [ -d "$__dsh_R" ] || __dsh_x mkdir -m 700 -- "$__dsh_R" 2>/dev/null
  [ -d "$__dsh_R" ] && [ ! -L "$__dsh_R" ] && [ -O "$__dsh_R" ] || return 1
  exec {__dsh_lk}>>"$__dsh_R/lock" && __dsh_x flock -w 30 "$__dsh_lk"
}
__dsh_unlock() { exec {__dsh_lk}>&-; }
__dsh_load() {
  local f o dev ino k size p; __dsh_H=(); __dsh_D=(); __dsh_Df=()
  for f in "$__dsh_R"/o-*; do
    [ -f "$f" ] || continue; o=${f##*/o-}; [ "$o" = "$__dsh_o" ] && continue
    if __dsh_alive "${o%%-*}" "${o#*-}"; then
      while IFS=$'\x1f' read -r dev ino k size p; do [[ $p == /* ]] && __dsh_H[$p]="$dev"$'\x1f'"$ino"$'\x1f'"$k"$'\x1f'"$size"; done < "$f"
    else
      __dsh_Df+=("$f")
      while IFS=$'\x1f' read -r dev ino k size p; do [[ $p == /* ]] && __dsh_D[$p]="$dev"$'\x1f'"$ino"$'\x1f'"$k"$'\x1f'"$size"; done < "$f"
    fi
  done
}
__dsh_remove() {
  local p dev ino size f want wd wi wk ws
  local -a ps=(); for p in "${!__dsh_S[@]}"; do [ -z "${__dsh_H[$p]+x}" ] && ps+=("$p"); done
  [ ${#ps[@]} -gt 0 ] || return 0
  while read -r dev ino size f p; do
    want=${__dsh_S[$p]-}; [ -n "$want" ] || continue
    IFS=$'\x1f' read -r wd wi wk ws <<< "$want"
    [ "$dev $ino" = "$wd $wi" ] || [ "$wd" = - ] || continue
    case $wk in d) (( (0x$f & 0xF000) == 0x4000 )) && __dsh_rm+=("$p");; f) (( (0x$f & 0xF000) == 0x8000 )) && [ "$size" = "$ws" ] && __dsh_rm+=("$p");; esac
  done < <(trap '' TERM INT HUP; exec stat -c '%d %i %s %f %n' -- "${ps[@]}" 2>/dev/null)
  return 0
}
__dsh_flush() { [ ${#__dsh_rm[@]} -gt 0 ] && __dsh_x rm -df -- "${__dsh_rm[@]}" 2>/dev/null; __dsh_rm=(); return 0; }
__dsh_record() {
  local p f=$__dsh_R/o-$__dsh_o
  if [ ${#__dsh_M[@]} -eq 0 ]; then [ -e "$f" ] && __dsh_rm+=("$f"); return 0; fi
  { for p in "${!__dsh_M[@]}"; do printf '%s\x1f%s\n' "${__dsh_M[$p]}" "$p"; done; } >| "$f"
}
__dsh_protect() {
  local w i rel dirs=() made=() p dev ino size f t c
  t=; { read -r t < /proc/$$/stat; } 2>/dev/null; t=${t##*) }; f=($t); __dsh_o=$$-${f[19]-0}
  __dsh_lock || __dsh_fail "the placeholder registry in $__dsh_st cannot be locked (flock)"
  __dsh_load; __dsh_S=(); for p in "${!__dsh_D[@]}"; do __dsh_S[$p]=${__dsh_D[$p]}; done; __dsh_remove
  __dsh_rm+=("${__dsh_Df[@]}"); __dsh_flush
  for i in "${!__dsh_r[@]}"; do
    w=${__dsh_r[i]}
    for rel in "${__dsh_dp[@]}"; do __dsh_ent "$w" "$w/$rel" d; done
    if [ "$i" != 0 ] || [ -z "$1" ] || [ -e "$w/.git" ] || [ -L "$w/.git" ]; then __dsh_repo "$w" "$w/.git"; fi
    if [ -n "$__dsh_hm" ] && __dsh_in "$__dsh_hm" "$w"; then
      for rel in "${__dsh_hp[@]}"; do if [[ $rel == */* ]]; then __dsh_ent "$w" "$__dsh_hm/$rel" d "" s; else __dsh_ent "$w" "$__dsh_hm/$rel" "${__dsh_hk[$rel]-d}"; fi; done
    fi
    __dsh_nested "$w"
    __dsh_hooks "$w"
    for p in "${__dsh_hd[@]}" "${__dsh_hf[@]}" "$__dsh_st"; do [ "$p" != "$w" ] && __dsh_in "$p" "$w" && __dsh_pin "$p" "$w"; done
    for p in "${__dsh_O[@]}"; do [ -n "$p" ] && [ "$p" != "$w" ] && __dsh_in "$p" "$w" && { __dsh_pin "$p" "$w"; __dsh_P[$p]=1; }; done
  done
  for p in "${!__dsh_K[@]}"; do c=${__dsh_C[$p]}; __dsh_M[$p]=-$'\x1f'-$'\x1f'"${__dsh_K[$p]}"$'\x1f'"${#c}"; done
  __dsh_record
  local o=$-; set -C
  for p in "${!__dsh_K[@]}"; do
    if [ "${__dsh_K[$p]}" = d ]; then dirs+=("$p"); else { printf '%s' "${__dsh_C[$p]}" > "$p"; } 2>/dev/null && made+=("$p"); fi
  done
  [[ $o == *C* ]] || set +C
  if [ ${#dirs[@]} -gt 0 ]; then
    if __dsh_x mkdir -- "${dirs[@]}" 2>/dev/null; then made+=("${dirs[@]}"); else for p in "${dirs[@]}"; do [ -d "$p" ] && [ ! -L "$p" ] && made+=("$p"); done; fi
  fi
  if [ ${#made[@]} -gt 0 ]; then
    while read -r dev ino size f p; do [ -n "${__dsh_K[$p]+x}" ] && __dsh_M[$p]="$dev"$'\x1f'"$ino"$'\x1f'"${__dsh_K[$p]}"$'\x1f'"$size"; done < <(trap '' TERM INT HUP; exec stat -c '%d %i %s %f %n' -- "${made[@]}" 2>/dev/null)
  fi
  __dsh_S=(); for p in "${!__dsh_M[@]}"; do [[ ${__dsh_M[$p]} == -* ]] || __dsh_S[$p]=${__dsh_M[$p]}; done
  __dsh_M=(); for p in "${!__dsh_S[@]}"; do __dsh_M[$p]=${__dsh_S[$p]}; done
  __dsh_record; __dsh_flush; __dsh_unlock
}
__dsh_release() {
  [ ${#__dsh_M[@]} -gt 0 ] || return 0
  __dsh_lock || return 0
  local p; __dsh_load; __dsh_S=(); for p in "${!__dsh_M[@]}"; do __dsh_S[$p]=${__dsh_M[$p]}; done; __dsh_remove; __dsh_M=(); __dsh_record; __dsh_flush; __dsh_unlock
}`

// remoteTables are the protected names as bash arrays, from the Go
// tables: __dsh_dp (DefaultProtected but .git), __dsh_hp (HomeProtected),
// and gitProtected's names, kinds (d, f or -) and contents.
func remoteTables() string {
	var dp, hp, gn, gk, gc []string
	for _, n := range DefaultProtected {
		if n != ".git" {
			dp = append(dp, shq(n))
		}
	}
	var hk []string
	for _, n := range HomeProtected {
		hp = append(hp, shq(n))
		if homeFilePlaceholders[n] {
			hk = append(hk, "["+shq(n)+"]=f")
		}
	}
	for _, g := range gitProtected {
		k := "f"
		switch {
		case g.dir:
			k = "d"
		case g.content == "-":
			k = "-"
		}
		gn, gk, gc = append(gn, shq(g.name)), append(gk, k), append(gc, Quote(g.content))
	}
	return fmt.Sprintf("__dsh_dp=(%s); __dsh_hp=(%s); unset -v __dsh_hk; declare -A __dsh_hk=(%s); __dsh_gn=(%s); __dsh_gk=(%s); __dsh_gc=(%s)",
		strings.Join(dp, " "), strings.Join(hp, " "), strings.Join(hk, " "), strings.Join(gn, " "), strings.Join(gk, " "), strings.Join(gc, " "))
}

// remoteHidden is the Credentials table as bash statements appending the
// host's candidate paths to the array __dsh_h, without a fork: the home's
// entries, both config and data places, and the variables' values (split
// at colons).
func remoteHidden() []string {
	var out []string
	add := func(base, rel string) string { return `__dsh_h+=(` + base + shq(rel) + `)` }
	for _, c := range Credentials {
		rel := ""
		if c.Path != "" {
			rel = "/" + c.Path
		}
		switch {
		case c.Base == "~":
			out = append(out, add(`"$HOME"`, rel))
		case c.Base == "config":
			out = append(out, add(`"$HOME/.config"`, rel), `[ -n "${XDG_CONFIG_HOME-}" ] && `+add(`"$XDG_CONFIG_HOME"`, rel))
		case c.Base == "data":
			out = append(out, add(`"$HOME/.local/share"`, rel), `[ -n "${XDG_DATA_HOME-}" ] && `+add(`"$XDG_DATA_HOME"`, rel))
		case strings.HasPrefix(c.Base, "$"):
			v := c.Base[1:]
			// Every colon-separated element, with rel after it.
			out = append(out, `[ -n "${`+v+`-}" ] && { IFS=: read -r -a __dsh_y <<< "$`+v+`"; for __dsh_x in "${__dsh_y[@]}"; do [ -n "$__dsh_x" ] && `+add(`"$__dsh_x"`, rel)+`; done; }`)
		}
	}
	return out
}

// shq single-quotes s for bash (a pair of quotes for the empty string).
func shq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Quote makes s one bash word that stays on one line: single quotes when s
// is printable ASCII without a quote or backslash, else $'...' with escapes.
func Quote(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '\'' && c != '\\'
	}
	if plain {
		return "'" + s + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
