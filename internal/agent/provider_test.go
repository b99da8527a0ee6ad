package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

func TestProviderErrors(t *testing.T) {
	tests := []struct {
		name      string
		script    []llmtest.Response
		wantError string // in the event.ErrorMessage; "" when the turn succeeds
		wantText  string // the answer, when it succeeds
		requests  int
	}{
		{
			name:      "401 bad key",
			script:    []llmtest.Response{llmtest.Error(401, "Authentication Fails, your key "+testKey+" is invalid")},
			wantError: "did not accept the API key (HTTP 401: it is wrong, revoked or missing). Set DSH_API_KEY (or DEEPSEEK_API_KEY)",
			requests:  1,
		},
		{
			name:      "400 unknown model",
			script:    []llmtest.Response{llmtest.Error(400, "Model Not Exist")},
			wantError: "does not serve the model",
			requests:  1,
		},
		{
			name:      "422 invalid parameters",
			script:    []llmtest.Response{llmtest.Error(422, "Invalid parameters")},
			wantError: "refused a parameter of the request (HTTP 422",
			requests:  1,
		},
		{
			name:      "402 balance",
			script:    []llmtest.Response{llmtest.Error(402, "Insufficient Balance")},
			wantError: "insufficient balance",
			requests:  1,
		},
		{
			name:     "429 with Retry-After, then success",
			script:   []llmtest.Response{llmtest.Error(429, "slow down").With("Retry-After", "1"), llmtest.Reply("made it")},
			wantText: "made it",
			requests: 2,
		},
		{
			name:     "500 retried, then success",
			script:   []llmtest.Response{llmtest.Error(500, "oops"), llmtest.Reply("made it")},
			wantText: "made it",
			requests: 2,
		},
		{
			name: "500 until the retries run out",
			script: []llmtest.Response{llmtest.Error(500, "oops"), llmtest.Error(500, "oops"),
				llmtest.Error(500, "still oops")},
			wantError: "server error. Try again shortly.\n\nDetails: the model provider had a server error (HTTP 500): still oops",
			requests:  3,
		},
		{
			name:      "malformed SSE",
			script:    []llmtest.Response{llmtest.Stream(llmtest.Say("ok so"), llmtest.Raw("data: {\"choices\": [oops\n\n"))},
			wantError: "could not be read",
			requests:  1,
		},
		{
			name:      "connection dropped after output",
			script:    []llmtest.Response{{Chunks: []llmtest.Chunk{llmtest.Say("half")}, Drop: true}},
			wantError: "connection to the model provider failed",
			requests:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, options{}, append(tt.script, llmtest.Reply("recovered"))...)
			if stop := f.prompt(t, t.Context(), "hi"); stop != event.EndTurn {
				t.Fatalf("stop = %s", stop)
			}
			evs := f.rec.events()
			var errs, retries []event.ErrorMessage
			for _, e := range only[event.ErrorMessage](evs) {
				if strings.HasPrefix(e.Text, "\n[model provider: retrying in ") {
					retries = append(retries, e)
				} else {
					errs = append(errs, e)
				}
			}
			// Every retry is announced to the user as it happens.
			if len(retries) != len(f.srv.Requests())-1 {
				t.Errorf("%d retries announced for %d requests: %q", len(retries), len(f.srv.Requests()), retries)
			}
			if tt.wantError == "" {
				if len(errs) != 0 {
					t.Errorf("unexpected error messages %v", errs)
				}
				msgs := only[event.AssistantMessage](evs)
				if len(msgs) != 1 || msgs[0].Text != tt.wantText {
					t.Errorf("assistant messages = %+v", msgs)
				}
			} else if len(errs) != 1 || !strings.Contains(errs[0].Text, tt.wantError) {
				t.Errorf("error messages = %q, want one containing %q", errs, tt.wantError)
			}
			if n := len(f.srv.Requests()); n != tt.requests {
				t.Errorf("requests = %d, want %d", n, tt.requests)
			}
			for _, e := range evs {
				b, _ := json.Marshal(e)
				if strings.Contains(string(b), testKey) {
					t.Errorf("%T leaks the API key: %s", e, b)
				}
			}
			// The session still works.
			if stop := f.prompt(t, t.Context(), "again"); stop != event.EndTurn {
				t.Errorf("next prompt stop = %s", stop)
			}
			if last := only[event.AssistantMessage](f.rec.events()); last[len(last)-1].Text != "recovered" {
				t.Errorf("next answer = %+v", last[len(last)-1])
			}
		})
	}
}

func TestNoModelConfigured(t *testing.T) {
	f := newFixture(t, options{noModel: true})
	if stop := f.prompt(t, t.Context(), "hello?"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	evs := f.rec.events()
	if got := kinds(evs); got != "UserPrompt ErrorMessage TurnEnd(end_turn)" {
		t.Fatalf("events: %s", got)
	}
	msg := only[event.ErrorMessage](evs)[0].Text
	for _, want := range []string{"DSH_API_KEY", "DEEPSEEK_API_KEY", "--base-url", "DSH_BASE_URL", "--model", "DSH_MODEL"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not mention %s", msg, want)
		}
	}
}
