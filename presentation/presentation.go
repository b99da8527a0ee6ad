// Package presentation turns the tools' card intents into ACP session/update
// payloads for a client with given capabilities. Every function is pure: the
// live path and session/load replay call the same code with the same
// intents, so a reloaded card looks as it did live.
//
// A terminal intent becomes a terminal card through Zed's _meta extension
// when the client advertised clientCapabilities._meta.terminal_output: the
// tool_call carries _meta.terminal_info and a terminal content item, output
// streams as tool_call_update _meta.terminal_output, and the final update
// carries _meta.terminal_exit with the status. Without the capability the
// output ends up in a fenced console block, re-sent with the output's tail
// while the command runs and ended by a line saying how it ended (see
// fallback.go). Generic intents become ordinary cards with text content.
package presentation

import (
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Caps are the client capabilities presentation depends on.
type Caps struct {
	// Terminal: the client draws display-only terminals from _meta
	// terminal_info / terminal_output / terminal_exit.
	Terminal bool
	// Session: the newer update kinds the client takes (schema.go).
	Session SessionCaps
}

// CapsFrom reads Caps from the client's initialize capabilities:
// Terminal is set only by clientCapabilities._meta.terminal_output == true
// (a JSON boolean; any other value is false).
func CapsFrom(c acp.ClientCapabilities) Caps {
	v, ok := c.Meta["terminal_output"].(bool)
	return Caps{Terminal: ok && v}
}

// Keys of Zed's terminal _meta extension.
const (
	metaTerminalInfo   = "terminal_info"
	metaTerminalOutput = "terminal_output"
	metaTerminalExit   = "terminal_exit"
)

type terminalInfo struct {
	TerminalID string `json:"terminal_id"`
	Cwd        string `json:"cwd,omitempty"`
}

type terminalOutput struct {
	TerminalID string `json:"terminal_id"`
	Data       string `json:"data"`
}

type terminalExit struct {
	TerminalID string  `json:"terminal_id"`
	ExitCode   *int    `json:"exit_code"` // non-negative, or null when unknown
	Signal     *string `json:"signal"`
}

// OpenCard is the tool_call update (status in_progress) opening a call's
// card. The call id is also the terminal id. With caps.Terminal, a terminal
// intent's content is its description (when any) and the terminal, and its
// _meta.terminal_info names the terminal's directory: the intent's Cwd made
// absolute against sessionCwd, or sessionCwd when empty. Otherwise the
// content is the intent's text: its description, or its Content blocks.
func OpenCard(callID string, in tools.CallIntent, sessionCwd string, caps Caps) acp.SessionUpdate {
	tc := &acp.SessionUpdateToolCall{
		ToolCallId: acp.ToolCallId(callID),
		Title:      title(in.Title),
		Kind:       toolKind(in.Kind),
		Status:     acp.ToolCallStatusInProgress,
		RawInput:   in.RawInput,
		Content:    cardContent(callID, in, caps),
	}
	if isTerminal(in, caps) {
		tc.Meta = map[string]any{metaTerminalInfo: terminalInfo{
			TerminalID: callID,
			Cwd:        resolveCwd(in.Cwd, sessionCwd),
		}}
	}
	return acp.SessionUpdate{ToolCall: tc}
}

// LocateCard renames the directory of a terminal card's opening update u
// with loc (nil leaves u as it is), so the card says which machine the
// command runs on. Any other update is returned unchanged.
func LocateCard(u acp.SessionUpdate, loc func(dir string) string) acp.SessionUpdate {
	if loc == nil || u.ToolCall == nil {
		return u
	}
	info, ok := u.ToolCall.Meta[metaTerminalInfo].(terminalInfo)
	if !ok || info.Cwd == "" {
		return u
	}
	info.Cwd = loc(info.Cwd)
	meta := make(map[string]any, len(u.ToolCall.Meta))
	for k, v := range u.ToolCall.Meta {
		meta[k] = v
	}
	meta[metaTerminalInfo] = info
	tc := *u.ToolCall
	tc.Meta = meta
	return acp.SessionUpdate{ToolCall: &tc}
}

// CardOutput is the tool_call_update appending live output data to a
// terminal card. ok is false without caps.Terminal (the output is then
// shown when the card closes) and for empty data. Use it only for calls
// whose card opened as a terminal; never resend data already sent.
func CardOutput(callID, data string, caps Caps) (u acp.SessionUpdate, ok bool) {
	if !caps.Terminal || data == "" {
		return acp.SessionUpdate{}, false
	}
	return outputUpdate(callID, data), true
}

// CloseCard is the final update(s) of a call's card, opened with the
// intent opened. The last update carries the final status: failed when
// res.Failed, else completed.
//
// A terminal card (caps.Terminal and a terminal opened intent) is finished
// with _meta.terminal_exit; when its output was not streamed (streamed is
// false: a replay, or a live run whose chunks were not forwarded), a
// terminal_output update with the whole res.Output comes first. A result
// with a Reason ends the terminal's output with it (see ReasonPrefix), live
// and on replay alike. Its content
// keeps the terminal; a generic result (an error, a declined call) adds its
// text after it. Without the capability, a terminal result's content, and
// that of any result with a Reason on a card opened as a terminal, is the
// description and the output's bounded tail in a fenced console block,
// ended by a line saying how the call ended (see fallbackFinal). A generic
// result keeps the opening content and adds its Content blocks.
func CloseCard(callID string, opened tools.CallIntent, res tools.ResultIntent, caps Caps, streamed bool) []acp.SessionUpdate {
	status := acp.ToolCallStatusCompleted
	if res.Failed {
		status = acp.ToolCallStatusFailed
	}
	final := &acp.SessionToolCallUpdate{
		ToolCallId: acp.ToolCallId(callID),
		Status:     &status,
		RawOutput:  res.RawOutput,
	}
	if res.Title != "" {
		t := title(res.Title)
		final.Title = &t
	}
	var updates []acp.SessionUpdate
	switch {
	case isTerminal(opened, caps):
		final.Meta = map[string]any{metaTerminalExit: exitOf(callID, res)}
		out := reasonLine(res.Output, res.Reason)
		if !streamed {
			// Replay: the whole output rides on the final update (Zed
			// applies the output before the exit), one update per card less.
			// A journal written before the tools removed string sequences
			// (OSC 52, OSC 8, titles, …) may hold them: never replayed raw.
			out = tools.StripStringSequences(res.Output) + out
		}
		if out != "" {
			final.Meta[metaTerminalOutput] = terminalOutputOf(callID, out)
		}
		if res.Card != tools.CardTerminal && len(res.Content) > 0 {
			content := append(openContent(opened), acp.ToolTerminalRef(callID))
			final.Content = append(content, textBlocks(res.Content...)...)
		}
	case res.Card == tools.CardTerminal || (opened.Card == tools.CardTerminal && res.Reason != ""):
		// The fallback (see fallback.go): the output's tail and how the
		// call ended, also for one that did not run (its reason, not the
		// model's instructions).
		final.Content = openContent(opened)
		if out := fallbackFinal(res); out != "" {
			final.Content = append(final.Content, textBlocks(tools.Fence("console", out))...)
		}
	case len(res.Content) > 0:
		final.Content = append(openContent(opened), textBlocks(res.Content...)...)
	}
	return append(updates, acp.SessionUpdate{ToolCallUpdate: final})
}

// ReasonPrefix marks the line a terminal card ends with when its call did
// not run normally, so it cannot be taken for the command's own output.
const ReasonPrefix = "dsh-acp: "

// reasonLine is the terminal output that shows reason after output: on a
// line of its own, marked with ReasonPrefix; "" when there is no reason.
func reasonLine(output, reason string) string {
	if reason == "" {
		return ""
	}
	line := ReasonPrefix + reason + "\n"
	if output != "" && !strings.HasSuffix(output, "\n") {
		line = "\n" + line
	}
	return line
}

// Replay is a finished call's whole card, for session/load: OpenCard then
// CloseCard with nothing streamed.
func Replay(callID string, opened tools.CallIntent, res tools.ResultIntent, sessionCwd string, caps Caps) []acp.SessionUpdate {
	return append([]acp.SessionUpdate{OpenCard(callID, opened, sessionCwd, caps)},
		CloseCard(callID, opened, res, caps, false)...)
}

// PermissionToolCall is the toolCall of a session/request_permission for a
// call whose card is open: status pending, the exact command as title, kind,
// rawInput, and the card's own content (the description and, for a terminal
// card, the terminal reference), so the client's upsert shows what is being
// approved without dropping the terminal.
func PermissionToolCall(callID string, in tools.CallIntent, caps Caps) acp.ToolCallUpdate {
	t, k, pending := title(in.Title), toolKind(in.Kind), acp.ToolCallStatusPending
	return acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(callID), Title: &t, Kind: &k, RawInput: in.RawInput,
		Status: &pending, Content: cardContent(callID, in, caps)}
}

