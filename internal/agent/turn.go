package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Prompt runs one turn for the user's prompt (already rendered to text; see
// RenderPrompt): model requests and tool calls until the model answers
// without tool calls, the turn limit is reached, the provider stops it, or
// ctx is cancelled. It emits UserPrompt first and TurnEnd last; right after
// the UserPrompt, an Info for each message queued with QueueInfo, and an
// Instructions event when the project's AGENTS.md files
// (read again at the start of every turn) differ from those last shown.
// Each model response is followed by a Usage event; a compaction, when one
// is due, is a Compaction event before the request it made room for.
//
// Provider failures are told to the user (an ErrorMessage) and end the turn
// with EndTurn; they are not errors. A cancelled ctx ends it with Cancelled,
// the history left consistent. The error is reserved for failures of the
// session itself; there are none today. If ctx ends while another turn
// still runs, Prompt returns Cancelled without emitting anything.
func (s *Session) Prompt(ctx context.Context, text string) (event.StopReason, error) {
	return s.prompt(ctx, text, nil)
}

// PromptBlocks runs one turn for the user's prompt blocks, as Prompt does
// for their rendering (RenderPrompt). Content the model cannot be given
// (an image, audio, a binary resource) is named in the text the model
// reads and told to the user in an Info event, after the UserPrompt.
func (s *Session) PromptBlocks(ctx context.Context, blocks []PromptBlock) (event.StopReason, error) {
	return s.prompt(ctx, RenderPrompt(blocks), Unsent(blocks))
}

func (s *Session) prompt(ctx context.Context, text string, unsent []string) (event.StopReason, error) {
	if !s.acquire(ctx) {
		return event.Cancelled, nil
	}
	defer s.release()
	start := time.Now()
	s.record(event.UserPrompt{Text: text})
	if len(unsent) > 0 {
		s.record(event.Info{Text: unsentNote(unsent)})
	}
	s.tellInfos()
	if info, changed := s.refreshSystem(); changed {
		s.record(info)
	}
	stop, requests := s.runTurn(ctx)
	s.record(event.TurnEnd{StopReason: stop})
	s.log.Info("turn ended", zap.String("stopReason", string(stop)),
		zap.Int("requests", requests), zap.Duration("elapsed", time.Since(start)))
	return stop, nil
}

// runTurn is the model ⇄ tools loop. It returns why it stopped and how many
// model requests it made.
func (s *Session) runTurn(ctx context.Context) (event.StopReason, int) {
	if s.model == nil {
		s.record(event.ErrorMessage{Text: noModelText})
		return event.EndTurn, 0
	}
	for n := 1; ; n++ {
		if n > s.cfg.MaxTurnRequests {
			return event.MaxTurnRequests, n - 1
		}
		stop, done := s.step(ctx)
		if done {
			return stop, n
		}
	}
}

// step makes one model request and runs the calls it asks for. done reports
// that the turn is over, for the reason stop. A request that would pass
// the compaction threshold is compacted first; one the provider refuses as
// too long is compacted and sent again, once.
func (s *Session) step(ctx context.Context) (stop event.StopReason, done bool) {
	s.deliverNotices()
	model := s.Model()
	req := s.request(model)
	if s.acct.tokens(requestSize(req)) > s.threshold(model) {
		s.compact(ctx, s.newJob(event.CompactThreshold, model, req, nil))
		if ctx.Err() != nil {
			return event.Cancelled, true
		}
		req = s.request(model)
	}
	resp, err := s.stream(ctx, req)
	if tooLong := contextTooLong(ctx, err); tooLong != nil {
		if _, ok := s.compact(ctx, s.newJob(event.CompactTooLong, model, req, tooLong)); !ok {
			s.record(event.ErrorMessage{Text: stuckText(err, false)})
			return event.EndTurn, true
		}
		if ctx.Err() != nil {
			return event.Cancelled, true
		}
		req = s.request(model)
		resp, err = s.stream(ctx, req)
		if contextTooLong(ctx, err) != nil {
			s.record(event.ErrorMessage{Text: stuckText(err, true)})
			return event.EndTurn, true
		}
	}
	switch {
	case ctx.Err() != nil:
		s.recordPartial(resp)
		return event.Cancelled, true
	case err != nil:
		s.recordPartial(resp)
		s.record(event.ErrorMessage{Text: describeModelError(err)})
		return event.EndTurn, true
	}
	calls := resp.ToolCalls
	if resp.FinishReason == llm.FinishLength || resp.FinishReason == llm.FinishContentFilter {
		calls = nil // cut off mid-call: the arguments cannot be trusted
	}
	s.record(event.AssistantMessage{Text: resp.Text, Reasoning: resp.Reasoning, ToolCalls: callInfos(calls)})
	s.record(s.usageEvent(model, requestSize(req), resp, len(calls) > 0))
	if len(calls) == 0 {
		return finishStop(resp.FinishReason), true
	}
	return s.runCalls(ctx, calls)
}

