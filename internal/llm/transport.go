package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// maxErrorBody caps how much of a failed response's body is read.
const maxErrorBody = 64 << 10

// statusDoer is the HTTP client go-openai calls. It turns a failed HTTP
// status into an *Error right here, where the response headers (Retry-After)
// are still at hand; go-openai returns a Doer's error unchanged.
//
// It also bounds silence: when nothing arrives for idle — no response
// headers, no body bytes (keep-alive comments count) — the request is
// aborted with ErrIdle, so a stalled provider cannot hang a turn.
type statusDoer struct {
	client *http.Client
	now    func() time.Time
	idle   time.Duration // 0: unbounded
}

// errIdle is the cause of a request aborted for silence.
var errIdle = errors.New("the model sent nothing")

func (d statusDoer) Do(req *http.Request) (*http.Response, error) {
	req = swapBody(req)
	var watch *idleWatch
	if d.idle > 0 {
		ctx, cancel := context.WithCancelCause(req.Context())
		watch = &idleWatch{cancel: cancel, idle: d.idle}
		watch.timer = time.AfterFunc(d.idle, watch.fire)
		req = req.WithContext(ctx)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		if watch != nil {
			watch.stop()
			err = watch.explain(err)
		}
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if watch != nil {
			watch.timer.Reset(d.idle)
			resp.Body = &idleBody{ReadCloser: resp.Body, watch: watch}
		}
		return resp, nil
	}
	if watch != nil {
		defer watch.stop()
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	return nil, statusError(resp, req.URL.Redacted(), body, d.now())
}

// idleWatch aborts a request once its timer fires.
type idleWatch struct {
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer
	fired  atomic.Bool
}

func (w *idleWatch) fire() {
	w.fired.Store(true)
	w.cancel(errIdle)
}

func (w *idleWatch) stop() {
	w.timer.Stop()
	w.cancel(nil)
}

// explain names the silence when the watch aborted the request.
func (w *idleWatch) explain(err error) error {
	if w.fired.Load() {
		return &idleError{after: w.idle}
	}
	return err
}

// idleError is a request aborted because the provider sent nothing.
type idleError struct{ after time.Duration }

func (e *idleError) Error() string { return fmt.Sprintf("%s for %s", errIdle, e.after) }

// idleBody re-arms the watch on every read that brought bytes.
type idleBody struct {
	io.ReadCloser
	watch *idleWatch
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && !b.watch.fired.Load() {
		b.watch.timer.Reset(b.watch.idle)
	}
	if err != nil && err != io.EOF {
		err = b.watch.explain(err)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.watch.stop()
	return b.ReadCloser.Close()
}
