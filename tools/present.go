package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// ACP tool kinds used by the intents.
const (
	kindExecute = "execute"
	kindRead    = "read"
	kindThink   = "think"
	kindOther   = "other"
)

// PresentCall opens a foreground bash call as a terminal card titled with
// the exact command, and a background one as a generic execute card.
// Arguments the tool would reject open a generic card titled with the
// command when there is one.
func (t *bash) PresentCall(args json.RawMessage) CallIntent {
	a, err := decodeBashArgs(args)
	switch {
	case err != nil:
		title := BashName
		if f, err := parseFields(args); err == nil {
			if cmd, err := f.str("command", true); err == nil && strings.TrimSpace(cmd) != "" {
				title = cmd
			}
		}
		return CallIntent{Card: CardGeneric, Title: title, Kind: kindExecute, RawInput: rawValue(args)}
	case a.RunInBackground:
		return CallIntent{Card: CardGeneric, Title: a.Command, Kind: kindExecute, RawInput: a.Command,
			Content: nonEmpty(a.Description)}
	}
	return CallIntent{Card: CardTerminal, Title: a.Command, Kind: kindExecute,
		Description: a.Description, Cwd: a.Workdir, RawInput: a}
}

// PresentResult ends a foreground run's terminal card with its card output
// and exit; an error or declined result, a background start and a call
// with malformed arguments end as generic cards.
func (t *bash) PresentResult(_ json.RawMessage, er event.Result) ResultIntent {
	res := resultOf(er)
	ran := res.ExitCode != nil || res.Signal != ""
	if res.Declined != "" || (res.IsError && !ran) {
		return errorIntent(res)
	}
	// A background start is the only successful bash result with a task
	// id; malformed arguments never produce a successful result. So the
	// result alone tells the card (no second decode of the arguments,
	// which replay of a long session would pay per call).
	if res.Task != nil {
		return genericResult(res, false, runFailed(res))
	}
	return ResultIntent{
		Card:      CardTerminal,
		Output:    res.CardOutput,
		ExitCode:  res.ExitCode,
		Signal:    res.Signal,
		Failed:    runFailed(res),
		RawOutput: summarize(res),
		Reason:    reasonOf(res),
		Tail:      res.CardTail,
		TailCut:   res.CardTailCut,
	}
}

// reasonLimit caps a card's reason line, in runes.
const reasonLimit = 200

// reasonOf is the one line that tells the user why a call did not run
// normally, "" when it did: the permission step's refusal, a process limit
// hit, a timeout, or the error — its closing [marker] when the text ends
// with one (a cancel or an abort), else its first line.
func reasonOf(res result) string {
	switch {
	case res.Declined != "":
		return clipLine(res.Declined)
	case res.LimitHit != "" && res.TimedOut:
		return clipLine(fmt.Sprintf("timed out after %s; process limit reached", shortDuration(res.TimeoutMs)))
	case res.LimitHit != "":
		return clipLine(strings.Trim(limitMarker, "[]"))
	case res.TimedOut:
		return clipLine(fmt.Sprintf("timed out after %s", shortDuration(res.TimeoutMs)))
	case !res.IsError:
		return ""
	}
	text := strings.TrimRight(res.Text, "\n")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 && strings.HasPrefix(text[i+1:], "[") && strings.HasSuffix(text, "]") {
		return clipLine(strings.Trim(text[i+1:], "[]"))
	}
	return clipLine(strings.Trim(text, "[]"))
}

