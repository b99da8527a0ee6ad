package local

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// limiter puts each command in a pids cgroup of its own below one cgroup
// for all of the daemon's commands: cgroup v2 (the child is born in it,
// CLONE_INTO_CGROUP) where the pids controller is enabled for the daemon's
// cgroup, else cgroup v1's pids hierarchy (the spawn thread moves into the
// command's cgroup for the fork, so the child is born in it too).
type limiter struct {
	v2   bool
	root string // the daemon's commands cgroup
	home string // v1: where the spawn thread waits between forks (= root)
	orig string // v1: the daemon's own pids cgroup
	pids int
	log  *zap.Logger

	mu     sync.Mutex
	next   int
	parked []*commandCgroup // done with their command; reused once empty
	closed bool
	ready  *commandCgroup // prepared for the next fork; spawn thread only
}

// maxParked bounds the command cgroups kept for reuse; more are removed.
const maxParked = 8

// cgroupBase is where the cgroup hierarchies are mounted.
const cgroupBase = "/sys/fs/cgroup"

// newLimiter sets up the daemon's commands cgroup, or says why it cannot.
func newLimiter(l Limits, log *zap.Logger) (*limiter, error) {
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.TotalPids == 0 {
		l.TotalPids = DefaultTotalPids
		if max := pidMax(); max > 0 {
			l.TotalPids = min(l.TotalPids, max/2)
		}
	}
	if l.Pids < 0 && l.TotalPids < 0 {
		return nil, errors.New("no limit asked for")
	}
	v2dir, v1dir, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("dsh-acp-%d-%s", os.Getpid(), randomName())
	var reasons []string
	if v2dir != "" {
		if hasWord(filepath.Join(v2dir, "cgroup.subtree_control"), "pids") {
			b := bounded(l, room(v2dir, v2Mount(v2dir)))
			root := filepath.Join(v2dir, name)
			if err := makeLimited(root, b.TotalPids); err == nil {
				sweepStale(v2dir)
				logLimits(log, b, "v2")
				return &limiter{v2: true, root: root, pids: b.Pids, log: log}, nil
			} else {
				reasons = append(reasons, "cgroup v2: "+err.Error())
			}
		} else {
			reasons = append(reasons, "cgroup v2: the pids controller is not enabled for "+v2dir)
		}
	}
	if v1dir != "" {
		b := bounded(l, room(v1dir, filepath.Join(cgroupBase, "pids")))
		root := filepath.Join(v1dir, name)
		if err := makeLimited(root, b.TotalPids); err == nil {
			sweepStale(v1dir)
			logLimits(log, b, "v1")
			return &limiter{root: root, home: root, orig: v1dir, pids: b.Pids, log: log}, nil
		} else {
			reasons = append(reasons, "cgroup v1 pids: "+err.Error())
		}
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "no pids cgroup hierarchy is mounted")
	}
	return nil, errors.New(strings.Join(reasons, "; "))
}

// budget is Limits as they apply below a shared pids budget.
type budget struct {
	Limits
	Room    int // tasks the cgroups above allowed at start; -1: unbounded
	Reserve int // of Room, kept for the daemon itself
}

// minReserve is the least of a shared pids budget the daemon keeps for its
// own threads and processes (Go runtime threads, MCP servers, hooks).
const minReserve = 64

// reserveOf is what the daemon keeps of room free tasks: a quarter, at
// least minReserve, at most half.
func reserveOf(room int) int { return min(max(minReserve, room/4), room/2) }

// bounded fits l below room free tasks (-1: no limit above): the commands
// together get room minus the daemon's reserve, however TotalPids was
// set, and one command at most half of what all commands get, so one
// runaway command leaves room for the others.
func bounded(l Limits, room int) budget {
	b := budget{Limits: l, Room: room}
	if room >= 0 {
		b.Reserve = reserveOf(room)
		free := max(room-b.Reserve, 1)
		if b.TotalPids < 0 || b.TotalPids > free {
			b.TotalPids = free
		}
	}
	if b.TotalPids > 0 && b.Pids > 0 {
		b.Pids = min(b.Pids, max(b.TotalPids/2, 1))
	}
	return b
}

// room is how many more tasks the pids cgroups from dir up to the
// hierarchy's root (mount) allow now: the least pids.max - pids.current
// of those with a limit, or -1 when none has one.
func room(dir, mount string) int {
	free := -1
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if n, ok := readLimit(d); ok {
			if free < 0 || n < free {
				free = n
			}
		}
		if d == filepath.Clean(mount) || d == "/" || !strings.HasPrefix(d, filepath.Clean(mount)) {
			return free
		}
	}
}

// readLimit is pids.max - pids.current of the cgroup dir (at least 0);
// ok is false when it has no limit.
func readLimit(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "pids.max"))
	if err != nil {
		return 0, false
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil { // "max"
		return 0, false
	}
	b, err = os.ReadFile(filepath.Join(dir, "pids.current"))
	if err != nil {
		return 0, false
	}
	cur, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false
	}
	return max(limit-cur, 0), true
}

