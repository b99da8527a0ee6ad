package credentials

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
)

// ErrCancelled is returned by Login.Run when the user ended the input
// (Ctrl-D) or answered no, or ctx ended (Ctrl-C). Nothing was stored.
var ErrCancelled = errors.New("login cancelled; nothing was stored")

// Login is the flow behind `dsh-acp login`. On a terminal it shows the base
// URL and model (Enter keeps them, anything else replaces them), reads the
// key with echo off, checks it and stores it. When In is not a terminal it
// prompts for nothing: the key is the first line of In and the base URL and
// model are the defaults given.
type Login struct {
	In    *os.File
	Out   io.Writer
	Store *Store
	// BaseURL and Model are the values offered (the caller's precedence:
	// an explicit flag or variable, else the stored credential, else the
	// built-in default).
	BaseURL, Model string
	// Client makes the check's request (nil: http.DefaultClient).
	Client *http.Client

	in      *bufio.Reader
	lines   chan lineRead // the one read in flight, abandoned when ctx ends
	pending bool
	mu      sync.Mutex
}

type lineRead struct {
	line string
	err  error
}

// Run logs in: nil when the key was accepted by the provider (or, after the
// user agreed, stored unchecked because the provider has no GET /models) and
// stored. Its errors are the user's message: *HTTPError when the provider
// refused the key, ErrCancelled, or what went wrong; none holds the key.
func (l *Login) Run(ctx context.Context) error {
	l.in = bufio.NewReader(l.In)
	// A hostile credential directory is reported before the key is asked
	// for; a damaged file is simply replaced.
	old, err := l.Store.Load()
	if errors.Is(err, ErrUnsafe) {
		return err
	}
	if !isTerminal(l.In.Fd()) {
		return l.runPiped(ctx)
	}
	fmt.Fprintln(l.Out, "Log in to the model provider dsh-acp talks to. Enter keeps the value in brackets.")
	if err == nil {
		fmt.Fprintf(l.Out, "A key is stored for %s; logging in replaces it.\n", old.BaseURL)
	}
	c := Credential{}
	if c.BaseURL, err = l.ask(ctx, "Base URL", l.BaseURL, ValidateBaseURL); err != nil {
		return err
	}
	if c.Model, err = l.ask(ctx, "Model", l.Model, nil); err != nil {
		return err
	}
	if c.APIKey, err = l.askKey(ctx); err != nil {
		return err
	}
	return l.checkAndStore(ctx, c, true)
}

// runPiped reads the key from the first line of a non-terminal In.
func (l *Login) runPiped(ctx context.Context) error {
	key, err := l.readLine(ctx)
	if err != nil {
		return err
	}
	c := Credential{APIKey: strings.TrimSpace(key), BaseURL: l.BaseURL, Model: l.Model}
	if err := c.Validate(); err != nil {
		return err
	}
	return l.checkAndStore(ctx, c, false)
}

// ask shows label with its default and reads a replacement; it asks again
// (three times at most) while valid rejects the answer.
func (l *Login) ask(ctx context.Context, label, def string, valid func(string) error) (string, error) {
	for try := 0; ; try++ {
		fmt.Fprintf(l.Out, "%s [%s]: ", label, def)
		line, err := l.readLine(ctx)
		if err != nil {
			return "", err
		}
		v := strings.TrimSpace(line)
		if v == "" {
			v = def
		}
		if valid == nil {
			return v, nil
		}
		err = valid(v)
		if err == nil {
			return v, nil
		}
		fmt.Fprintf(l.Out, "%v\n", err)
		if try == 2 {
			return "", err
		}
	}
}

