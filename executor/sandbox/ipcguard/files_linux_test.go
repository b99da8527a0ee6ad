package ipcguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The file tests run real commands (bash, sed, truncate, dd, perl, git)
// in bubblewrap started from a guarded thread, and judge them on the host:
// a FIFO's host reader that received nothing, a file outside the workspace
// unchanged byte for byte. Each way is also run at level off, where it
// must land, so each check can fail.

// fifoReader is a host process's reader on a FIFO; it keeps a write end
// of its own open (never written), so a writer's bytes wait in the pipe
// and a read finds nothing rather than an end of file.
type fifoReader struct {
	mu  sync.Mutex
	got []byte
	r   int
}

func newFIFOReader(t *testing.T, path string, owner int) *fifoReader {
	t.Helper()
	if err := unix.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	chown(t, path, owner)
	r, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(r); unix.Close(w) })
	return &fifoReader{r: r}
}

// received is everything written to the FIFO so far.
func (f *fifoReader) received() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(f.r, buf)
		if err != nil || n <= 0 {
			return string(f.got)
		}
		f.got = append(f.got, buf[:n]...)
	}
}

// linkWays are the writes to a workspace file hard-linked to a file
// outside, by the name of the link; sed -i never writes in place (it
// renames a new file over the name), so it is no control.
var linkWays = map[string]struct {
	cmd, want string // the command (the link is "$f") and the content after
	lands     bool   // at level off, the file outside changes
}{
	"append": {`echo x >> "$f"`, "original\nx\n", true},
	"sed":    {`sed -i s/original/changed/ "$f"`, "changed\n", false},
	"trunc":  {`truncate -s 0 "$f"`, "", true},
	"dd":     {`printf x | dd of="$f" conv=notrunc status=none`, "xriginal\n", true},
	"rdwr":   {`perl -MFcntl -e 'sysopen(F, $ARGV[0], O_RDWR) or die "$!"; syswrite(F, "X")' "$f"`, "Xriginal\n", true},
	"ptrunc": {`perl -e 'truncate($ARGV[0], 1) or die "$!"' "$f"`, "o", true},
}

// ordinaryFiles is ordinary work on files that must keep working: each
// line prints its name and "ok".
const ordinaryFiles = `
export HOME=$PWD GIT_CONFIG_NOSYSTEM=1
r() { n=$1; shift; if out=$( "$@" 2>&1 ); then echo "$n: ok"; else echo "$n: failed: $out"; fi; }
r write sh -c 'echo hello > new.txt && echo more >> new.txt && test "$(cat new.txt)" = "hello
more"'
r devnull sh -c 'echo x >/dev/null 2>&1 && : > /dev/null'
r stderr sh -c 'echo x > /dev/stderr && echo y > /dev/fd/2 && echo z > /proc/self/fd/2'
r pipe sh -c 'echo abc | tr a-z A-Z | grep -q ABC'
r heredoc sh -c 'cat > here.txt <<EOF
line
EOF
test "$(cat here.txt)" = line'
r procsub bash -c 'echo p | tee >(cat > ps.txt) >/dev/null; sleep 0.1; test "$(cat ps.txt)" = p'
r tmp sh -c 'echo t > /tmp/x && test "$(cat /tmp/x)" = t'
r tmpfifo sh -c 'mkfifo /tmp/f && { cat /tmp/f > /tmp/out & } && echo ff > /tmp/f && wait && test "$(cat /tmp/out)" = ff'
r tmplink sh -c 'echo a > /tmp/a && ln /tmp/a /tmp/b && echo b >> /tmp/b && test "$(cat /tmp/a)" = a'
r dirfd /usr/bin/python3 -c 'import os, tempfile
d = os.open(".", os.O_RDONLY)
fd = os.open("viafd.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=d)
os.write(fd, b"ok")
t = tempfile.TemporaryFile(dir=".")
t.write(b"x"); t.seek(0); assert t.read() == b"x"
assert open("viafd.txt").read() == "ok"'
r umask sh -c 'umask 077 && echo u > um.txt && test "$(stat -c %a um.txt)" = 600'
r symlinks sh -c 'ln -s made.txt dangling && echo m > dangling && test "$(cat made.txt)" = m && mkdir -p d && ln -s ../new.txt d/up && echo up >> d/up && tail -1 new.txt | grep -qx up'
r fdredirect bash -c 'exec 3>fd3.txt && echo three >&3 && exec 3>&- && test "$(cat fd3.txt)" = three'
r wsfifo sh -c 'mkfifo own.fifo && { cat own.fifo > own.out & } && echo w > own.fifo && wait && test "$(cat own.out)" = w'
r git sh -c 'git init -q g && cd g && for i in $(seq 100); do echo $i > f$i; done && git add . && git -c user.email=a@b -c user.name=a commit -qm m && test -z "$(git status --porcelain)" && echo 101 > f1 && git -c user.email=a@b -c user.name=a commit -qam n'
`

