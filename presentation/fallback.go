package presentation

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// The fallback card: what a client without Zed's terminal _meta (acpx,
// CodeCompanion, agent-shell, …) shows of a command. It is text content: the
// description, then a fenced console block of the output's cleaned tail
// (tools.CleanTerminalText: no escapes, redraws collapsed).
//
// While the command runs the block is re-sent with the latest output — ACP
// replaces a card's content whole, so every update carries the block, not
// an increment — at most once per FlushPolicy.Fallback (default one
// second; the first output after a quiet second goes at once), and only the
// last FallbackLiveLines lines, at most FallbackLiveBytes: about a screen,
// so a client that redraws or prints the block on each update stays
// readable and the wire carries at most a few KB per second whatever the
// command prints. The final update carries the tail the model also sees
// (at most FallbackFinalBytes, from a line start, after a line saying how
// much was cut), then one line that says how the command ended: the same
// `dsh-acp: <reason>` line the terminal card shows for a call that did not
// run normally (declined, denied, timed out, cancelled, could not start),
// else `dsh-acp: killed by SIGKILL` or `dsh-acp: exit 3` — what Zed's exit
// pill says. A replay draws the final update from the journaled result.

// Fallback card bounds (see above).
const (
	FallbackLiveLines  = 20
	FallbackLiveBytes  = 4 << 10
	FallbackFinalBytes = 32 << 10
	// fallbackKeep is the raw live output kept to draw the next update
	// from: enough for FallbackLiveLines after redraws collapse.
	fallbackKeep = 64 << 10
)

// fallbackLive is a running fallback card's output: the last fallbackKeep
// bytes, and how many came in all. Used under its cardStream's sending
// lock only.
type fallbackLive struct {
	buf   []byte
	total int64
}

func (f *fallbackLive) add(data string) {
	f.total += int64(len(data))
	if len(data) >= fallbackKeep {
		f.buf = append(f.buf[:0], data[len(data)-fallbackKeep:]...)
		return
	}
	if over := len(f.buf) + len(data) - fallbackKeep; over > 0 {
		f.buf = append(f.buf[:0], f.buf[over:]...)
	}
	f.buf = append(f.buf, data...)
}

// text is the console text of the live update: the last lines, with a
// note when earlier output is not shown.
func (f *fallbackLive) text() string {
	raw := string(f.buf)
	dropped := f.total - int64(len(raw))
	if dropped > 0 { // the kept bytes may start inside a line or a sequence
		if i := strings.IndexByte(raw, '\n'); i >= 0 {
			dropped += int64(i + 1)
			raw = raw[i+1:]
		}
	}
	body, cut := boundTail(tools.CleanTerminalText(raw), FallbackLiveLines, FallbackLiveBytes)
	return withCutNote(body, dropped+int64(cut))
}

// fallbackProgress is the update showing a running fallback card's output.
func fallbackProgress(callID string, opened tools.CallIntent, text string) acp.SessionUpdate {
	content := openContent(opened)
	if text = strings.TrimRight(text, "\n"); text != "" {
		content = append(content, textBlocks(tools.Fence("console", text))...)
	}
	return acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
		ToolCallId: acp.ToolCallId(callID),
		Content:    content,
	}}
}

// fallbackFinal is the console text a finished fallback card ends with:
// the output's tail (res.Tail when the output went past the card's cap,
// else res.Output), bounded, then the line saying how the call ended.
func fallbackFinal(res tools.ResultIntent) string {
	src, before := res.Output, int64(0)
	if res.Tail != "" {
		src, before = res.Tail, res.TailCut
	}
	body, cut := boundTail(tools.CleanTerminalText(src), 0, FallbackFinalBytes)
	text := withCutNote(body, before+int64(cut))
	if end := endLine(res); end != "" {
		text = strings.TrimRight(text, "\n")
		if text != "" {
			text += "\n"
		}
		text += ReasonPrefix + end
	}
	return strings.TrimRight(text, "\n")
}

// endLine says how a command ended, for a card without an exit pill: the
// result's reason when it did not run normally, else its signal or exit
// code; "" when the result says none of these.
func endLine(res tools.ResultIntent) string {
	switch {
	case res.Reason != "":
		return res.Reason
	case res.Signal != "":
		return "killed by " + res.Signal
	case res.ExitCode != nil:
		return "exit " + strconv.Itoa(*res.ExitCode)
	}
	return ""
}

// boundTail keeps the end of text: at most maxLines lines (0: any number)
// and maxBytes bytes, starting at a line start when a line is cut (or at a
// character start when one line is longer than maxBytes). cut is the bytes
// left out.
func boundTail(text string, maxLines, maxBytes int) (kept string, cut int) {
	start := 0
	if len(text) > maxBytes {
		start = len(text) - maxBytes
		if i := strings.IndexByte(text[start:], '\n'); i >= 0 && start+i+1 < len(text) {
			start += i + 1
		} else {
			for start < len(text) && !utf8.RuneStart(text[start]) {
				start++
			}
		}
	}
	if maxLines > 0 {
		body := strings.TrimRight(text[start:], "\n")
		n := 0
		for i := len(body) - 1; i >= 0; i-- {
			if body[i] == '\n' {
				if n++; n == maxLines {
					start += i + 1
					break
				}
			}
		}
	}
	return text[start:], start
}

// withCutNote puts a line saying how many bytes were left out above body.
func withCutNote(body string, cut int64) string {
	if cut <= 0 {
		return body
	}
	return fmt.Sprintf("[… %d bytes above not shown]\n", cut) + body
}
