package permission

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

const (
	// maxCommandBytes bounds the input Analyze parses; longer commands
	// cannot be judged.
	maxCommandBytes = 1 << 20
	// maxDepth bounds the nesting of scripts parsed out of `sh -c`, eval
	// and trap.
	maxDepth = 8
)

// Analysis is what the shell parser can tell about a command.
type Analysis struct {
	// Commands holds every simple command the command line would run, in
	// source order, each as its words after stripping assignments and
	// transparent wrappers (env, timeout, nice, time, nohup, stdbuf,
	// ionice, command, builtin, exec, xargs, sh -c, calls of the script's
	// functions). The commands of substitutions, function bodies, the
	// scripts of `sh -c`, `bash <<'EOF'`, eval, trap and alias, and
	// `find -exec` targets are included; both `sudo X` and X are listed.
	// Literal words appear unquoted; a word only known at run time appears
	// as its shell source (e.g. "$HOME/x").
	Commands [][]string
	// ReadOnly reports that the parser proved the whole command line
	// read-only: every command is on the read-only list with harmless
	// arguments and no redirection writes a file.
	ReadOnly bool
	// Judgeable is false when something that decides what runs is only
	// known at run time (a command name like $CMD, the script of
	// `sh -c "$X"`) or when the input does not parse.
	Judgeable bool
	// Reasons says, one line each, what keeps the command from being
	// read-only or judgeable. Empty when ReadOnly.
	Reasons []string
}

// Analyze parses command and classifies every command it contains. It
// never fails: input it cannot parse yields Judgeable false.
func Analyze(command string) Analysis {
	an := analyze(command)
	out := Analysis{Judgeable: len(an.cannot.list) == 0}
	reasons := uniq{}
	for _, c := range an.cannot.list {
		reasons.add(c)
	}
	ro := out.Judgeable
	for _, it := range an.items {
		if it.kind == kindCommand {
			words := make([]string, len(it.words))
			for i, w := range it.words {
				words[i] = w.text
			}
			out.Commands = append(out.Commands, words)
		}
		if !it.readOnly {
			ro = false
			reasons.add(it.display() + ": " + it.why)
		}
	}
	out.ReadOnly, out.Reasons = ro, reasons.list
	return out
}

// itemKind says how an item takes part in a decision.
type itemKind uint8

const (
	// kindCommand is a simple command that runs.
	kindCommand itemKind = iota
	// kindWrapper is a transparent wrapper (env, timeout, xargs, sh -c, a
	// call of a function defined in the script…): what it runs is judged
	// as items of its own, so only deny rules look at the wrapper itself.
	kindWrapper
	// kindEffect is a redirection or an assignment with effects of its own.
	kindEffect
)

// item is one thing a command line does.
type item struct {
	kind  itemKind
	words []word // kindCommand, kindWrapper: program first
	src   string // kindEffect: the source shown to the user
	// readOnly reports that the item was proven read-only; why says why
	// not otherwise.
	readOnly bool
	why      string
	// benign marks an effect that ask and auto mode accept without a rule
	// although it is not read-only (an assignment to an ordinary
	// variable).
	benign bool
	// sensitive lists assignments on a command that can change which code
	// runs (PATH, LD_PRELOAD, GIT_*…): no allow rule covers such a command.
	sensitive []string
	// open marks a command that receives more arguments at run time
	// (an xargs target).
	open bool
}

func (it item) display() string {
	if it.kind == kindEffect {
		return it.src
	}
	return displayWords(it.words)
}

// analysis is the internal result: the items and what could not be judged.
type analysis struct {
	items  []item
	cannot uniq // why parts of the command cannot be judged
}

func (an *analysis) add(it item) { an.items = append(an.items, it) }

func (an *analysis) cannotJudge(format string, args ...any) {
	an.cannot.add(fmt.Sprintf(format, args...))
}

func analyze(command string) *analysis {
	an := &analysis{}
	if len(command) > maxCommandBytes {
		an.cannotJudge("command is too long to judge (%d bytes)", len(command))
		return an
	}
	(&analyzer{an: an}).script(command, "", nil)
	return an
}

// analyzer walks one parsed script.
type analyzer struct {
	an    *analysis
	depth int
	// funcs maps the functions defined by the script's top-level
	// statements to the index of the first defining statement (-1: defined
	// before the script runs, by the shell running eval or a trap).
	funcs map[string]int
	top   int     // index of the top-level statement being walked
	env   envInfo // assignments the script's runner was given (FOO=1 sh -c …)
	// stdin is the literal here-document or here-string of the statement
	// whose command is about to be judged (bash <<'EOF' … EOF).
	stdin *word
}

