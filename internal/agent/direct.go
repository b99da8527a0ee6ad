package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// DirectTool is the tool a direct command runs with.
const DirectTool = "bash"

// RunDirect runs a command the user typed (a `!` command) with the bash tool
// as one turn: no model and no Approver are involved, and it works with no
// model configured. It emits UserPrompt{"!"+command}, an Info for each
// message queued with QueueInfo, ToolCall{Direct: true}
// (id "user-" and 12 hex digits), the tool's ToolOutput, ToolResult and
// TurnEnd. The command and its result enter the history as a user message,
// so the model sees them on the next prompt. It returns Cancelled when ctx
// ended the run, EndTurn otherwise; the error is reserved as for Prompt.
func (s *Session) RunDirect(ctx context.Context, command string) (event.StopReason, error) {
	if !s.acquire(ctx) {
		return event.Cancelled, nil
	}
	defer s.release()
	start := time.Now()
	// No description: the command is its own label (clients that show the
	// description as the card's label would show a stock phrase instead).
	args, err := json.Marshal(struct {
		Command string `json:"command"`
	}{command})
	if err != nil {
		return event.EndTurn, err // unreachable: a string always encodes
	}
	call := event.ToolCall{ID: directID(), Name: DirectTool, Args: args, Direct: true}
	// The prompt, the queued infos and the call go to the sink as one batch,
	// as do the result and the turn's end: the journal writes each batch
	// with one write (before the card that shows it).
	opening := append([]event.Event{event.UserPrompt{Text: "!" + command}}, s.takeInfos()...)
	s.recordAll(append(opening, call)...)
	res, stop := errorResult("the bash tool is not available in this session"), event.EndTurn
	if tool, ok := s.box.Lookup(DirectTool); ok {
		// The user typed it: a `git init` of theirs may make the repository.
		res = s.runTool(ctx, tool, call, "", permission.CreatesRepository(command))
		if ctx.Err() != nil {
			res, stop = cancelledResult(res), event.Cancelled
		}
	}
	s.recordAll(event.ToolResult{ID: call.ID, Name: call.Name, Args: call.Args, Result: res}, event.TurnEnd{StopReason: stop})
	s.log.Info("direct command ended", zap.String("call", call.ID),
		zap.Bool("isError", res.IsError), zap.Duration("elapsed", time.Since(start)))
	return stop, nil
}

// directID is a fresh tool call id for a direct command.
func directID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "user-" + hex.EncodeToString(b[:])
}
