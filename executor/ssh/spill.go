package ssh

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// spills is the engine.SpillStore on the host: spill files live in the
// remote spill directory (<remote state dir>/spill, 0700, checked at each
// connection), one 0700 directory per owner, each file created 0600 with
// O_EXCL (bash's noclobber) and written by a remote cat over a channel of
// its own. The path the model is given is the remote one, so its next
// command can read the file.
type spills struct {
	d *dialer
}

var _ engine.SpillStore = (*spills)(nil)

// spillTimeout bounds the creation, the completion and the removal of one
// spill file.
const spillTimeout = 30 * time.Second

// Create implements engine.SpillStore.
func (s *spills) Create(owner, base string) (engine.SpillFile, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), spillTimeout)
	defer cancel()
	c, err := s.d.get(ctx)
	if err != nil {
		return nil, "", err
	}
	if c.spillDir == "" {
		return nil, "", errors.New("no spill directory on the host")
	}
	dir := c.spillDir + "/" + ownerDirName(owner)
	path := dir + "/" + safeName(base) + "-" + randomHex(8) + ".log"
	prelude := strings.Join([]string{
		"unset -v n p",
		"umask 077",
		fmt.Sprintf("mkdir -- %s 2>/dev/null", sandbox.Quote(dir)),
		fmt.Sprintf("{ [ ! -L %s ] && cd -- %s && [ -O . ] && chmod 700 . && set -C && exec 3>%s; } 2>/dev/null || { echo fail; exit 1; }", sandbox.Quote(dir), sandbox.Quote(dir), sandbox.Quote(path)),
		"echo ok",
		"exec cat >&3 3>&-",
	}, "; ")
	rc, err := c.exec(c.cmdline)
	if err != nil {
		return nil, "", err
	}
	go func() { _, _ = io.Copy(io.Discard, rc.ch.Stderr()) }()
	if _, err := rc.ch.Write(stream(prelude)); err != nil {
		rc.ch.Close()
		return nil, "", fmt.Errorf("spill file: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { rc.ch.Close() })
	line, err := bufio.NewReader(rc.ch).ReadString('\n')
	stop()
	if err != nil || line != "ok\n" {
		rc.ch.Close()
		return nil, "", fmt.Errorf("spill file %s on %s could not be created", path, c.d.target.Host)
	}
	go func() { _, _ = io.Copy(io.Discard, rc.ch) }()
	return &spillFile{rc: rc, c: c, path: path}, path, nil
}

// spillFile is one remote spill file being written.
type spillFile struct {
	rc   *channel
	c    *conn
	path string
}

// Write hands p to the channel; it blocks only while the remote window is
// full (the host writes slower than the command prints).
func (f *spillFile) Write(p []byte) (int, error) { return f.rc.ch.Write(p) }

// Close ends the file and reports whether the remote cat wrote all of it.
func (f *spillFile) Close() error {
	defer f.rc.ch.Close()
	if err := f.rc.ch.CloseWrite(); err != nil {
		return fmt.Errorf("spill file: %w", err)
	}
	select {
	case <-f.rc.exited:
	case <-time.After(spillTimeout):
		return errors.New("spill file: the host did not finish writing it")
	}
	if !f.rc.got || f.rc.status != 0 || f.rc.signal != "" {
		return fmt.Errorf("spill file %s is incomplete", f.path)
	}
	return nil
}

// Remove deletes the file on the host.
func (f *spillFile) Remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), spillTimeout)
	defer cancel()
	c, err := f.c.d.get(ctx)
	if err != nil {
		return fmt.Errorf("remove spill file: %w", err)
	}
	_, status, err := c.run(ctx, "unset -v n p; rm -f -- "+sandbox.Quote(f.path), nil, 1024)
	if err == nil && status != 0 {
		err = fmt.Errorf("exit status %d", status)
	}
	if err != nil {
		return fmt.Errorf("remove spill file %s: %w", f.path, err)
	}
	return nil
}

// ownerDirName maps an owner token to one safe path element, as the local
// engine does.
func ownerDirName(owner string) string {
	if owner == "" {
		return "unowned"
	}
	if len(owner) <= 64 && safeName(owner) == owner {
		return "o-" + owner
	}
	sum := sha256.Sum256([]byte(owner))
	return "h-" + hex.EncodeToString(sum[:16])
}

// safeName keeps letters, digits, '-', '_' and '.', replacing the rest.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "_" + string(b)
	}
	return string(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}