// script parses src (the script of what, "" for the command line itself)
// and walks it. inherit are functions already defined in the shell that
// runs it (eval and trap run in the enclosing shell; sh -c starts a new
// one).
func (a *analyzer) script(src, what string, inherit []string) {
	if a.depth > maxDepth {
		a.an.cannotJudge("%s: scripts nested too deeply", what)
		return
	}
	f, err := parse(src)
	if err != nil {
		if what == "" {
			a.an.cannotJudge("cannot parse: %v", err)
		} else {
			a.an.cannotJudge("cannot parse the script of %s: %v", what, err)
		}
		return
	}
	sub := &analyzer{an: a.an, depth: a.depth + 1, funcs: functions(f, inherit), env: a.env}
	for i, st := range f.Stmts {
		sub.top = i
		syntax.Walk(st, sub.visit)
	}
}

// defined lists the functions a call in the current statement may reach.
func (a *analyzer) defined() []string {
	var out []string
	for name, at := range a.funcs {
		if at < a.top {
			out = append(out, name)
		}
	}
	return out
}

// isFunction reports whether a call of name in the current statement runs
// a function of the script: one defined by an earlier top-level statement.
// A definition nested in a branch, a loop or a subshell, or one that comes
// later, may not be in effect, so the call is judged as the program of
// that name.
func (a *analyzer) isFunction(name string) bool {
	at, ok := a.funcs[name]
	return ok && at < a.top
}

// parse parses bash source. A panic in the parser becomes an error, so
// hostile input cannot crash the caller.
func parse(src string) (f *syntax.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("parser failed: %v", r)
		}
	}()
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}

// functions maps the functions defined by f's top-level statements to the
// index of the first one defining each; inherited ones map to -1.
func functions(f *syntax.File, inherit []string) map[string]int {
	out := make(map[string]int, len(inherit))
	for _, name := range inherit {
		out[name] = -1
	}
	for i, st := range f.Stmts {
		fd, ok := st.Cmd.(*syntax.FuncDecl)
		if !ok || fd.Name == nil {
			continue
		}
		if _, seen := out[fd.Name.Value]; !seen {
			out[fd.Name.Value] = i
		}
	}
	return out
}

// visit is the syntax.Walk callback. Walk reaches every nested statement —
// in substitutions, here-documents, loops, function bodies — so each
// CallExpr is seen exactly once.
func (a *analyzer) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		a.stdin = nil
		if _, ok := n.Cmd.(*syntax.CallExpr); ok {
			a.stdin = hereInput(n.Redirs)
		}
		for _, r := range n.Redirs {
			a.redirect(r)
		}
	case *syntax.CallExpr:
		a.call(n)
	case *syntax.DeclClause:
		a.decl(n)
	case *syntax.ForClause:
		if wi, ok := n.Loop.(*syntax.WordIter); ok && wi.Name != nil {
			a.assignName(wi.Name.Value, "for "+wi.Name.Value)
		}
	}
	return true
}

func (a *analyzer) call(c *syntax.CallExpr) {
	if len(c.Args) == 0 {
		for _, as := range c.Assigns {
			if as.Name != nil {
				a.assignName(as.Name.Value, nodeSource(as))
			}
		}
		return
	}
	stdin := a.stdin
	a.stdin = nil
	a.command(convertWords(c.Args), a.env.merge(envOf(c.Assigns)), how{stdin: stdin})
}

// hereInput returns what a statement's standard input is when that is a
// here-document or here-string: the last redirection of fd 0 decides.
func hereInput(redirs []*syntax.Redirect) *word {
	var in *word
	for _, r := range redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			w := heredocBody(r)
			in = &w
		case syntax.WordHdoc:
			w := convertWord(r.Word)
			in = &w
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
			in = nil
		}
	}
	return in
}

// redirect records a redirection that writes a file.
func (a *analyzer) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		if t := convertWord(r.Word); t.lit && harmlessSink(t.text) {
			return
		}
	case syntax.DplOut:
		if t := convertWord(r.Word); t.lit && isFD(t.text) {
			return
		}
	default:
		return
	}
	a.an.add(item{kind: kindEffect, src: redirectSource(r), why: "the redirection writes a file"})
}