func outputUpdate(callID, data string) acp.SessionUpdate {
	return acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
		ToolCallId: acp.ToolCallId(callID),
		Meta:       map[string]any{metaTerminalOutput: terminalOutputOf(callID, data)},
	}}
}

func terminalOutputOf(callID, data string) terminalOutput {
	return terminalOutput{TerminalID: callID, Data: strings.ToValidUTF8(data, "\uFFFD")}
}

func exitOf(callID string, res tools.ResultIntent) terminalExit {
	e := terminalExit{TerminalID: callID}
	if res.ExitCode != nil && *res.ExitCode >= 0 {
		code := *res.ExitCode
		e.ExitCode = &code
	}
	if res.Signal != "" {
		sig := res.Signal
		e.Signal = &sig
	}
	return e
}

// isTerminal reports whether a card opened with in is drawn as a terminal.
func isTerminal(in tools.CallIntent, caps Caps) bool {
	return caps.Terminal && in.Card == tools.CardTerminal
}

// openContent is a card's text content as opened: a terminal intent's
// description, a generic intent's Content.
// cardContent is an open card's content: its text blocks, then the
// terminal when the card is one.
func cardContent(callID string, in tools.CallIntent, caps Caps) []acp.ToolCallContent {
	content := openContent(in)
	if isTerminal(in, caps) {
		content = append(content, acp.ToolTerminalRef(callID))
	}
	return content
}

