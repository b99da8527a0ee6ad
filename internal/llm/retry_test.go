package llm_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// announced records the retries a Stream announced.
func announced(req *llm.Request) *[]llm.RetryInfo {
	var got []llm.RetryInfo
	req.OnRetry = func(r llm.RetryInfo) { got = append(got, r) }
	return &got
}

// Transient failures are still retried, and each retry is announced before
// its wait with the attempt, the delay and the cause.
func TestRetriesAreAnnounced(t *testing.T) {
	tests := []struct {
		name    string
		first   llmtest.Response
		cause   string
		delay   time.Duration
		message string
	}{
		{"503 with Retry-After", llmtest.Status(503).With("Retry-After", "2"), "HTTP 503", 2 * time.Second,
			"retrying in 2s (HTTP 503), attempt 2 of 3"},
		{"429 with Retry-After", llmtest.Error(429, "slow down").With("Retry-After", "1.5"), "HTTP 429", 1500 * time.Millisecond,
			"retrying in 2s (HTTP 429), attempt 2 of 3"},
		{"502", llmtest.Status(502), "HTTP 502", time.Millisecond, "retrying in 1ms (HTTP 502), attempt 2 of 3"},
		{"504", llmtest.Status(504), "HTTP 504", time.Millisecond, "retrying in 1ms (HTTP 504), attempt 2 of 3"},
		{"408", llmtest.Status(408), "HTTP 408", time.Millisecond, "retrying in 1ms (HTTP 408), attempt 2 of 3"},
		{"500", llmtest.Error(500, "oops"), "HTTP 500", time.Millisecond, "retrying in 1ms (HTTP 500), attempt 2 of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.first, llmtest.Reply("fine"))
			sl := &sleeps{}
			req := simpleRequest()
			got := announced(&req)
			resp, err := newClient(t, srv, sl).Stream(t.Context(), req, nil)
			if err != nil || resp.Text != "fine" {
				t.Fatalf("resp %+v err %v", resp, err)
			}
			if len(*got) != 1 {
				t.Fatalf("announced %v, want one retry", *got)
			}
			r := (*got)[0]
			if r.Attempt != 1 || r.Attempts != 3 || r.Delay != tt.delay || r.Cause != tt.cause {
				t.Errorf("retry = %+v", r)
			}
			var e *llm.Error
			if !errors.As(r.Err, &e) || !e.Retryable() || errors.Is(r.Err, llm.ErrPermanent) {
				t.Errorf("retry cause %v is not a retryable *Error", r.Err)
			}
			if r.String() != tt.message {
				t.Errorf("notice %q, want %q", r, tt.message)
			}
			if !reflect.DeepEqual(sl.got(), []time.Duration{tt.delay}) {
				t.Errorf("slept %v, want %v", sl.got(), tt.delay)
			}
		})
	}
}

// A dropped connection before any output is retried, its cause in words.
func TestDropBeforeOutputIsAnnounced(t *testing.T) {
	srv := llmtest.New(t, llmtest.Response{Drop: true}, llmtest.Reply("fine"))
	req := simpleRequest()
	got := announced(&req)
	if _, err := newClient(t, srv, &sleeps{}).Stream(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	if len(*got) != 1 || (*got)[0].Cause == "" || strings.HasPrefix((*got)[0].Cause, "HTTP") {
		t.Errorf("announced %+v", *got)
	}
}

// When the retries run out the error says how many attempts were made and
// where they went; it is not permanent (a later request may succeed).
func TestRetriesExhausted(t *testing.T) {
	srv := llmtest.New(t, llmtest.Status(503), llmtest.Status(503), llmtest.Error(503, "busy"))
	req := simpleRequest()
	got := announced(&req)
	_, err := newClient(t, srv, &sleeps{}).Stream(t.Context(), req, nil)
	want := fmt.Sprintf("the model provider had a server error (HTTP 503): busy (POST %s/chat/completions, after 3 attempts)", srv.URL())
	if !errors.Is(err, llm.ErrServer) || errors.Is(err, llm.ErrPermanent) || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	var attempts []int
	for _, r := range *got {
		attempts = append(attempts, r.Attempt)
	}
	if !reflect.DeepEqual(attempts, []int{1, 2}) {
		t.Errorf("announced attempts %v", attempts)
	}
}

func TestIdleWorstCase(t *testing.T) {
	if got := llm.New(llm.Config{}).IdleWorstCase(); got != 8*time.Minute+7*time.Second {
		t.Errorf("default worst case %v, want 8m7s (4 × 2m + 1+2+4 s)", got)
	}
	if got := llm.New(llm.Config{IdleTimeout: -1}).IdleWorstCase(); got != 0 {
		t.Errorf("unbounded: %v", got)
	}
	c := llm.New(llm.Config{IdleTimeout: time.Minute, MaxRetries: -1})
	if got := c.IdleWorstCase(); got != time.Minute {
		t.Errorf("no retries: %v", got)
	}
}

// A provider silent on every attempt ends in an error that states the worst
// case the user waited through.
func TestIdleOnEveryAttemptStatesTheWorstCase(t *testing.T) {
	srv := llmtest.New(t, llmtest.Response{Stall: true}, llmtest.Response{Stall: true})
	c := idleClient(srv, 100*time.Millisecond, 1)
	req := simpleRequest()
	got := announced(&req)
	_, err := c.Stream(t.Context(), req, nil)
	want := "the model sent nothing for 100ms; a silent provider is given up on after at most 201ms " +
		"(2 attempts × 100ms, plus 1ms between them)"
	if !errors.Is(err, llm.ErrConnection) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant it to contain %s", err, want)
	}
	if c.IdleWorstCase() != 201*time.Millisecond {
		t.Errorf("IdleWorstCase = %v", c.IdleWorstCase())
	}
	if len(*got) != 1 || (*got)[0].Cause != "no data for 100ms" {
		t.Errorf("announced %+v", *got)
	}
}
