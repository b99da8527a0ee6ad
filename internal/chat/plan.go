package chat

import (
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// planMark is the checklist mark of a plan entry's status. (A switch, not
// a package-level map: the daemon, the same binary, would build the map at
// every start.)
func planMark(s sdk.PlanEntryStatus) string {
	switch s {
	case sdk.PlanEntryStatusCompleted:
		return "✓"
	case sdk.PlanEntryStatusInProgress:
		return "▸"
	case sdk.PlanEntryStatusPending:
		return "·"
	}
	return "?"
}

// drawPlan replaces the plan: kept for Plan when the terminal shows it
// live, else printed as a checklist (an empty plan prints nothing).
func (r *Renderer) drawPlan(entries []sdk.PlanEntry) {
	r.plan = append([]sdk.PlanEntry(nil), entries...)
	if r.livePlan || len(entries) == 0 {
		return
	}
	r.enter("plan")
	for _, l := range r.planLines() {
		r.line(l, "    ")
	}
}

// Plan is the standing plan as checklist lines (none when there is no
// plan): "Plan" and one line per entry, ✓ completed, ▸ in progress,
// · pending.
func (r *Renderer) Plan() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.planLines()
}

func (r *Renderer) planLines() []string {
	if len(r.plan) == 0 {
		return nil
	}
	lines := []string{r.st.bold + "Plan" + r.st.reset}
	for _, e := range r.plan {
		mark := planMark(e.Status)
		text := tools.CleanTerminalText(strings.ReplaceAll(e.Content, "\n", " "))
		switch e.Status {
		case sdk.PlanEntryStatusCompleted:
			lines = append(lines, "  "+r.st.green+mark+r.st.reset+" "+r.st.dim+text+r.st.reset)
		case sdk.PlanEntryStatusInProgress:
			lines = append(lines, "  "+r.st.yellow+mark+" "+r.st.bold+text+r.st.reset)
		default:
			lines = append(lines, "  "+mark+" "+text)
		}
	}
	return lines
}
