package presentation

import acp "github.com/coder/acp-go-sdk"

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
