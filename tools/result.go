package tools

import (
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Outcome is the payload of the bash tools' results (event.Result.Payload):
// how a command or a background task ended. Only this package writes it;
// OutcomeOf reads it back.
type Outcome struct {
	ExitCode  *int   `json:"exitCode,omitempty"` // nil when there was no process exit
	Signal    string `json:"signal,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
	SpillPath string `json:"spillPath,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// SpillError says why the complete output could not be saved.
	SpillError string `json:"spillError,omitempty"`
	// LimitHit names the process limit the command ran into ("pids").
	LimitHit string `json:"limitHit,omitempty"`
	// CardTail is the end of the output when the card's cap cut it short
	// (at most 32 KiB, from a line start), and CardTailCut how many output
	// bytes come before it: what a card showing the end of the output
	// shows. Empty when the card showed the whole output.
	CardTail    string `json:"cardTail,omitempty"`
	CardTailCut int64  `json:"cardTailCut,omitempty"`
}

// OutcomeOf decodes a bash tool result's payload. A result without one (an
// error before anything ran, a declined call, another tool's payload)
// gives the zero Outcome.
func OutcomeOf(r event.Result) Outcome {
	var o Outcome
	if len(r.Payload) > 0 {
		_ = json.Unmarshal(r.Payload, &o) // not an Outcome: the zero value
	}
	return o
}

// encode is o as a payload; nil for the zero Outcome.
func (o Outcome) encode() json.RawMessage {
	if o == (Outcome{}) {
		return nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil // unreachable: plain fields always encode
	}
	return b
}

// result is a bash tool's result while it is built: the tool-agnostic part
// and the bash payload side by side.
type result struct {
	event.Result
	Outcome
}

// resultOf splits an event.Result into its parts.
func resultOf(r event.Result) result { return result{Result: r, Outcome: OutcomeOf(r)} }

// event is the finished result, payload encoded.
func (r result) event() event.Result {
	r.Result.Payload = r.Outcome.encode()
	return r.Result
}

// setTask records the background task this result reports on.
func (r *result) setTask(id, status string) {
	r.Task = &event.Task{ID: id, Status: status}
}

// task returns the task id and status, "" when the result names none.
func (r result) task() (id, status string) {
	if r.Task == nil {
		return "", ""
	}
	return r.Task.ID, r.Task.Status
}

// WithOutcome is r carrying o as its payload: a bash tool result as the
// tools build it (tests and synthetic journals use it).
func WithOutcome(r event.Result, o Outcome) event.Result {
	r.Payload = o.encode()
	return r
}
