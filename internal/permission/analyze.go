package permission

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/expand"
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
	// forever says why the command may never end ("" when it is known
	// to end; only read-only commands are known to end).
	forever string
	// operands are the literal words of a read-only command that may
	// name files it reads (checked by Request.Stat for background runs).
	operands []string
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
	// forever says why the line may never end, beyond its commands
	// (loops, recursion, coprocesses).
	forever uniq
	// inputs are the literal files read by input redirections.
	inputs []string
}

// effect records a shell feature that keeps the line from being
// read-only.
func (an *analysis) effect(src, why string) {
	an.add(item{kind: kindEffect, src: src, why: why})
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
	src   string // the script's source, for here-document bodies
	// funcs maps the functions defined by the script's top-level
	// statements to the index of the first defining statement (-1: defined
	// before the script runs, by the shell running eval or a trap).
	funcs map[string]int
	top   int     // index of the top-level statement being walked
	env   envInfo // assignments the script's runner was given (FOO=1 sh -c …)
	// stdin is the literal here-document or here-string of the statement
	// whose command is about to be judged (bash <<'EOF' … EOF).
	stdin *word
	// stack holds the nodes being walked, innermost last.
	stack []syntax.Node
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
	sub := &analyzer{an: a.an, depth: a.depth + 1, src: src, funcs: functions(f, inherit), env: a.env}
	for i, st := range f.Stmts {
		sub.top = i
		syntax.Walk(st, sub.visit)
	}
	for _, c := range f.Last {
		sub.comment(&c)
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

// inside reports whether the node being visited lies within a node for
// which is reports true.
func (a *analyzer) inside(is func(syntax.Node) bool) bool {
	for _, n := range a.stack[:max(0, len(a.stack)-1)] {
		if is(n) {
			return true
		}
	}
	return false
}

// parse parses bash source, keeping comments (a comment can hide a line
// from the parser; see comment). A panic in the parser becomes an error,
// so hostile input cannot crash the caller.
func parse(src string) (f *syntax.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("parser failed: %v", r)
		}
	}()
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
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

// visit is the syntax.Walk callback. Walk reaches every nested node — in
// substitutions, here-documents, loops, function bodies — so each
// CallExpr is seen exactly once. Every node type is either judged here
// or harmless by construction; any other type asks (see feature).
func (a *analyzer) visit(n syntax.Node) bool {
	if n == nil {
		a.stack = a.stack[:len(a.stack)-1]
		return true
	}
	a.stack = append(a.stack, n)
	switch n := n.(type) {
	case *syntax.Stmt:
		a.stmt(n)
	case *syntax.CallExpr:
		a.call(n)
	case *syntax.DeclClause:
		a.decl(n)
	case *syntax.ForClause:
		if wi, ok := n.Loop.(*syntax.WordIter); ok && wi.Name != nil {
			a.assignName(wi.Name.Value, "for "+wi.Name.Value)
		}
	default:
		a.feature(n)
	}
	return true
}

func (a *analyzer) stmt(st *syntax.Stmt) {
	a.stdin = nil
	if _, ok := st.Cmd.(*syntax.CallExpr); ok {
		a.stdin = hereInput(st.Redirs)
	}
	if st.Coprocess {
		a.an.effect(nodeSource(st), "starts a coprocess")
		a.an.forever.add("a coprocess may never end")
	}
	for _, r := range st.Redirs {
		a.redirect(r)
	}
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

// redirect judges a redirection. Allowed without asking: reading a file
// named literally (not a /dev/tcp or /dev/udp connection), writing to
// /dev/null, duplicating or closing a descriptor, here-documents and
// here-strings. Anything else is an effect: writing any other path —
// /dev/stdout, /dev/stderr and /dev/fd/N included, since bash reopens
// them and can so truncate the file behind a descriptor — or reading a
// path only known at run time.
func (a *analyzer) redirect(r *syntax.Redirect) {
	src := redirectSource(r)
	if r.N != nil && !isDigits(r.N.Value) {
		a.an.effect(src, "assigns a file descriptor to a variable")
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		if t := convertWord(r.Word); t.lit && t.text == "/dev/null" {
			return
		}
		a.an.effect(src, "the redirection writes a file")
	case syntax.DplOut, syntax.DplIn:
		if t := convertWord(r.Word); t.lit && isFD(t.text) {
			return
		}
		a.an.effect(src, "the redirection writes a file")
	case syntax.RdrIn:
		t := convertWord(r.Word)
		switch {
		case !t.lit && !safeLead(t):
			a.an.effect(src, "reads a path only known at run time, which bash may open as a network connection (/dev/tcp/…)")
		case t.lit && isNetPath(t.text):
			a.an.effect(src, "opens a network connection")
		case t.lit:
			a.an.inputs = append(a.an.inputs, t.text)
		}
	case syntax.Hdoc, syntax.DashHdoc:
		a.heredoc(r)
	case syntax.WordHdoc:
	default:
		a.an.effect(src, "the redirection is not known to be harmless")
	}
}

// safeLead reports whether a word only known at run time is known to
// name an ordinary path: its literal beginning is a relative path that is
// no option, or an absolute path whose first component is not dev.
func safeLead(w word) bool {
	l := w.lead
	switch {
	case l == "" || l[0] == '-':
		return false
	case l[0] != '/':
		return true
	}
	i := strings.IndexByte(l[1:], '/')
	return i >= 0 && l[1:1+i] != "dev"
}

// isNetPath reports whether bash opens the path as a connection.
func isNetPath(p string) bool {
	return strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/")
}

// heredoc judges a here-document where mvdan's parser and bash may read
// it differently: a delimiter that is not a plain word, a body line that
// begins with the delimiter (which one of them might take as the end), a
// line continuation or single quotes inside an expansion of an unquoted
// body.
func (a *analyzer) heredoc(r *syntax.Redirect) {
	delim, ok := literalValue(r.Word.Parts)
	if !ok || !plainDelimiter(delim) {
		a.an.cannotJudge("the here-document delimiter %s is not a plain word", nodeSource(r.Word))
		return
	}
	if r.Hdoc == nil {
		return
	}
	body := ""
	if s, e := int(r.Hdoc.Pos().Offset()), int(r.Hdoc.End().Offset()); s >= 0 && s <= e && e <= len(a.src) {
		body = a.src[s:e]
	}
	lines := strings.Split(body, "\n")
	for _, line := range lines[:len(lines)-1] { // the last line is the delimiter
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), delim) {
			a.an.cannotJudge("a line of the here-document begins with its delimiter %s", delim)
			return
		}
	}
	if quotedDelimiter(r.Word) {
		return
	}
	if strings.Contains(body, "\\\n") {
		a.an.cannotJudge("an unquoted here-document continues a line with a backslash")
	}
	if nestedSingleQuotes(r.Hdoc) {
		a.an.cannotJudge("single quotes inside an unquoted here-document do not quote in bash")
	}
}

