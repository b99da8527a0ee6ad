package presentation

import (
	"strconv"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/wirejson"
)

// LiveOutput reports whether u is a card's live output update and nothing
// else (what CardOutput returns, a card's most frequent update), and
// returns its call id and data, so that an encoder can write the one shape
// that carries bulk output without reflection or intermediate copies.
func LiveOutput(u acp.SessionUpdate) (callID, data string, ok bool) {
	tc := u.ToolCallUpdate
	if tc == nil || u.UserMessageChunk != nil || u.AgentMessageChunk != nil || u.AgentThoughtChunk != nil ||
		u.ToolCall != nil {
		return "", "", false
	}
	if tc.Content != nil || tc.Kind != nil || tc.Locations != nil || tc.RawInput != nil || tc.RawOutput != nil ||
		tc.Status != nil || tc.Title != nil || len(tc.Meta) != 1 {
		return "", "", false
	}
	out, isOutput := tc.Meta[metaTerminalOutput].(terminalOutput)
	if !isOutput || out.TerminalID != string(tc.ToolCallId) {
		return "", "", false
	}
	return out.TerminalID, out.Data, true
}

// AppendJSON methods write the _meta values as encoding/json would, so the
// wire encoder needs no reflection for them (wirejson.Appender).

func (t terminalInfo) AppendJSON(b []byte) []byte {
	b = append(b, `{"terminal_id":`...)
	b = wirejson.AppendString(b, t.TerminalID)
	if t.Cwd != "" {
		b = append(b, `,"cwd":`...)
		b = wirejson.AppendString(b, t.Cwd)
	}
	return append(b, '}')
}

func (t terminalOutput) AppendJSON(b []byte) []byte {
	b = append(b, `{"terminal_id":`...)
	b = wirejson.AppendString(b, t.TerminalID)
	b = append(b, `,"data":`...)
	b = wirejson.AppendString(b, t.Data)
	return append(b, '}')
}

func (t terminalExit) AppendJSON(b []byte) []byte {
	b = append(b, `{"terminal_id":`...)
	b = wirejson.AppendString(b, t.TerminalID)
	b = append(b, `,"exit_code":`...)
	if t.ExitCode != nil {
		b = strconv.AppendInt(b, int64(*t.ExitCode), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"signal":`...)
	if t.Signal != nil {
		b = wirejson.AppendString(b, *t.Signal)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}