// redirectSource renders a redirection such as "2>> log.txt".
func redirectSource(r *syntax.Redirect) string {
	n := ""
	if r.N != nil {
		n = r.N.Value
	}
	return n + r.Op.String() + " " + nodeSource(r.Word)
}

// heredocBody is the text a here-document feeds: raw when its delimiter is
// quoted (<<'EOF'), else with only \$, \`, \\ and \newline unescaped and
// any expansion making it known only at run time.
func heredocBody(r *syntax.Redirect) word {
	quoted := r.Word == nil || r.Word.Lit() == "" || strings.Contains(r.Word.Lit(), `\`)
	var b strings.Builder
	if r.Hdoc != nil {
		for _, part := range r.Hdoc.Parts {
			l, ok := part.(*syntax.Lit)
			switch {
			case !ok && quoted:
				b.WriteString(nodeSource(part))
			case !ok:
				return word{text: nodeSource(r.Hdoc)}
			case quoted:
				b.WriteString(l.Value)
			default:
				b.WriteString(unescapeHeredoc(l.Value))
			}
		}
	}
	return litWord(b.String())
}

// unescapeHeredoc removes the backslashes an unquoted here-document gives
// meaning to.
func unescapeHeredoc(s string) string { return unescapeBefore(s, "$`\\") }

// harmlessSink reports whether writing to the path touches no file.
func harmlessSink(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	n, ok := strings.CutPrefix(p, "/dev/fd/")
	return ok && isDigits(n)
}

// isFD reports whether the target of >& names a file descriptor ("2",
// "-", "3-") rather than a file.
func isFD(s string) bool {
	s = strings.TrimSuffix(s, "-")
	return s == "" || isDigits(s)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decl judges declare, export, local, readonly, typeset and nameref.
func (a *analyzer) decl(d *syntax.DeclClause) {
	nameref := d.Variant != nil && d.Variant.Value == "nameref"
	for _, as := range d.Args {
		switch {
		case as.Name == nil && as.Value != nil: // an option, or a word computed at run time
			w := convertWord(as.Value)
			if !w.lit {
				a.an.add(item{kind: kindEffect, src: nodeSource(d), why: "declares a name only known at run time"})
				continue
			}
			if strings.HasPrefix(w.text, "-") && strings.Contains(w.text, "n") {
				nameref = true
			}
		case as.Name != nil && !as.Naked:
			a.assignName(as.Name.Value, nodeSource(as))
		}
	}
	if nameref {
		a.an.add(item{kind: kindEffect, src: nodeSource(d), why: "a name reference can assign any variable"})
	}
}

// assignName records an assignment to a shell variable, unless the name is
// one that changes nothing a read-only command does.
func (a *analyzer) assignName(name, src string) {
	notRO, sensitive := classifyName(name)
	if !notRO {
		return
	}
	why := "assigns " + name
	if sensitive {
		why += ", which can change which programs run"
	}
	a.an.add(item{kind: kindEffect, src: src, why: why, benign: !sensitive})
}

// envInfo is what assignments in front of a command (FOO=1 cmd, env FOO=1
// cmd) do to it.
type envInfo struct {
	notRO     []string // names that keep the command from being read-only
	sensitive []string // names that can change which code runs
}

func (e envInfo) with(name string) envInfo {
	notRO, sensitive := classifyName(name)
	if notRO {
		e.notRO = append(e.notRO[:len(e.notRO):len(e.notRO)], name)
	}
	if sensitive {
		e.sensitive = append(e.sensitive[:len(e.sensitive):len(e.sensitive)], name)
	}
	return e
}

func (e envInfo) merge(o envInfo) envInfo {
	return envInfo{
		notRO:     append(e.notRO[:len(e.notRO):len(e.notRO)], o.notRO...),
		sensitive: append(e.sensitive[:len(e.sensitive):len(e.sensitive)], o.sensitive...),
	}
}

func envOf(assigns []*syntax.Assign) envInfo {
	var e envInfo
	for _, as := range assigns {
		if as.Name != nil {
			e = e.with(as.Name.Value)
		}
	}
	return e
}

// uniq collects distinct strings in the order first seen.
type uniq struct {
	list []string
	seen map[string]bool
}

func (u *uniq) add(s string) {
	if u.seen[s] {
		return
	}
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	u.seen[s] = true
	u.list = append(u.list, s)
}