// askKey reads the key with the terminal's echo off: the echo goes off
// before the prompt is shown, so nothing typed after it is echoed.
func (l *Login) askKey(ctx context.Context) (string, error) {
	restore, err := echoOff(l.In.Fd())
	if err != nil {
		return "", err
	}
	defer restore()
	fmt.Fprint(l.Out, "API key (typing is hidden): ")
	line, err := l.readLine(ctx)
	if err != nil {
		return "", err
	}
	key := strings.TrimSpace(line)
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// checkAndStore checks c with the provider and stores it.
func (l *Login) checkAndStore(ctx context.Context, c Credential, interactive bool) error {
	fmt.Fprintf(l.Out, "Checking the key with GET %s/models … ", strings.TrimRight(c.BaseURL, "/"))
	models, err := Check(ctx, l.Client, c)
	var he *HTTPError
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(l.Out)
		return ErrCancelled
	case errors.As(err, &he) && he.NoEndpoint() && interactive:
		fmt.Fprintf(l.Out, "not possible:\n%v\n", err)
		yes, aerr := l.confirm(ctx, "Store the key without a check?")
		if aerr != nil {
			return aerr
		}
		if !yes {
			return ErrCancelled
		}
	case err != nil:
		fmt.Fprintln(l.Out, "failed.")
		return err
	default:
		fmt.Fprintf(l.Out, "ok (%d models).\n", len(models))
		if len(models) > 0 && !slices.Contains(models, c.Model) {
			if c.Model, err = l.listedModel(ctx, c.Model, models, interactive); err != nil {
				return err
			}
		}
	}
	if err := l.Store.Save(c); err != nil {
		return err
	}
	fmt.Fprintf(l.Out, "Logged in: the key is stored in %s (readable only by you).\n", l.Store.Path())
	return nil
}

// UnlistedModelError is a login refused because the provider does not list
// the model asked for (and nobody could be asked to confirm it).
type UnlistedModelError struct {
	Model  string
	Listed []string
}

func (e *UnlistedModelError) Error() string {
	return fmt.Sprintf("the provider does not list the model %q; it lists %s", e.Model, listSome(e.Listed, 8))
}

// listedModel settles a model the provider does not list: piped, the
// login is refused (*UnlistedModelError); on a terminal the user picks one
// it lists (Enter: the first), or types the unlisted one again to keep it.
func (l *Login) listedModel(ctx context.Context, model string, listed []string, interactive bool) (string, error) {
	if !interactive {
		return "", &UnlistedModelError{Model: model, Listed: listed}
	}
	fmt.Fprintf(l.Out, "The provider does not list the model %q; it lists %s.\n", model, listSome(listed, 8))
	refused := model
	for try := 0; try < 3; try++ {
		fmt.Fprintf(l.Out, "Model (one it lists, or %q again to keep it) [%s]: ", refused, listed[0])
		line, err := l.readLine(ctx)
		if err != nil {
			return "", err
		}
		v := strings.TrimSpace(line)
		switch {
		case v == "":
			return listed[0], nil
		case slices.Contains(listed, v):
			return v, nil
		case v == refused:
			fmt.Fprintf(l.Out, "Keeping %q, which the provider does not list.\n", v)
			return v, nil
		}
		fmt.Fprintf(l.Out, "The provider does not list %q either.\n", v)
		refused = v
	}
	return "", &UnlistedModelError{Model: refused, Listed: listed}
}

// confirm asks a yes/no question; no is the default.
func (l *Login) confirm(ctx context.Context, q string) (bool, error) {
	fmt.Fprintf(l.Out, "%s [y/N]: ", q)
	line, err := l.readLine(ctx)
	if err != nil {
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// readLine reads one line, giving up when ctx ends (the read itself cannot
// be interrupted: it is left behind, and a later call collects its result
// first). End of input before any character is ErrCancelled.
func (l *Login) readLine(ctx context.Context) (string, error) {
	l.mu.Lock()
	if !l.pending {
		l.lines = make(chan lineRead, 1)
		l.pending = true
		go func(ch chan<- lineRead) {
			s, err := l.in.ReadString('\n')
			ch <- lineRead{s, err}
		}(l.lines)
	}
	ch := l.lines
	l.mu.Unlock()
	select {
	case r := <-ch:
		l.mu.Lock()
		l.pending = false
		l.mu.Unlock()
		if r.err != nil && (r.line == "" || !errors.Is(r.err, io.EOF)) {
			fmt.Fprintln(l.Out)
			if errors.Is(r.err, io.EOF) {
				return "", ErrCancelled
			}
			return "", fmt.Errorf("read the input: %w", r.err)
		}
		return strings.TrimRight(r.line, "\r\n"), nil
	case <-ctx.Done():
		fmt.Fprintln(l.Out)
		return "", ErrCancelled
	}
}

// listSome names up to n items, then how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
