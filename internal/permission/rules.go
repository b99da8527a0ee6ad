package permission

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ErrInvalidRule reports a rule that is not a plain command prefix: empty,
// not literal words, or more than one command. SaveProjectAllow also
// returns it for a prefix broader than program + subcommand.
var ErrInvalidRule = errors.New("invalid permission rule")

// Rules are allow and deny lists of command prefixes, written as shell
// words ("git status", "rm -rf", "npm run build"). Deny always wins.
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// NormalizeRule checks a rule and returns it in canonical form (words
// re-quoted and single-spaced, git's and go's global options removed:
// "git  --no-pager log" → "git log").
func NormalizeRule(s string) (string, error) {
	ws, err := parseRule(s)
	if err != nil {
		return "", err
	}
	return joinRule(ws), nil
}

// parseRule reads a rule as the literal words of one simple command.
func parseRule(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidRule)
	}
	f, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidRule, s, err)
	}
	if len(f.Stmts) != 1 {
		return nil, fmt.Errorf("%w %q: want one command", ErrInvalidRule, s)
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 || len(st.Redirs) > 0 ||
		st.Negated || st.Background || st.Coprocess || st.Disown {
		return nil, fmt.Errorf("%w %q: want plain words", ErrInvalidRule, s)
	}
	words := convertWords(call.Args)
	if words[0].lit && words[0].text == "" {
		return nil, fmt.Errorf("%w %q: empty program name", ErrInvalidRule, s)
	}
	for _, w := range words {
		if !w.lit {
			return nil, fmt.Errorf("%w %q: %s is not a literal word", ErrInvalidRule, s, w.text)
		}
	}
	if c, ok := canonical(words); ok {
		words = c
	}
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w.text
	}
	return out, nil
}

// rule is a parsed rule.
type rule struct {
	text  string
	words []string // program first
}

// compileRules parses rules for matching. A rule that does not parse is
// split on white space instead: a hand-built deny rule must still deny. An
// empty rule is dropped (it would match everything).
func compileRules(list []string) []rule {
	out := make([]rule, 0, len(list))
	for _, s := range list {
		ws, err := parseRule(s)
		if err != nil {
			ws = strings.Fields(s)
		}
		if len(ws) > 0 {
			out = append(out, rule{text: s, words: ws})
		}
	}
	return out
}

// allows reports whether the rule is a word prefix of the command: the
// command's first words (after git's and go's global options) equal the
// rule's words exactly, and are literal. "git status" allows
// "git status -s" but not "git statusx" nor "/usr/bin/git status".
func (r rule) allows(it item) bool {
	words, _ := canonical(it.words)
	if len(r.words) > len(words) {
		return false
	}
	for i, rw := range r.words {
		if !words[i].lit || words[i].text != rw {
			return false
		}
	}
	return true
}

// match is the outcome of matching a deny rule.
type match uint8

const (
	noMatch  match = iota
	mayMatch       // words only known at run time could make it match
	matches
)

// denies matches a deny rule generously, so that reordering or splitting
// words does not slip past it:
//   - the program matches by base name (rm matches /bin/rm);
//   - the rule's other non-option words must appear in the command in that
//     order, not necessarily adjacent (git push matches git -C dir push);
//     for tools with subcommands (git, go, docker, npm, …) whose first
//     argument is a literal subcommand, the rule's first such word must be
//     that subcommand (git push does not match git stash push);
//   - each option of the rule must appear anywhere: a long option exactly
//     or with "=value", a short cluster letter by letter across the
//     command's clusters (-rf matches -fr and -r -f, not -R).
//
// A word only known at run time counts as a wildcard: if enough of them
// could supply what is missing, the result is mayMatch. After "--" such a
// word cannot be an option.
func (r rule) denies(it item) match {
	if len(it.words) == 0 || !it.words[0].lit || !sameProgram(r.words[0], it.words[0].text) {
		return noMatch
	}
	need := r.words[1:]
	if len(need) == 0 {
		return matches
	}
	args, ok := canonical(it.words)
	args = args[1:]
	var pos, flags []string
	for _, w := range need {
		if len(w) > 1 && w[0] == '-' {
			flags = append(flags, w)
		} else {
			pos = append(pos, w)
		}
	}
	// Words only known at run time are wildcards: any of them can supply a
	// missing operand, and one that may begin with '-' (before a "--") a
	// missing option; one that may split into several words, or xargs
	// input, can supply any number of them.
	wildPos, wildFlag := 0, 0
	manyPos, manyFlag := it.open, false
	var litPos []string
	options := true
	for _, a := range args {
		switch {
		case a.lit && a.text == "--":
			options = false
		case !a.lit:
			wildPos++
			manyPos = manyPos || a.multi
			if options && a.flagish() {
				wildFlag++
				manyFlag = manyFlag || a.multi
			}
		case !a.isFlag():
			litPos = append(litPos, a.text)
		}
	}
	manyFlag = manyFlag || it.open && options // xargs appends its input at the end
	if ok && len(pos) > 0 && len(args) > 0 && args[0].lit && !args[0].isFlag() && hasSubcommands(programName(it.words[0].text)) {
		if args[0].text != pos[0] {
			return noMatch
		}
		pos, litPos = pos[1:], litPos[1:]
	}
	missingPos := missingInOrder(pos, litPos)
	missingFlags := 0
	for _, f := range flags {
		if !hasFlag(args, f) {
			missingFlags++
		}
	}
	switch {
	case missingPos+missingFlags == 0:
		return matches
	case (manyPos || missingPos+missingFlags <= wildPos) && (manyFlag || missingFlags <= wildFlag):
		return mayMatch
	}
	return noMatch
}