// shortDuration writes ms for a reason line without zero tails: "2m",
// "1h30m", "1m30s", "1.5s", "500ms".
func shortDuration(ms int64) string {
	s := (time.Duration(ms) * time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// clipLine is the first line of s, at most reasonLimit runes.
func clipLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > reasonLimit {
		s = string(r[:reasonLimit-1]) + "…"
	}
	return s
}

// PresentCall opens a generic read card naming the task.
func (t *bashOutput) PresentCall(args json.RawMessage) CallIntent {
	return taskCall("Read output from background task", kindRead, args)
}

// PresentResult shows the text read, as console output.
func (t *bashOutput) PresentResult(_ json.RawMessage, er event.Result) ResultIntent {
	res := resultOf(er)
	if res.IsError || res.Declined != "" {
		return errorIntent(res)
	}
	return genericResult(res, true, false)
}

// PresentCall opens a generic execute card naming the task.
func (t *bashKill) PresentCall(args json.RawMessage) CallIntent {
	return taskCall("Kill background task", kindExecute, args)
}

// PresentResult shows what the kill did.
func (t *bashKill) PresentResult(_ json.RawMessage, er event.Result) ResultIntent {
	res := resultOf(er)
	if res.IsError || res.Declined != "" {
		return errorIntent(res)
	}
	return genericResult(res, false, false)
}

// PresentUnknown opens a generic card for a call to a tool this build does
// not know (a journal written by another version, a model that invented a
// name). Pure; never panics.
func PresentUnknown(name string, args json.RawMessage) CallIntent {
	if strings.TrimSpace(name) == "" {
		name = "unknown tool"
	}
	return CallIntent{Card: CardGeneric, Title: name, Kind: kindOther, RawInput: rawValue(args)}
}

// PresentUnknownResult ends a PresentUnknown card with the result's text.
func PresentUnknownResult(_ string, _ json.RawMessage, er event.Result) ResultIntent {
	res := resultOf(er)
	if res.IsError || res.Declined != "" {
		return errorIntent(res)
	}
	return genericResult(res, false, false)
}

// taskCall is the card of a call naming a background task.
func taskCall(title, kind string, args json.RawMessage) CallIntent {
	id, err := decodeTaskID(args)
	if err != nil {
		return CallIntent{Card: CardGeneric, Title: title, Kind: kind, RawInput: rawValue(args)}
	}
	return CallIntent{Card: CardGeneric, Title: title + " " + id, Kind: kind, RawInput: id}
}

// runFailed reports whether a foreground run ends its card failed.
func runFailed(res result) bool {
	return res.IsError || res.Declined != "" || res.Signal != "" || res.TimedOut || res.LimitHit != "" ||
		(res.ExitCode != nil && *res.ExitCode != 0)
}

// errorIntent is the generic, failed end of a call that did not run to a
// process exit: no exit pill. Output carries what a terminal card already
// showed live, so a replay shows it too.
func errorIntent(res result) ResultIntent {
	text := res.Text
	if text == "" {
		text = res.Declined
	}
	content := nonEmpty(text)
	if res.CardOutput != "" && text != "" {
		content = []string{Fence("console", text)}
	}
	return ResultIntent{Card: CardGeneric, Output: res.CardOutput, Failed: true,
		Content: content, RawOutput: summarize(res), Reason: reasonOf(res)}
}

// genericResult shows the result text, fenced as console output when it
// is output. Callers have handled error and declined results.
func genericResult(res result, console, failed bool) ResultIntent {
	content := nonEmpty(res.Text)
	if console && res.Text != "" {
		content = []string{Fence("console", res.Text)}
	}
	return ResultIntent{Card: CardGeneric, Failed: failed, Content: content, RawOutput: summarize(res)}
}

// resultSummary is a result's structured part, a card's rawOutput: the
// texts are in the card already.
type resultSummary struct {
	IsError    bool   `json:"isError,omitempty"`
	Declined   string `json:"declined,omitempty"`
	ExitCode   *int   `json:"exitCode,omitempty"`
	Signal     string `json:"signal,omitempty"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	TimeoutMs  int64  `json:"timeoutMs,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	SpillPath  string `json:"spillPath,omitempty"`
	SpillError string `json:"spillError,omitempty"`
	LimitHit   string `json:"limitHit,omitempty"`
	TaskID     string `json:"taskId,omitempty"`
	TaskStatus string `json:"taskStatus,omitempty"`
}

func summarize(r result) resultSummary {
	id, status := r.task()
	return resultSummary{
		IsError: r.IsError, Declined: r.Declined, ExitCode: r.ExitCode, Signal: r.Signal,
		TimedOut: r.TimedOut, TimeoutMs: r.TimeoutMs, Truncated: r.Truncated, SpillPath: r.SpillPath,
		SpillError: r.SpillError, LimitHit: r.LimitHit, TaskID: id, TaskStatus: status,
	}
}

// rawValue is logged arguments as a card's rawInput: the JSON value when
// valid, else the text (valid UTF-8), nil when empty.
func rawValue(args json.RawMessage) any {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return nil
	}
	// Valid JSON passes through as is — unless a client could not decode
	// it either (a number beyond float64, like 1E1000, fails every
	// JSON-to-double parser, and would fail the whole update): then it is
	// shown as text.
	var v any
	if json.Unmarshal(trimmed, &v) == nil {
		var buf bytes.Buffer
		if json.Compact(&buf, trimmed) == nil {
			return json.RawMessage(buf.Bytes())
		}
	}
	return strings.ToValidUTF8(string(args), "\uFFFD")
}

// Fence wraps text in a fenced code block tagged lang, with a fence longer
// than any backtick run inside the text.
func Fence(lang, text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
