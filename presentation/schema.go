package presentation

// Session updates newer than the Go SDK (v0.13): the one definition of each
// wire shape, written by UpdateWriter.Extension and held to the ACP schema
// of late 2026 by TestExtensionShapesMatchTheSchema (testdata/schema_*.json).
// A client receives them only when it opted in at initialize
// (SessionCapsFrom); otherwise the same fact is drawn as today's text.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Notice severities.
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Notice is the notice update: an out-of-turn fact (an MCP server that did
// not start, history not being saved).
type Notice struct {
	SessionUpdate string `json:"sessionUpdate"` // "notice"
	Severity      string `json:"severity"`      // info, warning or error
	Title         string `json:"title"`
	Description   string `json:"description,omitempty"`
}

// NewNotice is a notice of severity with title and description.
func NewNotice(severity, title, description string) Notice {
	return Notice{SessionUpdate: "notice", Severity: severity, Title: title, Description: description}
}

// Text is the notice as today's agent message text, for a client that did
// not opt in.
func (n Notice) Text() string {
	if n.Description == "" {
		return fmt.Sprintf("\n[%s]\n", n.Title)
	}
	return fmt.Sprintf("\n[%s: %s]\n", n.Title, n.Description)
}

// TextBlock is a text content block.
type TextBlock struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

// CompactionUpdate is the compaction_update update: the history was made
// shorter; Summary says how (and holds the model's summary, when made).
type CompactionUpdate struct {
	SessionUpdate string      `json:"sessionUpdate"` // "compaction_update"
	CompactionID  string      `json:"compactionId"`
	Status        string      `json:"status"` // "completed": a compaction is drawn once done
	Summary       []TextBlock `json:"summary"`
}

// NewCompactionUpdate is the completed compaction entry of c.
func NewCompactionUpdate(c event.Compaction) CompactionUpdate {
	summary := []TextBlock{{Type: "text", Text: c.Note}}
	if c.Summary != "" && !c.Dropped {
		summary = append(summary, TextBlock{Type: "text", Text: c.Summary})
	}
	return CompactionUpdate{SessionUpdate: "compaction_update", CompactionID: CompactionID(c), Status: "completed", Summary: summary}
}

// CompactionID is c's id: a digest of what the compaction recorded, so the
// live entry and its replay from the journal (the same event, decoded) get
// the same id without a field in the event or the journal. Two compactions
// of one session that recorded exactly the same figures, reason and texts
// would share it.
func CompactionID(c event.Compaction) string {
	b, _ := json.Marshal(struct {
		Reason, Note, Summary                           string
		Before, After, Size, ElideBefore, SummaryBefore int
	}{c.Reason, c.Note, c.Summary, c.Before, c.After, c.Size, c.ElideBefore, c.SummaryBefore})
	sum := sha256.Sum256(b)
	return "compaction-" + hex.EncodeToString(sum[:8])
}

// SessionCaps are the session update kinds the client opted in to, read
// from the raw initialize params (SDK v0.13 has no field for them).
type SessionCaps struct {
	Notices    bool // clientCapabilities.session.notices = {}
	Compaction bool // clientCapabilities.session.compaction = {}
}

// SessionCapsFrom reads SessionCaps from initialize's raw params: each
// capability is on when its key holds a JSON object.
func SessionCapsFrom(params json.RawMessage) SessionCaps {
	var p struct {
		ClientCapabilities struct {
			Session struct {
				Notices    json.RawMessage `json:"notices"`
				Compaction json.RawMessage `json:"compaction"`
			} `json:"session"`
		} `json:"clientCapabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return SessionCaps{}
	}
	s := p.ClientCapabilities.Session
	return SessionCaps{Notices: isObject(s.Notices), Compaction: isObject(s.Compaction)}
}

func isObject(v json.RawMessage) bool {
	var m map[string]any
	return len(v) > 0 && json.Unmarshal(v, &m) == nil && m != nil
}
