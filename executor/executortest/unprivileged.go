package executortest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// unprivilegedEnv marks a copy of the test process that runs one subtest as
// an unprivileged user.
const unprivilegedEnv = "EXECUTORTEST_UNPRIVILEGED"

// nobody is the user and group the copy runs as.
const nobody = 65534

// asUnprivileged makes the calling subtest run as an unprivileged user. It
// returns false when the test process is that already (not root, or the
// copy): the caller goes on. As root it runs the same subtest in a copy of
// the test binary as uid and gid 65534, reports the copy's failure or skip
// as its own, and returns true: the caller returns.
func asUnprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(unprivilegedEnv) == "1" {
		return false
	}
	// The build directory is closed to other users: run a copy.
	dir, err := os.MkdirTemp("", "executortest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := CopyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(bin, "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), unprivilegedEnv+"=1", "GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	text := string(out)
	switch {
	case err != nil:
		t.Errorf("as uid %d: %v\n%s", nobody, err, text)
	case strings.Contains(text, "--- SKIP: "+t.Name()):
		t.Skipf("as uid %d the subtest skipped:\n%s", nobody, text)
	case !strings.Contains(text, "--- PASS: "+t.Name()):
		t.Errorf("as uid %d the subtest did not run:\n%s", nobody, text)
	default:
		t.Logf("ran as uid %d", nobody)
	}
	return true
}

// CopyExecutable copies the program at from to a new file to (mode 0755,
// which must not exist yet): a copy any user may run, e.g. out of a
// directory only root can enter.
func CopyExecutable(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// Rerun reports whether this test process is a copy the suite started as
// an unprivileged user to run one subtest: a test that checks totals over
// the whole suite should not check them there.
func Rerun() bool { return os.Getenv(unprivilegedEnv) == "1" }
