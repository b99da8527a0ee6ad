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

// setPlan sends plan when a result set one, and remembers whether a plan
// now stands.
func (p *Presenter) setPlan(plan *tools.Plan) {
	if plan == nil {
		return
	}
	p.mu.Lock()
	p.planShown = len(plan.Entries) > 0
	p.mu.Unlock()
	p.opt.Send(PlanUpdate(plan.Entries))
}

// clearPlan clears a standing plan: a new turn started.
func (p *Presenter) clearPlan() {
	p.mu.Lock()
	shown := p.planShown
	p.planShown = false
	p.mu.Unlock()
	if shown {
		p.opt.Send(PlanUpdate(nil))
	}
}