// fileHost is the host side of a file test: a fake $HOME and the
// workspace with a FIFO each, and a store outside the workspace whose
// files are hard-linked into it.
type fileHost struct {
	dir, home, ws, store string
	fifoHome, fifoWs     *fifoReader
}

func newFileHost(t *testing.T, owner int) *fileHost {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipcguard-files-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &fileHost{dir: dir, home: filepath.Join(dir, "home"), ws: filepath.Join(dir, "ws"), store: filepath.Join(dir, "store")}
	for _, d := range []string{dir, h.home, h.ws, h.store} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		chown(t, d, owner)
	}
	h.fifoHome = newFIFOReader(t, filepath.Join(h.home, "fifo"), owner)
	h.fifoWs = newFIFOReader(t, filepath.Join(h.ws, "fifo"), owner)
	for name := range linkWays {
		h.link(t, name, owner)
	}
	h.link(t, "race", owner)
	return h
}

// link makes store/name ("original\n") and its hard link ws/name.
func (h *fileHost) link(t *testing.T, name string, owner int) {
	t.Helper()
	p := filepath.Join(h.store, name)
	if err := os.WriteFile(p, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chown(t, p, owner)
	if err := os.Link(p, filepath.Join(h.ws, name)); err != nil {
		t.Fatal(err)
	}
}

func (h *fileHost) read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run runs argv in the workspace as uid (-1: as this process): in
// bubblewrap from a guarded thread (the workspace read-only when ro), or
// plainly (level off). It returns the command's output.
func (h *fileHost) run(t *testing.T, uid int, guarded, ro bool, argv ...string) string {
	return h.runEnv(t, uid, guarded, ro, nil, argv...)
}

// runEnv is run with extra variables for the supervisor.
func (h *fileHost) runEnv(t *testing.T, uid int, guarded, ro bool, extra []string, argv ...string) string {
	t.Helper()
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	var cmd *exec.Cmd
	if uid >= 0 {
		cmd = exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups", "/proc/self/fd/3")
	} else {
		cmd = exec.Command("/proc/self/fd/3")
	}
	av, _ := json.Marshal(argv)
	cmd.ExtraFiles = []*os.File{exe}
	cmd.Dir = "/"
	env := withEnv(os.Environ(), modeEnv, "supervisor")
	env = withEnv(env, cmdEnv, string(av))
	env = withEnv(env, wsEnv, h.ws)
	env = withEnv(env, bindEnv, h.home)
	env = withEnv(env, guardedEnv, map[bool]string{true: "1"}[guarded])
	env = withEnv(env, roEnv, map[bool]string{true: "1"}[ro])
	env = withEnv(env, linksEnv, "")
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		env = withEnv(env, k, v)
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("uid %d guarded %v ro %v: %v\n%s", uid, guarded, ro, err, out.String())
	return out.String()
}

// fifoScript writes to the two FIFOs and prints each result.
func (h *fileHost) fifoScript() string {
	return fmt.Sprintf(`for f in %q %q; do if timeout 5 sh -c 'echo pwned > "$1"' _ "$f" 2>/dev/null; then echo "fifo $f: written"; else echo "fifo $f: refused"; fi; done
perl -MFcntl -e 'if (sysopen(F, $ARGV[0], O_RDWR|O_NONBLOCK)) { syswrite(F, "rdwr\n"); print "fifo rdwr: written\n" } else { print "fifo rdwr: $!\n" }' %q
`, filepath.Join(h.home, "fifo"), "fifo", filepath.Join(h.home, "fifo"))
}

// linkScript makes each write of linkWays to its link.
func linkScript() string {
	var b strings.Builder
	for name, w := range linkWays {
		fmt.Fprintf(&b, "f=%s; %s; echo \"link %s: $?\"\n", name, w.cmd, name)
	}
	return b.String()
}

// TestFIFOsAndLinksLandUnguarded is the control: at level off a FIFO's
// host reader receives what a command writes, and a write to a workspace
// file hard-linked to a file outside changes the file outside.
func TestFIFOsAndLinksLandUnguarded(t *testing.T) {
	for name, uid := range users() {
		t.Run(name, func(t *testing.T) {
			requireTools(t, uid)
			h := newFileHost(t, uid)
			h.run(t, uid, false, false, "bash", "-c", h.fifoScript()+linkScript())
			if got := h.fifoHome.received(); !strings.Contains(got, "pwned") || !strings.Contains(got, "rdwr") {
				t.Errorf("the $HOME FIFO's reader received %q at level off", got)
			}
			if got := h.fifoWs.received(); !strings.Contains(got, "pwned") {
				t.Errorf("the workspace FIFO's reader received %q at level off", got)
			}
			for name, w := range linkWays {
				if got := h.read(t, filepath.Join(h.store, name)); w.lands && got == "original\n" {
					t.Errorf("%s: the file outside is unchanged at level off", name)
				}
			}
		})
	}
}

// TestFIFOsAndLinksHeld: at levels read-only and workspace, no FIFO's host
// reader (under $HOME, in the workspace) receives a byte, whether the
// command opens it write-only or read-write; at workspace, every write to
// a workspace file hard-linked to a file outside (>>, sed -i, truncate(1),
// dd, an O_RDWR write, truncate(2)) leaves the file outside byte for byte
// unchanged while the workspace name holds the new content; and ordinary
// work on files (writes, /dev/null, /dev/stderr, pipes, heredocs, process
// substitution, /tmp and its FIFOs and links, a FIFO the command makes in
// the workspace, git add and commit of 100 files) keeps working; the
// host's FIFO renamed by the command stays refused.
func TestFIFOsAndLinksHeld(t *testing.T) {
	for name, uid := range users() {
		t.Run(name, func(t *testing.T) {
			requireTools(t, uid)
			h := newFileHost(t, uid)
			out := h.run(t, uid, true, true, "bash", "-c", h.fifoScript())
			h.checkFIFOs(t, "read-only", out)
			// The workspace's FIFO renamed: still the host's, still refused.
			renamed := "mv fifo renamed.fifo && timeout 5 sh -c 'echo pwned > renamed.fifo'\n"
			out = h.run(t, uid, true, false, "bash", "-c", h.fifoScript()+linkScript()+ordinaryFiles+renamed)
			h.checkFIFOs(t, "workspace", out)
			for name, w := range linkWays {
				if got := h.read(t, filepath.Join(h.store, name)); got != "original\n" {
					t.Errorf("%s: the file outside the workspace changed: %q", name, got)
				}
				if got := h.read(t, filepath.Join(h.ws, name)); got != w.want {
					t.Errorf("%s: the workspace file holds %q, want %q", name, got, w.want)
				}
				if !strings.Contains(out, "link "+name+": 0") {
					t.Errorf("%s: the write failed", name)
				}
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, ": failed: ") {
					t.Errorf("ordinary work failed: %s", line)
				}
			}
			if n := strings.Count(out, ": ok"); n != 15 {
				t.Errorf("%d ordinary uses reported ok, want 15", n)
			}
		})
	}
}

