package acp

import (
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/replay"
)

// titler announces a session's title with session_info_update as soon as
// its first prompt arrives, before that turn's reply: replay.Title of the
// prompt, the title session/list shows for the session. A reopened session
// announces the title it already has (see announce) and never changes it.
type titler struct {
	send func(sdk.SessionUpdate)
	done atomic.Bool // a title was announced, or the session has one
}

// Emit announces the title on the session's first UserPrompt.
func (t *titler) Emit(ev event.Event) {
	if p, ok := ev.(event.UserPrompt); ok && !t.done.Load() {
		t.announce(p.Text)
	}
}

// announce settles the title on the session's first prompt, once, and
// sends it unless it is empty (a blank prompt: session/list shows none
// either).
func (t *titler) announce(firstPrompt string) {
	if t.done.Swap(true) {
		return
	}
	if title := replay.Title(firstPrompt); title != "" {
		t.send(sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{Title: sdk.Ptr(title)}})
	}
}