// v2Mount is the cgroup v2 mount dir lies below.
func v2Mount(dir string) string {
	if strings.HasPrefix(dir, filepath.Join(cgroupBase, "unified")+"/") || dir == filepath.Join(cgroupBase, "unified") {
		return filepath.Join(cgroupBase, "unified")
	}
	return cgroupBase
}

func logLimits(log *zap.Logger, b budget, hierarchy string) {
	log.Info("process limits", zap.String("cgroup", hierarchy), zap.Int("perCommand", b.Pids),
		zap.Int("allCommands", b.TotalPids), zap.Int("sharedRoom", b.Room), zap.Int("daemonReserve", b.Reserve))
}

// ownCgroups finds the daemon's cgroup directories: the v2 one and the v1
// pids one (either may be "").
func ownCgroups() (v2, v1 string, err error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			for _, mnt := range []string{cgroupBase, filepath.Join(cgroupBase, "unified")} {
				if _, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err == nil {
					v2 = filepath.Join(mnt, parts[2])
					break
				}
			}
		case inList(parts[1], "pids"):
			if d := filepath.Join(cgroupBase, "pids", parts[2]); isDirPath(d) {
				v1 = d
			}
		}
	}
	return v2, v1, sc.Err()
}

func inList(list, want string) bool {
	for _, s := range strings.Split(list, ",") {
		if s == want {
			return true
		}
	}
	return false
}

func isDirPath(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// makeLimited creates dir with pids.max set to max (no write when max < 0).
func makeLimited(dir string, max int) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if max < 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		_ = os.Remove(dir)
		return err
	}
	return nil
}

// sweepStale removes the commands cgroups of daemons that are gone.
func sweepStale(parent string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "dsh-acp-")
		pid, _, _ := strings.Cut(rest, "-")
		if !ok || !e.IsDir() {
			continue
		}
		if n, err := strconv.Atoi(pid); err != nil || n == os.Getpid() || unix.Kill(n, 0) == nil {
			continue
		}
		removeTree(filepath.Join(parent, e.Name()))
	}
}

// removeTree removes an (empty of processes) cgroup and its children.
func removeTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir)
}

