// Package tools holds the model-facing tools (bash, bash_output, bash_kill):
// their JSON schemas, argument decoding, the text the model reads, and the card
// intents (PresentCall / PresentResult) a UI bridge turns into editor cards.
// Tools reach processes only through the executor seam.
package tools

import (
	"context"
	"encoding/json"
)

// Tool is one model-facing tool.
type Tool interface {
	Name() string
	// Description is the text the model reads about the tool.
	Description() string
	// Schema is the JSON schema of the tool's arguments.
	Schema() json.RawMessage
	// Run executes a call. Failures the model should read (bad arguments,
	// a spawn error, an unknown task) are a Result with IsError set; Run
	// never panics on any args.
	Run(ctx context.Context, call Call) Result
	// PresentCall is the card to open for a call with these logged
	// arguments. Pure: it runs live and on replay; malformed args fall back
	// to a generic card.
	PresentCall(args json.RawMessage) CallIntent
	// PresentResult is how the finished call's card should end. Pure, as
	// PresentCall.
	PresentResult(args json.RawMessage, res Result) ResultIntent
}

// Session identifies the calling session. The zero value is a non-session
// caller (no cwd default, no owner token).
type Session struct {
	ID  string // owner token for the session's tasks
	Cwd string // absolute
}

// Call is one invocation of a tool.
type Call struct {
	ID      string          // the tool call id (also the card and terminal id)
	Args    json.RawMessage // the arguments exactly as the model sent them
	Session Session
	// Output, when non-nil, receives the card's live output as it arrives
	// (already capped for the card: the concatenation of everything passed
	// to Output equals the final Result.CardOutput). Called from one
	// goroutine at a time; it must not block.
	Output func(data string)
}

// Result is a finished call. It is recorded in the session journal as is and
// fed back to PresentResult on replay, so every field is plain JSON.
type Result struct {
	// Text is what the model reads.
	Text    string `json:"text"`
	IsError bool   `json:"isError,omitempty"`

	// For a foreground bash run:
	ExitCode  *int   `json:"exitCode,omitempty"` // nil when there was no process exit
	Signal    string `json:"signal,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
	SpillPath string `json:"spillPath,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// CardOutput is the output the terminal card shows (capped for the card).
	CardOutput string `json:"cardOutput,omitempty"`

	// For background tasks (bash with run_in_background, bash_output, bash_kill):
	TaskID     string `json:"taskId,omitempty"`
	TaskStatus string `json:"taskStatus,omitempty"` // running | completed | killed

	// Declined is set when a permission step refused the call (the user
	// rejected it, or a rule or mode denied it); Text says why.
	Declined string `json:"declined,omitempty"`
}

// CardKind says which card a UI should draw.
type CardKind string

const (
	// CardTerminal is a terminal card with live output and an exit pill.
	CardTerminal CardKind = "terminal"
	// CardGeneric is an ordinary tool-call card with text content.
	CardGeneric CardKind = "generic"
)

// CallIntent is the card to open for a call.
type CallIntent struct {
	Card  CardKind `json:"card"`
	Title string   `json:"title"`
	// Kind is the ACP tool kind: execute, read, other, …
	Kind string `json:"kind"`
	// Description is shown above the card (terminal cards).
	Description string `json:"description,omitempty"`
	// Cwd is the terminal's directory: absolute, relative (for the bridge to
	// resolve against the session cwd), or empty (the bridge fills it).
	Cwd      string   `json:"cwd,omitempty"`
	RawInput any      `json:"rawInput,omitempty"`
	Content  []string `json:"content,omitempty"` // text blocks (generic cards)
}

// ResultIntent is how a finished call's card ends.
type ResultIntent struct {
	Card  CardKind `json:"card"`
	Title string   `json:"title,omitempty"` // replaces the call's title when set
	// Output is the raw output (terminal cards), unfenced.
	Output   string `json:"output,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Failed selects the final status: failed instead of completed.
	Failed bool `json:"failed"`
	// Content are text blocks (generic cards).
	Content []string `json:"content,omitempty"`
	// RawOutput is the structured result for clients that render it.
	RawOutput any `json:"rawOutput,omitempty"`
}