// request is the next request to model: the system prompt, the history
// and the tools.
func (s *Session) request(model string) llm.Request {
	return llm.Request{
		Model:    model,
		Messages: s.hist.messages(s.system, !s.cfg.OmitToolCallReasoning),
		Tools:    s.toolDefs(),
		Thinking: s.Thinking(),
		OnRetry:  s.onRetry,
	}
}

// onRetry lets the user see a retry as it happens, not only a late failure.
func (s *Session) onRetry(r llm.RetryInfo) {
	s.sink.Emit(event.ErrorMessage{Text: "\n[model provider: " + r.String() + "]\n"})
}

// stream sends req, streaming its text and reasoning as deltas.
func (s *Session) stream(ctx context.Context, req llm.Request) (llm.Response, error) {
	start := time.Now()
	resp, err := s.model.Stream(ctx, req, s.emitDelta)
	if resp.ThinkingRefused != nil { // once per model: the client sends the setting no more
		s.sink.Emit(event.ErrorMessage{Text: "\n[model provider: " + llm.Advice(resp.ThinkingRefused) + "]\n"})
	}
	s.log.Debug("model response", zap.Int("messages", len(req.Messages)),
		zap.String("finish", string(resp.FinishReason)), zap.Int("toolCalls", len(resp.ToolCalls)),
		zap.Bool("failed", err != nil), zap.Duration("elapsed", time.Since(start)))
	return resp, err
}

// contextTooLong is err as the provider's too-long refusal, nil when it is
// not one (or ctx ended).
func contextTooLong(ctx context.Context, err error) *llm.Error {
	if err == nil || ctx.Err() != nil || !errors.Is(err, llm.ErrContextTooLong) {
		return nil
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		e = &llm.Error{Kind: llm.ErrContextTooLong}
	}
	return e
}

func finishStop(r llm.FinishReason) event.StopReason {
	switch r {
	case llm.FinishLength:
		return event.MaxTokens
	case llm.FinishContentFilter:
		return event.Refusal
	}
	return event.EndTurn
}

func (s *Session) emitDelta(d llm.Delta) {
	if d.Reasoning != "" {
		s.sink.Emit(event.ThoughtDelta{Text: d.Reasoning})
	}
	if d.Text != "" {
		s.sink.Emit(event.TextDelta{Text: d.Text})
	}
}

// recordPartial records what streamed before a cancel or failure. Tool calls
// are dropped: they never ran and may be cut short.
func (s *Session) recordPartial(resp llm.Response) {
	if resp.Text == "" && resp.Reasoning == "" {
		return
	}
	s.record(event.AssistantMessage{Text: resp.Text, Reasoning: resp.Reasoning})
}

// deliverNotices moves the queued notices into the history of this request.
func (s *Session) deliverNotices() {
	for _, n := range s.takeNotices() {
		s.record(event.Notice{Text: n})
	}
}

func callInfos(calls []llm.ToolCall) []event.CallInfo {
	if len(calls) == 0 {
		return nil
	}
	infos := make([]event.CallInfo, len(calls))
	for i, c := range calls {
		infos[i] = event.CallInfo{ID: c.ID, Name: c.Name, Args: eventArgs(c.Args)}
	}
	return infos
}

// runCalls runs a message's calls in order. After a cancel (or an Approver's
// CancelTurn) the remaining calls are opened and closed with a cancelled
// result, so none is left without one.
func (s *Session) runCalls(ctx context.Context, calls []llm.ToolCall) (event.StopReason, bool) {
	for i, c := range calls {
		call := event.ToolCall{ID: c.ID, Name: c.Name, Args: eventArgs(c.Args)}
		if ctx.Err() != nil {
			s.cancelCalls(calls[i:])
			return event.Cancelled, true
		}
		res, cancelTurn := s.runCall(ctx, call)
		s.record(event.ToolResult{ID: call.ID, Name: call.Name, Args: call.Args, Result: res})
		if cancelTurn {
			s.cancelCalls(calls[i+1:])
			return event.Cancelled, true
		}
	}
	return "", false
}

const (
	cancelledBefore = "cancelled: the user stopped the turn before this call ran"
	cancelledDuring = "cancelled: the user stopped the turn while this call ran"
)

func (s *Session) cancelCalls(calls []llm.ToolCall) {
	for _, c := range calls {
		call := event.ToolCall{ID: c.ID, Name: c.Name, Args: eventArgs(c.Args)}
		s.record(call)
		s.record(event.ToolResult{ID: call.ID, Name: call.Name, Args: call.Args,
			Result: event.Result{Text: cancelledBefore, IsError: true}})
	}
}