const (
	// maxEmbedded bounds the embedded commands tried per command.
	maxEmbedded = 8
	// maxEmbeddedScript bounds the size of an argument parsed as a
	// command line.
	maxEmbeddedScript = 4096
)

// runsArguments reports whether a command's arguments may be commands it
// runs (watch rm -rf /, ssh host 'rm -rf /', docker exec c rm -rf /).
// Arguments of a command judged read-only are data (echo rm -rf, grep rm)
// and git's are its own (git rm -rf).
func runsArguments(it item) bool {
	if it.kind == kindEffect || it.readOnly || len(it.words) < 2 || !it.words[0].lit {
		return false
	}
	return programName(it.words[0].text) != "git"
}

// embeddedScripts returns the commands of the literal arguments that are
// command lines themselves (ssh host 'cd x && rm -rf y'), when the
// command's arguments may be run.
func embeddedScripts(it item) []item {
	if !runsArguments(it) {
		return nil
	}
	var out []item
	tried := 0
	for _, w := range it.words[1:] {
		if !w.lit || !strings.ContainsAny(w.text, " \t\n") || len(w.text) > maxEmbeddedScript {
			continue
		}
		if tried++; tried > maxEmbedded {
			break
		}
		for _, sub := range analyze(w.text).items {
			if sub.kind != kindEffect {
				out = append(out, sub)
			}
		}
	}
	return out
}

// deniesEmbedded matches the rule against the commands embedded in a
// command's arguments: from each literal word naming the rule's program,
// and the commands of scripts (see embeddedScripts).
func (r rule) deniesEmbedded(it item, scripts []item) match {
	best := noMatch
	for _, sub := range scripts {
		best = max(best, r.denies(sub))
	}
	if !runsArguments(it) {
		return best
	}
	tried := 0
	for k := 1; k < len(it.words) && tried < maxEmbedded && best != matches; k++ {
		if w := it.words[k]; w.lit && sameProgram(r.words[0], w.text) {
			tried++
			best = max(best, r.denies(item{kind: kindCommand, words: it.words[k:], open: it.open}))
		}
	}
	return best
}

// sameProgram compares a rule's program with a command's: by base name,
// unless the rule names a path.
func sameProgram(ruleProg, cmdProg string) bool {
	if ruleProg == cmdProg {
		return true
	}
	return !strings.Contains(ruleProg, "/") && strings.Contains(cmdProg, "/") && ruleProg == path.Base(cmdProg)
}

// missingInOrder counts the words of want not found, in order, in have.
func missingInOrder(want, have []string) int {
	missing, j := 0, 0
	for _, w := range want {
		k := j
		for k < len(have) && have[k] != w {
			k++
		}
		if k == len(have) {
			missing++
			continue
		}
		j = k + 1
	}
	return missing
}

// hasFlag reports whether the literal arguments carry the option f.
func hasFlag(args []word, f string) bool {
	if strings.HasPrefix(f, "--") {
		for _, a := range args {
			if a.lit && (a.text == f || strings.HasPrefix(a.text, f+"=")) {
				return true
			}
		}
		return false
	}
	for _, a := range args {
		if a.lit && a.text == f {
			return true
		}
	}
	for _, c := range f[1:] {
		found := false
		for _, a := range args {
			if a.isFlag() && !strings.HasPrefix(a.text, "--") && strings.ContainsRune(a.text[1:], c) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
