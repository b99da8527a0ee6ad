// Package event is the vocabulary of a session: what happened in it, in the
// order it happened. The LLM loop and the direct-command path emit events;
// the ACP presenter draws them, the journal stores them, and a reload feeds
// the stored ones back through the same presenter and into the model's
// history. It is a leaf: it imports nothing of the project.
//
// A tool's result is tool-agnostic here (Result): the text the model reads,
// whether it failed or was declined, what its card showed, the background
// task it reports on, and the tool's own payload as raw JSON that only that
// tool decodes. So the journal, the settler and the presenter never need to
// know the shape of any one tool.
//
// # Known limits
//
//   - Events are values: a sink must not keep references into Args, Payload
//     or Data beyond the call unless it copies them (the journal encodes at
//     once; the presenter copies output it coalesces).
package event

import "encoding/json"

// Event is something that happened in a session.
type Event interface{ isEvent() }

// Sink receives a session's events in order. Emit must not block for long:
// it runs on the turn's goroutine (and ToolOutput on an executor's).
type Sink interface{ Emit(Event) }

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

// Emit calls f(e).
func (f SinkFunc) Emit(e Event) { f(e) }

// BatchSink is a Sink that can also take events that follow each other
// with nothing in between as one batch, e.g. to journal them with one
// write. EmitBatch(evs) must have the effect of Emit for each, in order.
type BatchSink interface {
	Sink
	EmitBatch(evs []Event)
}

// EmitAll gives evs to s: as one batch when s is a BatchSink, else one by
// one.
func EmitAll(s Sink, evs ...Event) {
	if b, ok := s.(BatchSink); ok {
		b.EmitBatch(evs)
		return
	}
	for _, ev := range evs {
		s.Emit(ev)
	}
}

// UserPrompt is the user's prompt, rendered to the text the model reads.
type UserPrompt struct {
	Text string `json:"text"`
}

// TextDelta is a piece of the agent's answer as it streams (not journaled:
// AssistantMessage carries the whole).
type TextDelta struct {
	Text string `json:"text"`
}

// ThoughtDelta is a piece of the model's reasoning as it streams (not
// journaled).
type ThoughtDelta struct {
	Text string `json:"text"`
}

// AssistantMessage is one complete model response (also emitted with the
// partial text when a stream is cancelled).
type AssistantMessage struct {
	Text      string     `json:"text,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []CallInfo `json:"toolCalls,omitempty"`
}

// CallInfo names a tool call inside an AssistantMessage.
type CallInfo struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"` // exactly as the model sent them (may be invalid JSON)
}

// ToolCall opens a tool call's card, before it runs. Direct marks a `!`
// command typed by the user (no model involved). Pending marks a call the
// user is about to be asked about: its card opens pending (not running)
// and stays so until the answer (a Decision follows).
type ToolCall struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args"`
	Direct  bool            `json:"direct,omitempty"`
	Pending bool            `json:"pending,omitempty"`
}

// ToolOutput is live output for a running call's card (not journaled:
// Result.CardOutput is the concatenation of every ToolOutput of the call).
type ToolOutput struct {
	ID   string `json:"id"`
	Data string `json:"data"`
}

// OutputCheckpoint is live card output of the running call ID since its
// previous checkpoint, journaled while the call runs (at most about once a
// second), so a call the daemon died in replays with the output the user
// had seen. Sinks that draw ignore it: they drew the ToolOutput events.
type OutputCheckpoint struct {
	ID   string `json:"id"`
	Data string `json:"data"`
	// Parts, when set, is the output as the chunks it arrived in (Data is
	// empty then): a journal writes them without joining them. A record
	// read back has Data.
	Parts []string `json:"-"`
}

// Decision is the permission step's verdict on the model-issued call ID,
// emitted after its ToolCall and before its ToolResult.
type Decision struct {
	ID string `json:"id"`
	// Subject is what was judged, as the tool declared it: the command
	// line, the path, or "" for a tool that declared nothing.
	Subject string `json:"subject,omitempty"`
	// Verdict is how the policy decided: VerdictAllow, VerdictDeny or
	// VerdictAsk (the user was asked).
	Verdict string `json:"verdict"`
	// Outcome is the user's answer when asked: an option id, "cancelled"
	// or "error".
	Outcome string `json:"outcome,omitempty"`
	// Reason is the text the model reads when the call is refused.
	Reason string `json:"reason,omitempty"`
}

// Decision verdicts.
const (
	VerdictAllow = "allow"
	VerdictDeny  = "deny"
	VerdictAsk   = "ask"
)

// ToolResult closes a tool call's card.
type ToolResult struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Result Result          `json:"result"`
}

