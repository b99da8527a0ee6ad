// Package tools holds the tool registry and the model-facing tools (bash,
// bash_output, bash_kill): their JSON schemas, argument decoding, the text the
// model reads, the card intents (PresentCall / PresentResult) a UI bridge
// turns into editor cards, and what each call needs permission for. Tools
// reach processes only through the executor seam.
package tools

import (
	"context"
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
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
	Run(ctx context.Context, call Call) event.Result
	Presenter
}

// Presenter draws a tool's card from its logged arguments and result.
type Presenter interface {
	// PresentCall is the card to open for a call with these logged
	// arguments. Pure: it runs live and on replay; malformed args fall back
	// to a generic card. It never panics.
	PresentCall(args json.RawMessage) CallIntent
	// PresentResult is how the finished call's card should end. Pure, as
	// PresentCall.
	PresentResult(args json.RawMessage, res event.Result) ResultIntent
}

// NeedKind is what a call needs the user's permission for.
type NeedKind uint8

const (
	// NeedUndeclared (the zero value): the tool did not say. The call is
	// asked about in ask mode and denied in read-only mode.
	NeedUndeclared NeedKind = iota
	// NeedNothing: the call acts only on the session's own state (reading
	// or killing its own background tasks); it runs unasked in every mode.
	NeedNothing
	// NeedCommand: the call runs Need.Subject as a shell command line; the
	// permission judge decides.
	NeedCommand
	// NeedRead: the call reads the path Need.Subject.
	NeedRead
	// NeedWrite: the call writes the path Need.Subject.
	NeedWrite
	// NeedTool: the call runs a tool of an outside server (an MCP
	// server's), named by Need.Server and Need.Tool; Need.Subject is its
	// display name. Need.ReadOnly is the server's claim that the tool
	// changes nothing: a hint, trusted only as far as the user allowed
	// that server's read-only tools.
	NeedTool
)

// Need is what one call needs permission for.
type Need struct {
	Kind    NeedKind
	Subject string // the command line or the path; "" for NeedNothing
	// Background marks a command started as a background task: it runs
	// with no timeout, so the judge lets it run unasked only if it is known
	// to end.
	Background bool
	// Server and Tool name an outside tool (NeedTool) as its server does.
	Server, Tool string
	// ReadOnly: the outside tool's server marks it read-only (NeedTool).
	ReadOnly bool
}

// Permissioned is implemented by a tool that says what its calls need
// permission for. A tool that does not implement it is asked about in ask
// mode and denied in read-only mode: a new tool is never trusted by
// default.
type Permissioned interface {
	// Needs says what a call with these arguments needs. An error means the
	// arguments are malformed and Run rejects them without acting (the
	// permission step may then let Run report the problem).
	Needs(args json.RawMessage) (Need, error)
}

// Prompter is implemented by a tool with a section of its own in the
// system prompt (habits its description cannot carry). The section may
// depend on the session (its sandbox level), and only on what Session
// holds, so a reloaded session that restored the same state gets the same
// text.
type Prompter interface {
	PromptSection(s Session) string
}

// Session identifies the calling session. The zero value is a non-session
// caller (no cwd default, no owner token, the executor's default level).
type Session struct {
	ID  string // owner token for the session's tasks
	Cwd string // absolute
	// Roots are the session's additional directories (absolute): writable
	// at workspace levels as Cwd is.
	Roots []string
	// Level is the session's sandbox level: what its commands run at
	// unless the call names another (Call.Level). Empty means the
	// executor's default.
	Level executor.Level
	// Files reaches the client's file methods; nil when the client offers
	// none (see ClientFiles).
	Files ClientFiles
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
	// Level, when set, is the sandbox level this call's commands run at,
	// chosen by the permission step (a command that runs unasked because
	// it looks read-only runs at executor.LevelReadOnly); empty means
	// Session.Level. A tool that runs no commands ignores it.
	Level executor.Level
	// NewRepository lets the call's commands create a git repository at the
	// workspace root (executor.Spec.AllowNewRepository): set when the user
	// approved a command that does (a `git init`), or typed it (`!`).
	NewRepository bool
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
	// Reason is one short line for the user when the call did not run
	// normally (declined, denied, could not start, cancelled, timed out,
	// interrupted): a terminal card shows it as its last line of output,
	// since a client that draws the terminal draws nothing beside it.
	Reason string `json:"reason,omitempty"`
	// Tail is the end of the output when Output stopped short of it (the
	// card's cap), and TailCut how many output bytes come before Tail: a
	// card that shows only the end of the output shows Tail. Empty when
	// Output is the whole output.
	Tail    string `json:"tail,omitempty"`
	TailCut int64  `json:"tailCut,omitempty"`
	// Plan, when set, becomes the session's whole plan (the client's plan
	// view): the call set it. nil leaves the plan as it is.
	Plan *Plan `json:"plan,omitempty"`
}

// Plan is the session's task list as a call set it; no entries clears it.
type Plan struct {
	Entries []PlanEntry `json:"entries"`
}

// PlanEntry is one task of a plan.
type PlanEntry struct {
	Content string `json:"content"`
	// Status is TodoPending, TodoInProgress or TodoCompleted.
	Status string `json:"status"`
}
