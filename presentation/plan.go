package presentation

import (
	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// The session's plan (ACP `plan` updates: the task list a client shows
// above its message box) follows the results that set one
// (tools.ResultIntent.Plan, todo_write's): each such result sends the whole
// list, as ACP asks, right after its card's final update. The standing
// plan clears when the next turn starts (event.UserPrompt: a model turn or
// a `!` command; a slash command leaves it), dsh's rule: a plan belongs to
// the request it was made for, and a model that goes on with it writes it
// again. The same events draw the same plans on session/load, so a reload
// ends showing the plan the live session showed.
//
// A presenter starts with no plan shown. The live presenter of a session
// reopened by session/load or session/resume does not know what the client
// shows (the load's replay drew a plan through another presenter; a resumed
// thread may show one from before): PlanMayStand says so, and its first
// turn then clears the plan whatever it saw.
//
// Every entry's priority is medium: dsh's todos have none, and deriving
// one from the status would only repeat the status in a field clients
// sort or colour by.

// PlanUpdate is the `plan` update showing entries, all of them (a client
// replaces its whole plan); no entries clears the plan (an empty list,
// never null).
func PlanUpdate(entries []tools.PlanEntry) acp.SessionUpdate {
	out := make([]acp.PlanEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, acp.PlanEntry{Content: e.Content, Priority: acp.PlanEntryPriorityMedium, Status: planStatus(e.Status)})
	}
	return acp.SessionUpdate{Plan: &acp.SessionUpdatePlan{Entries: out}}
}

// planStatus maps a todo status to ACP's; an unknown one (a journal from
// another version) is pending.
func planStatus(s string) acp.PlanEntryStatus {
	switch st := acp.PlanEntryStatus(s); st {
	case acp.PlanEntryStatusInProgress, acp.PlanEntryStatusCompleted:
		return st
	}
	return acp.PlanEntryStatusPending
}

// planState is what the presenter knows of the client's plan.
type planState uint8

const (
	planNone planState = iota
	planUnknown
	planShown
)

// PlanMayStand tells the presenter that the client may show a plan it did
// not send (the session was reopened: see above), so the next turn clears
// it.
func (p *Presenter) PlanMayStand() {
	p.mu.Lock()
	if p.plan == planNone {
		p.plan = planUnknown
	}
	p.mu.Unlock()
}

// setPlan sends plan when a result set one, and remembers whether a plan
// now stands.
func (p *Presenter) setPlan(plan *tools.Plan) {
	if plan == nil {
		return
	}
	p.mu.Lock()
	p.plan = planNone
	if len(plan.Entries) > 0 {
		p.plan = planShown
	}
	p.mu.Unlock()
	p.opt.Send(PlanUpdate(plan.Entries))
}

// clearPlan clears a plan that stands or may stand: a new turn started.
func (p *Presenter) clearPlan() {
	p.mu.Lock()
	was := p.plan
	p.plan = planNone
	p.mu.Unlock()
	if was != planNone {
		p.opt.Send(PlanUpdate(nil))
	}
}