// TestLinksOnlyGuard: the guard of level workspace-network
// (Config.LinksOnly, network shared) breaks a hard link before every write
// through it as workspace's does, leaves FIFOs writable (the host's
// sockets are within reach at that level anyway), and ordinary work runs.
func TestLinksOnlyGuard(t *testing.T) {
	for name, uid := range users() {
		t.Run(name, func(t *testing.T) {
			requireTools(t, uid)
			h := newFileHost(t, uid)
			out := h.runEnv(t, uid, true, false, []string{linksEnv + "=1"}, "bash", "-c", h.fifoScript()+linkScript()+ordinaryFiles)
			for name, w := range linkWays {
				if got := h.read(t, filepath.Join(h.store, name)); got != "original\n" {
					t.Errorf("%s: the file outside the workspace changed: %q", name, got)
				}
				if got := h.read(t, filepath.Join(h.ws, name)); got != w.want {
					t.Errorf("%s: the workspace file holds %q, want %q", name, got, w.want)
				}
			}
			if got := h.fifoHome.received(); !strings.Contains(got, "pwned") {
				t.Errorf("the $HOME FIFO's reader received %q: want the write let through at this level", got)
			}
			if n := strings.Count(out, ": ok"); n != 15 {
				t.Errorf("%d ordinary uses reported ok, want 15", n)
			}
		})
	}
}