func randomName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func pidMax() int {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func hasWord(path, word string) bool {
	b, err := os.ReadFile(path)
	return err == nil && inList(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", ","), word)
}

// commandCgroup is one command's pids cgroup. Once its command is gone
// and it is empty again, it is reused for a later command (finish), so a
// command costs no mkdir and no rmdir of a cgroup, which are slow: the
// kernel tears a cgroup down in the background, on the same CPUs the
// commands run on.
type commandCgroup struct {
	l   *limiter
	dir string
	fd  int // v2: the directory, for CLONE_INTO_CGROUP; -1 otherwise
	// events and current are pids.events and pids.current, kept open (-1
	// when they could not be opened: the cgroup is then not reused).
	events, current int
	// hits is pids.events' "max" count when the cgroup was handed to its
	// command: a reused cgroup's count includes its earlier commands'.
	hits int64
}

// create makes the next command's cgroup, or takes a parked one that is
// empty now. It runs on the spawn thread.
func (l *limiter) create() (*commandCgroup, error) {
	if c := l.unpark(); c != nil {
		return c, nil
	}
	l.mu.Lock()
	l.next++
	dir := filepath.Join(l.root, "cmd-"+strconv.Itoa(l.next))
	l.mu.Unlock()
	if err := makeLimited(dir, l.pids); err != nil {
		return nil, err
	}
	c := &commandCgroup{l: l, dir: dir, fd: -1, events: -1, current: -1}
	if l.v2 {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			_ = os.Remove(dir)
			return nil, err
		}
		c.fd = fd
	}
	c.events = openRead(filepath.Join(dir, "pids.events"))
	c.current = openRead(filepath.Join(dir, "pids.current"))
	return c, nil
}

// openRead opens a cgroup file for reading; -1 when it cannot.
func openRead(path string) int {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// apply sets up attr so the child is born in c (v2).
func (c *commandCgroup) apply(attr *syscall.SysProcAttr) {
	if c.fd >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, c.fd
	}
}

// take returns the cgroup for the spawn thread's next command: the one
// prepared after the previous fork (the thread already in it, on v1), or a
// new one. It runs on the spawn thread.
func (l *limiter) take() (*commandCgroup, error) { return l.takeIn(&l.ready) }

// prepare makes the spawn thread's next cgroup ahead of time, off the path
// of a spawn; on v1 it moves the thread into it, so the next child is born
// there. It runs on the spawn thread, after a fork.
func (l *limiter) prepare() { l.prepareIn(&l.ready) }

// takeIn is take for the thread whose prepared cgroup is *slot (the spawn
// thread's, or a guard thread's: see Guard.start). It runs on that thread.
func (l *limiter) takeIn(slot **commandCgroup) (*commandCgroup, error) {
	if c := *slot; c != nil {
		*slot = nil
		return c, nil
	}
	c, err := l.create()
	if err != nil {
		return nil, err
	}
	if err := l.enter(c); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// prepareIn is prepare for the thread whose prepared cgroup is *slot.
// Moving a task between v1 cgroups may wait for an RCU grace period
// (milliseconds), which is why it is done here, off the start's path.
func (l *limiter) prepareIn(slot **commandCgroup) {
	if *slot != nil {
		return
	}
	c, err := l.create()
	if err != nil {
		l.log.Warn("cannot prepare a command cgroup", zap.Error(err))
		l.leave()
		return
	}
	if err := l.enter(c); err != nil {
		l.log.Warn("cannot move a spawning thread into a command cgroup", zap.Error(err))
		c.remove()
		l.leave()
		return
	}
	*slot = c
}

// dropIn moves the calling thread out of the cgroup *slot holds and
// removes it: a guard thread's last act.
func (l *limiter) dropIn(slot **commandCgroup) {
	if c := *slot; c != nil {
		*slot = nil
		l.leave()
		c.remove()
	}
}

// enter moves the calling thread into c (v1; nothing to do on v2).
func (l *limiter) enter(c *commandCgroup) error {
	if l.v2 {
		return nil
	}
	return os.WriteFile(filepath.Join(c.dir, "tasks"), []byte(strconv.Itoa(unix.Gettid())), 0)
}

// leave moves the calling thread back to the daemon's commands cgroup
// (v1), so a command cgroup it left can be removed.
func (l *limiter) leave() {
	if !l.v2 {
		_ = os.WriteFile(filepath.Join(l.home, "tasks"), []byte(strconv.Itoa(unix.Gettid())), 0)
	}
}

// finish is called once c's command was reaped: it reports whether a fork
// of that command was refused by the pids limit, and parks c for a later
// command (see unpark), or removes it, off the caller's path, when enough
// are parked (a cgroup something escaped into stays until close).
func (c *commandCgroup) finish() (hit bool) {
	n, ok := c.maxCount()
	hit = ok && n > c.hits
	if ok && c.current >= 0 && c.l.park(c) {
		return hit
	}
	go c.remove()
	return hit
}

// maxCount reads pids.events' "max" count: how many forks the limit refused.
func (c *commandCgroup) maxCount() (int64, bool) {
	b, ok := readCgroupFile(c.events, filepath.Join(c.dir, "pids.events"))
	if !ok {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "max "); found {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// empty reports whether no task is in c (false when it cannot tell).
func (c *commandCgroup) empty() bool {
	if c.current < 0 {
		return false
	}
	b, ok := readCgroupFile(c.current, "")
	return ok && strings.TrimSpace(string(b)) == "0"
}

// readCgroupFile reads a small cgroup file from its kept descriptor (from
// offset 0: the kernel renders it afresh), or by path when fd < 0 and path
// is set.
func readCgroupFile(fd int, path string) ([]byte, bool) {
	if fd < 0 {
		if path == "" {
			return nil, false
		}
		b, err := os.ReadFile(path)
		return b, err == nil
	}
	var buf [128]byte
	for {
		n, err := unix.Pread(fd, buf[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n < 0 {
			return nil, false
		}
		return buf[:n], true
	}
}

// park keeps c, whose command is done, for a later command; false when
// the limiter keeps enough already or is closed. c may not be empty yet:
// the spawn thread may still wait in it (a command that ended before the
// thread moved on to the next cgroup), or an escaped process may live on.
func (l *limiter) park(c *commandCgroup) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.parked) >= maxParked {
		return false
	}
	l.parked = append(l.parked, c)
	return true
}

// unpark takes a parked cgroup that no task is in any more, with its
// pids.events count taken afresh (a process left behind by its last command
// may have run into the limit after that command ended); nil when none is
// empty.
func (l *limiter) unpark() *commandCgroup {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, c := range l.parked {
		if !c.empty() {
			continue
		}
		n, ok := c.maxCount()
		if !ok {
			continue
		}
		c.hits = n
		l.parked = slices.Delete(l.parked, i, i+1)
		return c
	}
	return nil
}

// remove frees c once its processes are gone (a failure leaves it for the
// limiter's close).
func (c *commandCgroup) remove() {
	for _, fd := range []*int{&c.fd, &c.events, &c.current} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	_ = os.Remove(c.dir)
}

// close removes the daemon's commands cgroup (and whatever command
// cgroups are left and empty). It runs on the spawn thread, last, and moves
// the thread back to the daemon's cgroup first.
func (l *limiter) close() {
	l.mu.Lock()
	l.closed = true
	parked := l.parked
	l.parked = nil
	l.mu.Unlock()
	for _, c := range parked {
		c.remove()
	}
	if l.ready != nil {
		c := l.ready
		l.ready = nil
		l.leave()
		c.remove()
	}
	if l.orig != "" {
		_ = os.WriteFile(filepath.Join(l.orig, "tasks"), []byte(strconv.Itoa(unix.Gettid())), 0)
	}
	removeTree(l.root)
}