func openContent(in tools.CallIntent) []acp.ToolCallContent {
	if in.Card == tools.CardTerminal {
		if in.Description == "" {
			return nil
		}
		return textBlocks(in.Description)
	}
	return textBlocks(in.Content...)
}

func textBlocks(texts ...string) []acp.ToolCallContent {
	var out []acp.ToolCallContent
	for _, t := range texts {
		if t != "" {
			out = append(out, acp.ToolContent(acp.TextBlock(t)))
		}
	}
	return out
}

// resolveCwd makes a terminal's cwd absolute against the session's.
func resolveCwd(cwd, sessionCwd string) string {
	switch {
	case cwd == "":
		return sessionCwd
	case filepath.IsAbs(cwd) || sessionCwd == "":
		return filepath.Clean(cwd)
	}
	return filepath.Join(sessionCwd, cwd)
}

// title is a card title; ACP requires one.
func title(t string) string {
	if strings.TrimSpace(t) == "" {
		return "tool call"
	}
	return t
}

// toolKind maps an intent's kind to ACP's; anything unknown is other.
func toolKind(k string) acp.ToolKind {
	switch kind := acp.ToolKind(k); kind {
	case acp.ToolKindRead, acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove, acp.ToolKindSearch,
		acp.ToolKindExecute, acp.ToolKindThink, acp.ToolKindFetch, acp.ToolKindSwitchMode:
		return kind
	}
	return acp.ToolKindOther
}
