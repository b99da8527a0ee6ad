package acptest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Proc is a living (not zombie) process found in /proc.
type Proc struct {
	PID, PPID, PGID, SID int
	State                byte   // R, S, D, T, …
	Cmdline              string // arguments joined by spaces
}

func (p Proc) String() string {
	return fmt.Sprintf("pid %d (%s) ppid %d pgid %d", p.PID, p.Cmdline, p.PPID, p.PGID)
}

// NewMarker returns a unique string to put in an agent's environment (or a
// command line) so that ProcsWithMarker finds every process descending from
// it, including ones that escaped their process group or session.
func NewMarker() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "acptest-" + hex.EncodeToString(b)
}

// Procs lists the living processes visible in /proc, skipping any that
// vanish while being read. It fails only if /proc cannot be listed.
func Procs() ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var procs []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// Descendants returns the living descendants of pid (children, their
// children, …), found through parent links. A process re-parented away (a
// double fork) is no longer a descendant: use a marker for those.
func Descendants(pid int) ([]Proc, error) {
	procs, err := Procs()
	if err != nil {
		return nil, err
	}
	children := map[int][]Proc{}
	for _, p := range procs {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []Proc
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			out = append(out, c)
			queue = append(queue, c.PID)
		}
	}
	return out, nil
}

// ProcsWithMarker returns the living processes, other than the calling one,
// whose command line or environment contains marker. Environments of other
// users' processes (or non-dumpable ones, when not root) cannot be read; only
// their command lines are searched.
func ProcsWithMarker(marker string) ([]Proc, error) {
	procs, err := Procs()
	if err != nil {
		return nil, err
	}
	var out []Proc
	self := os.Getpid()
	for _, p := range procs {
		if p.PID == self {
			continue
		}
		if strings.Contains(p.Cmdline, marker) || environHas(p.PID, marker) {
			out = append(out, p)
		}
	}
	return out, nil
}

// WaitNoProcsWithMarker polls /proc until no living process carries marker
// and returns nil, or returns the survivors with an error when ctx ends.
// Processes die asynchronously after a kill, so an assertion that nothing
// survived needs this short grace.
func WaitNoProcsWithMarker(ctx context.Context, marker string) ([]Proc, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		procs, err := ProcsWithMarker(marker)
		if err != nil {
			return nil, err
		}
		if len(procs) == 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return procs, fmt.Errorf("processes with marker %s survive: %w", marker, ctx.Err())
		case <-tick.C:
		}
	}
}

// readProc reads one process; ok is false if it is gone or a zombie.
func readProc(pid int) (Proc, bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Proc{}, false
	}
	p, err := parseStat(stat)
	if err != nil || p.State == 'Z' || p.State == 'X' {
		return Proc{}, false
	}
	if cmd, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
		p.Cmdline = strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return p, true
}

// parseStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp session …".
// comm may hold spaces and parentheses, so fields are taken after the last ')'.
func parseStat(stat []byte) (Proc, error) {
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Proc{}, errors.New("malformed stat")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return Proc{}, fmt.Errorf("malformed stat pid: %w", err)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return Proc{}, errors.New("malformed stat fields")
	}
	p := Proc{PID: pid, State: f[0][0]}
	for i, dst := range []*int{&p.PPID, &p.PGID, &p.SID} {
		if *dst, err = strconv.Atoi(f[i+1]); err != nil {
			return Proc{}, fmt.Errorf("malformed stat field: %w", err)
		}
	}
	return p, nil
}

func environHas(pid int, marker string) bool {
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	return err == nil && bytes.Contains(env, []byte(marker))
}