// plainDelimiter reports whether a here-document delimiter is a plain
// word that bash and the parser cannot read differently.
func plainDelimiter(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && c != '-' && c != '.' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// quotedDelimiter reports whether any part of the delimiter is quoted,
// which makes the body literal.
func quotedDelimiter(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(p.Value, "\\") {
				return true
			}
		}
	}
	return false
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
// quoted (<<'EOF'), else the body as bash expands it (expand.Document)
// when it holds no expansion, and known only at run time otherwise.
func heredocBody(r *syntax.Redirect) word {
	if r.Hdoc == nil {
		return litWord("")
	}
	if r.Word != nil && quotedDelimiter(r.Word) {
		var b strings.Builder
		for _, part := range r.Hdoc.Parts {
			if l, ok := part.(*syntax.Lit); ok {
				b.WriteString(l.Value)
			} else {
				b.WriteString(nodeSource(part))
			}
		}
		return litWord(b.String())
	}
	for _, part := range r.Hdoc.Parts {
		if _, ok := part.(*syntax.Lit); !ok {
			return word{text: nodeSource(r.Hdoc)}
		}
	}
	v, err := expand.Document(&expand.Config{}, r.Hdoc)
	if err != nil {
		return word{text: nodeSource(r.Hdoc)}
	}
	return litWord(v)
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

// declOptions are the options of declare, typeset, local, export and
// readonly that only set attributes harmless to a read-only line or
// print: -a and -A (arrays), -r, -x, -g, -l, -u (case), -t, -f and -F
// (print functions), -p (print).
const declOptions = "aArxglutfFp"

// decl judges declare, export, local, readonly, typeset and nameref. A
// word that is not an assignment to bash but may become one for the
// builtin (declare 'PS4=$(…)', declare "$x") asks: the builtin parses it
// again. -i (integer: arithmetic on every assignment) and -n (name
// reference) ask too.
func (a *analyzer) decl(d *syntax.DeclClause) {
	variant := ""
	if d.Variant != nil {
		variant = d.Variant.Value
	}
	if variant == "nameref" {
		a.an.effect(nodeSource(d), "a name reference can assign any variable")
	}
	options := true
	for _, as := range d.Args {
		switch {
		case as.Name == nil && as.Value != nil: // an option, or a word the builtin reads itself
			w := convertWord(as.Value)
			switch {
			case !w.lit:
				a.an.effect(nodeSource(d), variant+" gets a word only known at run time, which it may take as an assignment")
			case options && w.text == "--":
				options = false
			case options && len(w.text) > 1 && (w.text[0] == '-' || w.text[0] == '+'):
				for _, c := range w.text[1:] {
					if !strings.ContainsRune(declOptions, c) {
						a.an.effect(nodeSource(d), fmt.Sprintf("%s -%c is not known to be harmless", variant, c))
						break
					}
				}
			case strings.ContainsAny(w.text, "=["):
				a.an.cannotJudge("%s %s: the builtin reads the quoted word as an assignment, which the parser does not see", variant, quoteWord(w.text))
			default:
				a.assignName(w.text, nodeSource(d))
			}
		case as.Name != nil && !as.Naked:
			a.assignName(as.Name.Value, nodeSource(as))
		case as.Name != nil:
			if variant == "export" || variant == "readonly" {
				a.assignName(as.Name.Value, nodeSource(d))
			}
		}
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
