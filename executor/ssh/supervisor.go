package ssh

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// supervisor is the one long-lived remote bash of a connection, in a
// session of its own: it signals the commands' process groups for the
// daemon, and ends them when the connection goes away.
//
// Every command's prelude appends "PGID START" (the leader's pid and its
// start time from /proc) to the connection's registry file before it runs
// the command. The daemon sends the supervisor "T PGID START" (TERM to the
// group), "K PGID START" (KILL) and, once a command is released,
// "R PGID START". A signal is sent only while the group still is the
// command's: when process PGID is gone (the leader exited; its leftovers
// may hold the group) or is the leader itself (same start time); a new
// process that took the pid is never signalled. At end of input (the
// connection is gone: sshd closed the pipe, or died) it sends TERM to every
// registered group not released, waits the grace period and sends KILL.
//
// Signals travel this way rather than as SSH "signal" requests (which
// reach only a live leader's group and not every server honours) or as
// `kill` in a new channel per signal (a process start and a round trip
// each); and the supervisor, not a watcher forked into every command,
// ends the groups on a lost connection, so a command costs no process
// beyond its own.
type supervisor struct {
	rc    *channel
	reg   string      // the registry file on the host
	lines chan string // queued for the writer
	log   *zap.Logger
}

// supervisorPrelude is the supervisor's bash; reg is the registry path.
func supervisorPrelude(reg string, grace time.Duration) string {
	g := seconds(grace)
	return strings.Join([]string{
		"unset -v n p",
		"umask 077",
		"trap '' TERM INT HUP QUIT PIPE",
		"exec 2>/dev/null",
		"__reg=" + sandbox.Quote(reg),
		`{ set -C; : >"$__reg"; } || { echo fail; exit 1; }`,
		"set +C",
		"declare -A __rel",
		// __ours PGID START: the group may be signalled.
		`__ours() { local want=${2-} s; read -r s < "/proc/$1/stat" || return 0; s=${s##*) }; set -- $s; [ -z "$want" ] || [ "${20-}" = "$want" ]; }`,
		"echo ready",
		`while IFS=' ' read -r __op __pg __st; do case $__op in T) __ours "$__pg" "$__st" && kill -TERM -- "-$__pg";; K) __ours "$__pg" "$__st" && kill -KILL -- "-$__pg";; R) __rel["$__pg $__st"]=1;; esac; done`,
		`mapfile -t __l < "$__reg"`,
		`__end() { local sig=$1 e; for e in "${__l[@]}"; do set -- $e; [ -n "${1-}" ] && [ -z "${__rel["$1 ${2-}"]-}" ] && __ours "$1" "${2-}" && kill "$sig" -- "-$1"; done; }`,
		`__end -TERM`,
		fmt.Sprintf(`if exec 9<>/dev/ptmx; then read -t %s -u 9; else sleep %s; fi`, g, g),
		`__end -KILL`,
		`rm -f -- "$__reg"`,
	}, "; ")
}

// startSupervisor starts the connection's supervisor and waits until it
// listens.
func (c *conn) startSupervisor(ctx context.Context) error {
	dir := strings.TrimSuffix(c.spillDir, "/spill")
	if c.spillDir == "" {
		dir = "/tmp" // set -C keeps a planted file from being used
	}
	reg := dir + "/conn-" + randomHex(12) + ".groups"
	rc, err := c.exec(c.cmdline)
	if err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	prelude := supervisorPrelude(reg, c.d.timing.grace)
	if _, err := rc.ch.Write(stream(prelude)); err != nil {
		rc.ch.Close()
		return fmt.Errorf("supervisor: %w", err)
	}
	go func() { _, _ = io.Copy(io.Discard, rc.ch.Stderr()) }()
	stop := context.AfterFunc(ctx, func() { rc.ch.Close() })
	br := bufio.NewReader(rc.ch)
	line, err := readMarked(br, "ready", "fail")
	stop()
	if err != nil || line != "ready" {
		rc.ch.Close()
		return fmt.Errorf("supervisor did not start on the host (%v %q)", err, line)
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	s := &supervisor{rc: rc, reg: reg, lines: make(chan string, 4096), log: c.d.log}
	c.sup = s
	go s.writer(c)
	return nil
}

// readMarked reads lines until one is one of words (rc-file noise may
// come first).
func readMarked(br *bufio.Reader, words ...string) (string, error) {
	seen := 0
	for {
		line, err := br.ReadString('\n')
		w := strings.TrimSuffix(line, "\n")
		for _, word := range words {
			if w == word && err == nil {
				return w, nil
			}
		}
		if err != nil {
			return "", err
		}
		if seen += len(line); seen > noiseLimit {
			return "", errors.New("too much output")
		}
	}
}

// writer feeds queued lines to the supervisor. When the supervisor's
// channel ends while the connection lives, nothing could stop the
// connection's commands any more: the connection is closed, which ends
// them as a lost connection does.
func (s *supervisor) writer(c *conn) {
	for {
		select {
		case line := <-s.lines:
			if _, err := s.rc.ch.Write([]byte(line + "\n")); err != nil {
				return
			}
		case <-s.rc.exited:
			select {
			case <-c.dead:
			default:
				s.log.Warn("the host's supervisor ended; closing the connection", zap.String("host", c.d.target.Addr()))
				c.setReason(errors.New("the supervisor on the host ended"))
				c.client.Close()
			}
			return
		case <-c.dead:
			return
		}
	}
}

// send queues one line; it never blocks (a full queue drops the line and
// logs it: the daemon sends a handful per command).
func (s *supervisor) send(line string) {
	select {
	case <-s.rc.exited:
		return // the connection (or the supervisor) is gone: so are the groups
	case s.lines <- line:
	default:
		s.log.Warn("supervisor queue full; a signal was dropped")
	}
}
