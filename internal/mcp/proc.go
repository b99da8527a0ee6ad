package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-acp/dsh-acp/executor/local"
)

// programs starts stdio servers when Config.Spawner is nil: the plain
// spawner of commands, without a process limit (as before it), made on
// first use and kept for the daemon's life.
var programs = sync.OnceValues(func() (*local.Spawner, error) {
	return local.NewSpawner(local.SpawnerConfig{Limits: local.Limits{Pids: -1, TotalPids: -1}})
})

// startProc starts a stdio server's process through sp: command with args
// in dir with env, in a session and process group of its own (see
// local.Program). The returned error is the start failure, as the user
// should read it.
func startProc(sp *local.Spawner, command string, args []string, dir string, env []string) (*local.Program, error) {
	if sp == nil {
		var err error
		if sp, err = programs(); err != nil {
			return nil, startErr{fmt.Errorf("cannot start %q: %w", command, err)}
		}
	}
	p, err := sp.StartProgram(command, args, dir, env)
	if err != nil {
		return nil, startError(command, err)
	}
	return p, nil
}

// startErr is a server that could not be started.
type startErr struct{ err error }

func (e startErr) Error() string { return e.err.Error() }
func (e startErr) Unwrap() error { return e.err }

// startError words a failure to start command.
func startError(command string, err error) error {
	var ee *exec.Error
	var pe *os.PathError
	switch {
	case errors.As(err, &ee):
		err = fmt.Errorf("cannot start %q: %w", command, ee.Err)
	case errors.As(err, &pe):
		err = fmt.Errorf("cannot start %q: %w", command, pe.Err)
	default:
		err = fmt.Errorf("cannot start %q: %w", command, err)
	}
	return startErr{err}
}

// failure is why the process failed, when it exited: its exit status and
// the last line of its stderr. "" while it runs.
func failure(p *local.Program) string {
	exit, ok := p.Exit()
	if !ok {
		return ""
	}
	msg := "the server exited"
	switch {
	case exit.Signal != "":
		msg += " (signal: " + exit.Signal + ")"
	case exit.Code != 0:
		msg += fmt.Sprintf(" (exit status %d)", exit.Code)
	}
	if line := lastLine(p.Stderr()); line != "" {
		msg += ": " + line
	}
	return msg
}

// lastLine is the last non-empty line of s, valid UTF-8, at most 300
// bytes.
func lastLine(s string) string {
	s = strings.TrimRight(strings.ToValidUTF8(s, "\uFFFD"), "\r\n\t ")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}

// stdioTransport is an sdk.Transport that starts the server's process (through
// spawner, nil: programs) and speaks newline-delimited JSON over its stdin
// and stdout. started is told
// of the process as soon as it runs (so it is stopped however connecting
// ends); an error from it stops the process and fails the connection.
type stdioTransport struct {
	command string
	args    []string
	dir     string
	env     []string
	spawner *local.Spawner
	started func(*local.Program) error
}

// Connect implements sdk.Transport.
func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	p, err := startProc(t.spawner, t.command, t.args, t.dir, t.env)
	if err != nil {
		return nil, err
	}
	if err := t.started(p); err != nil {
		p.Stop(ctx, 0)
		p.Stdout().Close()
		return nil, err
	}
	return (&sdk.IOTransport{Reader: p.Stdout(), Writer: p.Stdin()}).Connect(ctx)
}

// mergeEnv is base with overrides applied ("NAME=value"; a later entry
// for the same name wins), base's order kept and new names appended.
func mergeEnv(base, overrides []string) []string {
	out := append([]string(nil), base...)
	index := map[string]int{}
	for i, kv := range out {
		name, _, _ := strings.Cut(kv, "=")
		index[name] = i
	}
	for _, kv := range overrides {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := index[name]; ok {
			out[i] = kv
			continue
		}
		index[name] = len(out)
		out = append(out, kv)
	}
	return out
}
