package permission

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Request is one command for Judge.
type Request struct {
	Mode  Mode
	Rules Rules
	// SessionAllow are the prefixes the user allowed for the session
	// ("always allow"); they act as allow rules.
	SessionAllow []string
	Command      string
	// Background is set for a command that runs as a background task
	// (the bash tool's run_in_background), which has no timeout: it runs
	// unasked only when the judge knows it ends (see Verdict.Ends).
	Background bool
	// Stat, when set, reports the type of a file a background command
	// reads (os.Stat with relative paths resolved against the command's
	// working directory, see StatIn). A named pipe, socket or device makes
	// the command not known to end. Nil: no file is looked at.
	Stat func(path string) (fs.FileMode, error)
}

// Decide judges a bash command run in the foreground; it is Judge with
// a Request of these fields.
func Decide(mode Mode, rules Rules, sessionAllow []string, command string) Verdict {
	return Judge(Request{Mode: mode, Rules: rules, SessionAllow: sessionAllow, Command: command})
}

// Judge judges a bash command for a tool call.
//
// Deny rules come first, in every mode: a rule that matches any command the
// line contains (inside substitutions, sh -c and eval scripts, xargs and
// find -exec targets, sudo targets…) denies the whole line. A rule that
// might match because some words are only known at run time denies in auto
// and read-only mode and asks in ask mode. Then:
//
//   - ModeAsk: allowed when every contained command is read-only or covered
//     by an allow rule or a SessionAllow prefix, every shell feature is
//     known to be harmless, no redirection writes a file, and the line can
//     be judged; otherwise Ask. Verdict.Prefixes offers always-allow only
//     when every command that needs asking has the same prefix (see
//     prefixOf) and the line can be judged. A Background command that is
//     not known to end asks unless allow rules, not read-only-ness, let it
//     run.
//   - ModeAuto: allowed, except that a line that cannot be judged is denied
//     when there are deny rules (it cannot be checked against them).
//   - ModeReadOnly: allowed only when Analyze proves the line read-only
//     (and, for a Background command, known to end); allow rules do not
//     widen it.
//
// Verdict.Ends reports whether the line is known to end. An unknown mode is
// treated as ModeAsk. Rules that do not parse still count (see
// compileRules). Judge is pure except for the calls of Request.Stat, and
// safe for concurrent use.
func Judge(r Request) Verdict {
	an := analyze(r.Command)
	ends, endWhy := an.ends(r)
	v := judge(r, an, ends, endWhy)
	v.Ends = ends
	return v
}

func judge(r Request, an *analysis, ends bool, endWhy string) Verdict {
	deny := compileRules(r.Rules.Deny)
	maybe, denied := checkDeny(an, deny)
	if denied != nil {
		return *denied
	}
	bg := r.Background && !ends
	switch r.Mode {
	case ModeAuto:
		return askForRepository(an, decideAuto(an, len(deny) > 0, maybe))
	case ModeReadOnly:
		v := decideReadOnly(an, maybe)
		if v.Decision == Allow && bg {
			return Verdict{Decision: Deny, Reason: "denied in read-only mode: a background task must be known to end, and " + endWhy}
		}
		return v
	default:
		allow := compileRules(append(slices.Clip(r.Rules.Allow), r.SessionAllow...))
		v := decideAsk(an, allow, maybe, bg, endWhy)
		v.CreatesRepository = an.createsRepository()
		return v
	}
}

// ends reports whether the line is known to end, and why not.
func (an *analysis) ends(r Request) (bool, string) {
	if len(an.cannot.list) > 0 {
		return false, "the command cannot be judged"
	}
	if len(an.forever.list) > 0 {
		return false, an.forever.list[0]
	}
	for _, it := range an.items {
		if it.kind == kindCommand && it.forever != "" {
			return false, it.display() + ": " + it.forever
		}
	}
	if r.Background && r.Stat != nil {
		for _, it := range an.items {
			if it.kind == kindCommand && it.readOnly {
				if why := endlessFile(r.Stat, it.operands); why != "" {
					return false, it.display() + ": " + why
				}
			}
		}
		if why := endlessFile(r.Stat, an.inputs); why != "" {
			return false, why
		}
	}
	return true, ""
}

// endlessFile names the first path that is a named pipe, socket or
// device other than /dev/null, whose reading may never end.
func endlessFile(stat func(string) (fs.FileMode, error), paths []string) string {
	for _, p := range paths {
		if p == "/dev/null" || p == "-" {
			continue
		}
		m, err := stat(p)
		if err == nil && m&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			return "reads " + p + ", which is not a regular file and may never end"
		}
	}
	return ""
}

// StatIn is a Request.Stat for commands run in dir: os.Stat, with
// relative paths taken from dir.
func StatIn(dir string) func(string) (fs.FileMode, error) {
	return func(p string) (fs.FileMode, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		fi, err := os.Stat(p)
		if err != nil {
			return 0, err
		}
		return fi.Mode(), nil
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

func decideAsk(an *analysis, allow []rule, maybe []*rule, bg bool, endWhy string) Verdict {
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
		if it.kind == kindWrapper || it.readOnly && (!bg || it.forever == "") {
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
	if bg && len(whys) == 0 && len(used.list) == 0 {
		whys = append(whys, "a background task has no timeout, and "+endWhy)
		offer = false
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
