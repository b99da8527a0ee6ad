package permission

import (
	"fmt"
	"slices"
	"strings"
)

// Decide judges a bash command for a tool call.
//
// Deny rules come first, in every mode: a rule that matches any command the
// line contains (inside substitutions, sh -c and eval scripts, xargs and
// find -exec targets, sudo targets…) denies the whole line. A rule that
// might match because some words are only known at run time denies in auto
// and read-only mode and asks in ask mode. Then:
//
//   - ModeAsk: allowed when every contained command is read-only or covered
//     by an allow rule or a sessionAllow prefix, no redirection writes a
//     file, and the line can be judged; otherwise Ask. Verdict.Prefixes
//     offers always-allow only when every command that needs asking has the
//     same prefix (see prefixOf) and the line can be judged.
//   - ModeAuto: allowed, except that a line that cannot be judged is denied
//     when there are deny rules (it cannot be checked against them).
//   - ModeReadOnly: allowed only when Analyze proves the line read-only;
//     allow rules do not widen it.
//
// An unknown mode is treated as ModeAsk. Rules that do not parse still
// count (see compileRules). Decide is pure and safe for concurrent use.
func Decide(mode Mode, rules Rules, sessionAllow []string, command string) Verdict {
	an := analyze(command)
	deny := compileRules(rules.Deny)
	maybe, denied := checkDeny(an, deny)
	if denied != nil {
		return *denied
	}
	switch mode {
	case ModeAuto:
		return decideAuto(an, len(deny) > 0, maybe)
	case ModeReadOnly:
		return decideReadOnly(an, maybe)
	default:
		allow := compileRules(append(slices.Clip(rules.Allow), sessionAllow...))
		return decideAsk(an, allow, maybe)
	}
}

// checkDeny matches the deny rules against every command and wrapper. It
// returns the denial for the first command a rule matches, or, per item,
// the first rule that might match it.
func checkDeny(an *analysis, deny []rule) (maybe []*rule, denied *Verdict) {
	maybe = make([]*rule, len(an.items))
	if len(deny) == 0 {
		return maybe, nil
	}
	for i, it := range an.items {
		if it.kind == kindEffect {
			continue
		}
		scripts := embeddedScripts(it)
		for _, r := range deny {
			m := r.denies(it)
			if m != matches {
				m = max(m, r.deniesEmbedded(it, scripts))
			}
			switch {
			case m == matches:
				return nil, &Verdict{Decision: Deny,
					Reason: fmt.Sprintf("denied: %s matches the deny rule %q", it.display(), r.text)}
			case m == mayMatch && maybe[i] == nil:
				maybe[i] = &r
			}
		}
	}
	return maybe, nil
}

// mightDeny is the reason for a deny rule that may match.
func mightDeny(an *analysis, maybe []*rule) (string, bool) {
	for i, r := range maybe {
		if r != nil {
			return fmt.Sprintf("%s might match the deny rule %q (some of its words are only known at run time)",
				an.items[i].display(), r.text), true
		}
	}
	return "", false
}

func decideAuto(an *analysis, haveDeny bool, maybe []*rule) Verdict {
	if why, ok := mightDeny(an, maybe); ok {
		return Verdict{Decision: Deny, Reason: "denied: " + why + "; write those words out literally, or put -- before operands"}
	}
	if haveDeny && len(an.cannot.list) > 0 {
		return Verdict{Decision: Deny,
			Reason: "denied: the command cannot be checked against the deny rules: " + an.cannot.list[0]}
	}
	return Verdict{Decision: Allow, Reason: "auto mode"}
}

func decideReadOnly(an *analysis, maybe []*rule) Verdict {
	if why, ok := mightDeny(an, maybe); ok {
		return Verdict{Decision: Deny, Reason: "denied: " + why}
	}
	if len(an.cannot.list) > 0 {
		return Verdict{Decision: Deny,
			Reason: "denied in read-only mode: cannot tell whether the command is read-only: " + an.cannot.list[0]}
	}
	for _, it := range an.items {
		if !it.readOnly {
			return Verdict{Decision: Deny,
				Reason: "denied in read-only mode, which runs only read-only commands: " + it.display() + ": " + it.why}
		}
	}
	return Verdict{Decision: Allow, Reason: "read-only"}
}

func decideAsk(an *analysis, allow []rule, maybe []*rule) Verdict {
	var (
		whys   []string
		used   uniq
		prefix string // the one prefix always-allow would remember
		offer  = len(an.cannot.list) == 0
		assign bool // an assignment was accepted as benign
	)
	for i, it := range an.items {
		if r := maybe[i]; r != nil {
			whys = append(whys, fmt.Sprintf("%s might match the deny rule %q", it.display(), r.text))
			offer = false
			continue
		}
		if it.kind == kindWrapper || it.readOnly {
			continue
		}
		if it.kind == kindEffect && it.benign {
			assign = true
			continue
		}
		if it.kind == kindCommand {
			if r, ok := allowedBy(it, allow); ok {
				used.add(fmt.Sprintf("%q", r.text))
				continue
			}
		}
		whys = append(whys, it.display()+": "+it.why)
		switch p := prefixOf(it); {
		case p == "" || prefix != "" && p != prefix:
			offer = false
		default:
			prefix = p
		}
	}
	if len(an.cannot.list) > 0 {
		return Verdict{Decision: Ask, Reason: "cannot judge: " + summarize(append(slices.Clip(an.cannot.list), whys...))}
	}
	if len(whys) == 0 {
		switch {
		case len(used.list) > 0:
			return Verdict{Decision: Allow, Reason: "allowed by rule " + summarize(used.list)}
		case assign:
			return Verdict{Decision: Allow, Reason: "read-only, with assignments to ordinary variables"}
		}
		return Verdict{Decision: Allow, Reason: "read-only"}
	}
	v := Verdict{Decision: Ask, Reason: summarize(whys)}
	if offer {
		v.Prefixes = []string{prefix}
	}
	return v
}

// allowedBy returns the allow rule covering a command, if any. A command
// given a sensitive assignment (PATH=…, LD_PRELOAD=…) is never covered.
func allowedBy(it item, allow []rule) (rule, bool) {
	if len(it.sensitive) > 0 {
		return rule{}, false
	}
	for _, r := range allow {
		if r.allows(it) {
			return r, true
		}
	}
	return rule{}, false
}

// summarize joins reasons for one line, keeping the first three.
func summarize(whys []string) string {
	const keep = 3
	if len(whys) > keep {
		return strings.Join(whys[:keep], "; ") + fmt.Sprintf("; and %d more", len(whys)-keep)
	}
	return strings.Join(whys, "; ")
}