// runCall opens the card of one call, checks, approves and runs it.
// cancelTurn reports that the turn must end (ctx cancelled, or the
// Approver said so).
func (s *Session) runCall(ctx context.Context, call event.ToolCall) (res event.Result, cancelTurn bool) {
	tool, ok := s.box.Lookup(call.Name)
	if !ok {
		s.record(call)
		return errorResult(fmt.Sprintf("unknown tool %q; the tools you can call are: %s",
			call.Name, strings.Join(s.toolNames(), ", "))), false
	}
	if !isJSONObject(call.Args) {
		s.record(call)
		return errorResult(fmt.Sprintf("the arguments of this %s call are not a JSON object: %s\n"+
			"Call the tool again with a JSON object that matches its schema.", call.Name, clipText(argsText(call.Args), 500))), false
	}
	a := s.approve(ctx, call)
	switch {
	case ctx.Err() != nil || a.Verdict == CancelTurn:
		return event.Result{Text: cancelledBefore, IsError: true}, true
	case a.Verdict == Deny:
		reason := a.Reason
		if reason == "" {
			reason = "the user declined to run this call"
		}
		shown := a.UserReason
		if shown == "" {
			shown = reason
		}
		return event.Result{Text: reason, IsError: true, Declined: shown}, false
	}
	res = s.runTool(ctx, tool, call, a.Level, a.NewRepository)
	if ctx.Err() != nil {
		return cancelledResult(res), true
	}
	return res, false
}

// approve opens call's card and decides it with the Approver: the card
// opens pending when the user is asked, and stays so until the answer. The
// decision is recorded after the card opened. The returned Verdict is never
// Ask.
func (s *Session) approve(ctx context.Context, call event.ToolCall) Approval {
	if s.approver == nil {
		s.record(call)
		return Approval{Verdict: Allow}
	}
	a := s.approver.Approve(ctx, s.toolSession(), call)
	if a.Verdict == Ask && a.Ask != nil {
		call.Pending = true
		s.record(call)
		a = a.Ask(ctx)
	} else {
		s.record(call)
	}
	if a.Verdict == Ask { // an Approver that broke its contract runs nothing
		a = Approval{Verdict: Deny, Reason: "Not run: the permission step gave no answer.", UserReason: "denied: the permission step gave no answer"}
	}
	if a.Decision.Verdict != "" {
		d := a.Decision
		d.ID, d.Reason = call.ID, a.Reason
		s.record(d)
	}
	return a
}

// runTool runs a tool at the sandbox level the permission step chose
// (empty: the session's), streaming its output as ToolOutput events. A
// panic in the tool becomes an error result rather than the daemon's end.
func (s *Session) runTool(ctx context.Context, tool tools.Tool, call event.ToolCall, level executor.Level, newRepo bool) (res event.Result) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("tool panicked", zap.String("tool", call.Name), zap.String("call", call.ID), zap.Any("panic", p))
			res = errorResult(fmt.Sprintf("internal error: the %s tool failed unexpectedly", call.Name))
		}
		s.log.Debug("tool call ended", zap.String("tool", call.Name), zap.String("call", call.ID),
			zap.Bool("isError", res.IsError), zap.Duration("elapsed", time.Since(start)))
	}()
	return tool.Run(ctx, tools.Call{
		ID:      call.ID,
		Args:    call.Args,
		Session: s.toolSession(),
		Output:  s.outputSink(call),
		Level:   level,
		// A call the user approved knowingly may create a repository.
		NewRepository: newRepo,
	})
}

// cancelledResult marks a result of a call the cancel interrupted, keeping
// what the tool reported (its output for the card).
func cancelledResult(res event.Result) event.Result {
	res.IsError = true
	if strings.TrimSpace(res.Text) == "" {
		res.Text = cancelledDuring
	} else {
		res.Text = strings.TrimRight(res.Text, "\n") + "\n[" + cancelledDuring + "]"
	}
	return res
}

func errorResult(text string) event.Result { return event.Result{Text: text, IsError: true} }

func isJSONObject(args json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(args, &obj) == nil && obj != nil
}

func (s *Session) toolNames() []string {
	var names []string
	for _, t := range s.box.All() {
		names = append(names, t.Name())
	}
	if len(names) == 0 {
		return []string{"(none)"}
	}
	return names
}

// clipText shortens s to about n bytes, on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// outputSink is the Output function of a tool call: each chunk goes to the
// sink as ToolOutput. It runs on an executor's goroutine, so a panic in a
// sink is contained here (logged, the chunk dropped) instead of ending the
// daemon; the call's result still closes its card.
func (s *Session) outputSink(call event.ToolCall) func(string) {
	return func(data string) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("output sink panicked", zap.String("call", call.ID), zap.Any("panic", p))
			}
		}()
		s.sink.Emit(event.ToolOutput{ID: call.ID, Data: data})
	}
}