func (h *fileHost) checkFIFOs(t *testing.T, level, out string) {
	t.Helper()
	if got := h.fifoHome.received() + h.fifoWs.received(); got != "" {
		t.Errorf("%s: a FIFO's host reader received %q", level, got)
	}
	if n := strings.Count(out, ": refused"); n != 2 || !strings.Contains(out, "fifo rdwr: Permission denied") {
		t.Errorf("%s: want the three FIFO opens refused", level)
	}
}

// TestFileRacesHeld: a command swaps a workspace name, all along, between
// a symlink to the $HOME FIFO and a regular file, and another between a
// hard link to a file outside and a regular file, while it opens each for
// writing hundreds of times and writes whenever an open succeeds. Guarded,
// the FIFO's reader receives nothing and the file outside is unchanged; at
// level off both land (the control).
func TestFileRacesHeld(t *testing.T) {
	for name, uid := range users() {
		t.Run(name, func(t *testing.T) {
			requireTools(t, uid)
			for _, guarded := range []bool{false, true} {
				h := newFileHost(t, uid)
				exe := "/proc/self/fd/3"
				out := h.run(t, uid, guarded, false, exe, "race", filepath.Join(h.home, "fifo"), "race", strconv.FormatBool(!guarded))
				fifo, store := h.fifoHome.received(), h.read(t, filepath.Join(h.store, "race"))
				if !strings.Contains(out, "race done") {
					t.Fatalf("guarded %v: the race did not finish", guarded)
				}
				if guarded && (fifo != "" || store != "original\n") {
					t.Errorf("guarded: the FIFO's reader received %d bytes, the file outside holds %q", len(fifo), store)
				}
				if !guarded && (fifo == "" || store == "original\n") {
					t.Errorf("level off: the race did not land (FIFO %d bytes, file outside %q)", len(fifo), store)
				}
			}
		})
	}
}

// fileClientMain is the race's command: race <fifo> <linked> <landing>.
func fileClientMain() int {
	if len(os.Args) != 5 || os.Args[1] != "race" {
		fmt.Fprintln(os.Stderr, "usage: race <fifo> <linked> <landing>")
		return 2
	}
	landing := os.Args[4] == "true"
	fifoHits := raceOpens("fifo-name", func(tmp string) error { return os.Symlink(os.Args[2], tmp) }, landing)
	if err := os.Link(os.Args[3], ".store"); err != nil {
		fmt.Println(err)
		return 2
	}
	linkHits := raceOpens("link-name", func(tmp string) error { return os.Link(".store", tmp) }, landing)
	fmt.Printf("fifo hits %d, link hits %d\nrace done\n", fifoHits, linkHits)
	return 0
}

// raceOpens flips name between what plant makes and a regular file while
// it opens name for writing (at least 300 times and 300 ms; when
// landing, on until a write reached the planted file, up to 5 s), and
// writes to every descriptor it gets. It returns how many writes went to
// something other than a regular file with one link.
func raceOpens(name string, plant func(tmp string) error, landing bool) int {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := fmt.Sprintf("%s.%d", name, i)
			var err error
			if i%2 == 0 {
				err = plant(tmp)
			} else {
				err = os.WriteFile(tmp, []byte("plain\n"), 0o644)
			}
			if err == nil {
				_ = os.Rename(tmp, name)
			}
		}
	}()
	hits := 0
	start := time.Now()
	for i := 0; i < 300 || time.Since(start) < 300*time.Millisecond || landing && hits == 0 && time.Since(start) < 5*time.Second; i++ {
		fd, err := unix.Open(name, unix.O_WRONLY|unix.O_APPEND|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && (st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink > 1) {
			hits++
		}
		_, _ = unix.Write(fd, []byte("race\n"))
		unix.Close(fd)
	}
	close(stop)
	<-done
	return hits
}