// Result is a finished tool call, as every sink sees it. Every field is
// plain JSON: the journal stores it as is and a reload presents it again.
type Result struct {
	// Text is what the model reads.
	Text    string `json:"text"`
	IsError bool   `json:"isError,omitempty"`
	// Declined is set when the permission step refused the call (the
	// user rejected it, or a rule or mode denied it); Text says why.
	Declined string `json:"declined,omitempty"`
	// CardOutput is exactly what the call's card showed as live output
	// (the concatenation of its ToolOutput events).
	CardOutput string `json:"cardOutput,omitempty"`
	// Task is the background task this result reports on, if any.
	Task *Task `json:"task,omitempty"`
	// Payload is the tool's own structured result (for bash: the exit
	// code, signal, timeout, spill path…), decoded only by that tool.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Task is a background task's state as a result reported it.
type Task struct {
	ID     string `json:"id"`
	Status string `json:"status"` // TaskRunning, "completed" or "killed"
}

// TaskRunning is the status of a task still running when reported.
const TaskRunning = "running"

// Running reports whether r left a background task running.
func (r Result) Running() bool {
	return r.Task != nil && r.Task.ID != "" && r.Task.Status == TaskRunning
}

// Notice is context queued for the next model request (a background task's
// completion notice), recorded when it is delivered to the model.
type Notice struct {
	Text string `json:"text"`
}

// ErrorMessage is a message for the user that is not part of the model's
// conversation (a provider error, a missing configuration).
type ErrorMessage struct {
	Text string `json:"text"`
}

// TurnEnd ends a turn.
type TurnEnd struct {
	StopReason StopReason `json:"stopReason"`
}

// StopReason is why a turn ended, in ACP's vocabulary.
type StopReason string

// The stop reasons.
const (
	EndTurn         StopReason = "end_turn"
	MaxTokens       StopReason = "max_tokens"
	MaxTurnRequests StopReason = "max_turn_requests"
	Refusal         StopReason = "refusal"
	Cancelled       StopReason = "cancelled"
)

// Usage is the token accounting after one model response: what the
// editor's context bar shows (ACP usage_update) and what later estimates
// are calibrated against.
type Usage struct {
	// Model is the model that answered.
	Model string `json:"model,omitempty"`
	// Used is the tokens now in context: the request plus the part of the
	// answer that the next request carries, as the provider counted them
	// (an estimate when it did not), never more than Size.
	Used int `json:"used"`
	// Size is the model's context window, in tokens.
	Size int `json:"size"`
	// Prompt, Completion, Cached and Reasoning are the provider's counts
	// for this response (0 when unknown).
	Prompt     int `json:"prompt,omitempty"`
	Completion int `json:"completion,omitempty"`
	Cached     int `json:"cached,omitempty"`
	Reasoning  int `json:"reasoning,omitempty"`
	// Known is true when the provider reported the counts.
	Known bool `json:"known,omitempty"`
	// Estimated marks a usage that no response reported: the agent's
	// estimate after a compaction that no request followed.
	Estimated bool `json:"estimated,omitempty"`
	// RequestSize is the request's size in the agent's own measure
	// (characters), kept to calibrate its estimates against Prompt.
	RequestSize int `json:"requestSize,omitempty"`
	// Cost is the session's cumulative cost so far, in Currency; both are
	// zero when no price is configured.
	Cost     float64 `json:"cost,omitempty"`
	Currency string  `json:"currency,omitempty"`
}

// Compaction is the model's history made shorter: old tool outputs elided
// to their first and last lines, and maybe the older turns replaced by a
// summary. The cards and messages the user saw stay as they were; only
// what the model reads changes. ElideBefore and SummaryBefore are
// positions in the agent's model history, meaningful only to the agent
// that recorded them (replaying the same events rebuilds the same
// history, so the same positions).
type Compaction struct {
	// Reason is CompactThreshold, CompactTooLong or CompactCommand.
	Reason string `json:"reason"`
	// Model is the session's model when it compacted.
	Model string `json:"model,omitempty"`
	// ElideBefore: the outputs among the history's first ElideBefore
	// entries are elided (those already elided stay as they are).
	ElideBefore int `json:"elideBefore,omitempty"`
	// Elided is how many outputs this compaction elided.
	Elided int `json:"elided,omitempty"`
	// SummaryBefore: the first SummaryBefore entries (after elision) are
	// replaced by one message holding Summary.
	SummaryBefore int    `json:"summaryBefore,omitempty"`
	Summary       string `json:"summary,omitempty"`
	// Turns is how many of the user's turns the summary replaced.
	Turns int `json:"turns,omitempty"`
	// Dropped marks a summary the model could not make: Summary then only
	// says what was removed (SummaryError says why).
	Dropped      bool   `json:"dropped,omitempty"`
	SummaryError string `json:"summaryError,omitempty"`
	// Before and After are the estimated tokens in context before and
	// after, of a window of Size tokens.
	Before int `json:"before"`
	After  int `json:"after"`
	Size   int `json:"size"`
	// RequestTokens and RequestSize, when set, are the tokens of a request
	// the provider refused as too long (its own count, or when it named
	// none a lower bound: the window plus one) and the agent's measure of
	// that request, for calibrating later estimates.
	RequestTokens int `json:"requestTokens,omitempty"`
	RequestSize   int `json:"requestSize,omitempty"`
	// ProviderWindow is the window a too-long answer named, when it did.
	ProviderWindow int `json:"providerWindow,omitempty"`
	// Note is what the user was told.
	Note string `json:"note"`
	// Cost is the session's cumulative cost after the summary request (as
	// in Usage).
	Cost     float64 `json:"cost,omitempty"`
	Currency string  `json:"currency,omitempty"`
}

// Compaction reasons.
const (
	// CompactThreshold: the next request would have passed the threshold.
	CompactThreshold = "threshold"
	// CompactTooLong: the provider refused a request as too long.
	CompactTooLong = "too_long"
	// CompactCommand: the user asked (/compact).
	CompactCommand = "command"
)

// Command is a slash command the user typed (such as "/model x"), handled
// by the daemon and never sent to the model.
type Command struct {
	Text string `json:"text"`
}

// Info is a message for the user from the daemon (a command's answer, a
// note about the session) that is neither part of the model's
// conversation nor an error.
type Info struct {
	Text string `json:"text"`
}

// Instructions records that project instructions (AGENTS.md files) were
// read into the system prompt: shown once, and again when they change.
type Instructions struct {
	// Files are the files read, in the order they appear in the prompt.
	Files []string `json:"files"`
	// Bytes is the size of what the prompt carries.
	Bytes int `json:"bytes"`
	// Cut is set when a file was longer than the cap and was cut.
	Cut bool `json:"cut,omitempty"`
	// Digest identifies the content (a hash), so a reload knows what was
	// already announced.
	Digest string `json:"digest"`
}

// FileChanges is what one command did to the files under the session's
// directory — or, when Undoes is set, what an /undo put back — drawn as a
// card of its own after the command's. Contents are not in the event: Old
// and New name them in the daemon's content store (internal/changes), so
// the journal keeps references, not files.
type FileChanges struct {
	// ID is the card's id: "changes-" and the call's id for a command,
	// "undo-" and a fresh suffix for an undo.
	ID string `json:"id"`
	// Call is the tool call that made the changes (for a background task,
	// the call that started it); empty for an undo.
	Call string `json:"call,omitempty"`
	// Task is the background task that made them, if any.
	Task string `json:"task,omitempty"`
	// Dir is the session's directory (absolute); Files are relative to it.
	Dir   string       `json:"dir"`
	Files []FileChange `json:"files,omitempty"`
	// Undoes lists the IDs of the FileChanges this undo took back.
	Undoes []string `json:"undoes,omitempty"`
	// Refused names the files an undo left alone, with why ("notes.txt
	// changed since; not undone").
	Refused []string `json:"refused,omitempty"`
}

// FileChange is one file created, modified or deleted.
type FileChange struct {
	// Path is slash-separated, relative to FileChanges.Dir, or absolute
	// for a file in one of the session's additional directories.
	Path string `json:"path"`
	// Op is ChangeCreated, ChangeModified or ChangeDeleted.
	Op string `json:"op"`
	// Old and New name the content before and after in the store; empty
	// when there was none (created, deleted) or it was not kept (a file
	// larger than the store's limit).
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// OldSize and NewSize are the sizes in bytes.
	OldSize int64 `json:"oldSize,omitempty"`
	NewSize int64 `json:"newSize,omitempty"`
	// Mode is the file's permission bits before (after, for a created
	// file), so an undo can recreate it.
	Mode uint32 `json:"mode,omitempty"`
	// Binary marks a content that is not UTF-8 text; Large one that was
	// not kept (over the limit). Neither is diffed.
	Binary bool `json:"binary,omitempty"`
	Large  bool `json:"large,omitempty"`
	// Line is the first changed line (1-based) in the new text (the old
	// one for a deletion); 0 when unknown.
	Line int `json:"line,omitempty"`
}

// FileChange operations.
const (
	ChangeCreated  = "created"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
)

func (UserPrompt) isEvent()       {}
func (TextDelta) isEvent()        {}
func (ThoughtDelta) isEvent()     {}
func (AssistantMessage) isEvent() {}
func (ToolCall) isEvent()         {}
func (ToolOutput) isEvent()       {}
func (Decision) isEvent()         {}
func (OutputCheckpoint) isEvent() {}
func (ToolResult) isEvent()       {}
func (Notice) isEvent()           {}
func (ErrorMessage) isEvent()     {}
func (TurnEnd) isEvent()          {}
func (Usage) isEvent()            {}
func (Compaction) isEvent()       {}
func (Command) isEvent()          {}
func (Info) isEvent()             {}
func (Instructions) isEvent()     {}
func (FileChanges) isEvent()      {}

// MaxCardOutput caps one call's card output, in bytes: the tools stream at
// most this much to a card live, and the journal keeps at most this much,
// so a replayed card shows exactly what the live one did.
const MaxCardOutput = 2 << 20
