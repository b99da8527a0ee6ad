package permission

import (
	"fmt"
	"slices"
	"strings"
)

// how says how a command is reached.
type how struct {
	// open: the command receives more arguments at run time (an xargs
	// target).
	open bool
	// wrapped: the command is run by a wrapper (env, timeout, xargs…),
	// which executes programs, so the script's functions do not apply.
	wrapped bool
	// replace is what xargs -I or find -exec substitutes into the words
	// ("{}"), or "".
	replace string
	// paths: the substitution is a path that find found, which never
	// begins with '-'.
	paths bool
	// stdin: the literal here-document the command reads, if any.
	stdin *word
}

// command judges one simple command, program first. env is what the
// assignments in front of it do.
func (a *analyzer) command(words []word, env envInfo, h how) {
	if len(words) == 0 {
		return
	}
	if h.replace != "" {
		words = substituted(words, h.replace, h.paths)
	}
	prog := words[0]
	if !prog.lit {
		a.an.cannotJudge("the command name %s is only known at run time", prog.text)
		return
	}
	if !h.wrapped && !h.open && a.isFunction(prog.text) {
		// A call of a function defined earlier in the script: its body is
		// judged where it is defined.
		a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
		if a.inside(isFunc) {
			a.an.forever.add("a function calls a function of the script, which may recurse")
		}
		return
	}
	name := programName(prog.text)
	if subscriptBuiltins()[name] {
		for _, w := range words[1:] {
			if w.lit && strings.Contains(w.text, "[") && strings.ContainsAny(w.text, "$`") {
				a.an.cannotJudge("%s %s: bash evaluates the subscript as code", name, quoteWord(w.text))
			}
		}
	}
	switch name {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash":
		a.shell(name, words, env, h)
	case "eval":
		a.eval(words, env, h)
	case "trap":
		a.trap(words, env)
	case "alias":
		a.alias(words)
	case "find":
		a.find(words, env, h)
	default:
		if spec, ok := wrappers()[name]; ok {
			a.wrapper(name, spec, words, env, h)
			return
		}
		a.plain(name, words, env, h)
	}
}

// subscriptBuiltins are the builtins that take variable names, whose
// subscripts bash evaluates (test -v 'a[$(cmd)]', read 'a[$(cmd)]').
var subscriptBuiltins = lazyTable(func() map[string]bool {
	return map[string]bool{
		"test": true, "[": true, "read": true, "printf": true, "unset": true, "wait": true, "mapfile": true,
		"readarray": true, "getopts": true, "declare": true, "typeset": true, "local": true, "export": true,
		"readonly": true, "let": true, "shift": true, "exit": true, "return": true, "break": true, "continue": true,
	}
})

// substituted marks the words into which xargs -I or find -exec put
// their input as known only at run time: the literal text around the
// replacement string stays their lead.
func substituted(words []word, r string, paths bool) []word {
	out := make([]word, len(words))
	for i, w := range words {
		out[i] = w
		if !w.lit || !strings.Contains(w.text, r) {
			continue
		}
		lead, _, _ := strings.Cut(w.text, r)
		out[i] = word{text: w.text, lead: lead, noOpt: paths && lead == ""}
	}
	return out
}

// plain judges a command by the read-only table.
func (a *analyzer) plain(name string, words []word, env envInfo, h how) {
	it := item{kind: kindCommand, words: words, sensitive: env.sensitive, open: h.open}
	r := readOnlyCommand(name, words[1:], h.open)
	it.readOnly, it.why, it.forever, it.operands = r.ok, r.why, r.forever, r.files
	if it.readOnly && len(env.notRO) > 0 {
		it.readOnly, it.why = false, "assigns "+env.notRO[0]+" for the command"
	}
	if !it.readOnly && it.forever == "" {
		it.forever = "it is not a read-only command"
	}
	a.an.add(it)
}

// wrapperSpec describes a program that runs another command given as its
// operands.
type wrapperSpec struct {
	opts     *optSpec // allowlisted options (stylePOSIX: the command ends them)
	operands int      // operands before the command (timeout's DURATION)
	assigns  bool     // NAME=VALUE operands before the command (env, sudo)
	noRun    []string // options after which it runs nothing (command -v, sudo -l)
	elevates bool     // runs the command as another user: never read-only
	open     bool     // the command receives more arguments at run time (xargs)
}

var wrappers = lazyTable(func() map[string]wrapperSpec {
	return map[string]wrapperSpec{
		"env": {opts: newSpec(stylePOSIX, "-i -0 -v -u: -C: --ignore-environment --null --debug --unset: --chdir: --default-signal:: --list-signal-handling"),
			assigns: true},
		"time":    {opts: newSpec(stylePOSIX, "-p -v -q -f: --portability --verbose --quiet --format:")},
		"nice":    {opts: newSpec(stylePOSIX, "# -n: --adjustment:")},
		"nohup":   {opts: newSpec(stylePOSIX, "")},
		"builtin": {opts: newSpec(stylePOSIX, "")},
		"timeout": {opts: newSpec(stylePOSIX, "-v -s: -k: --preserve-status --foreground --verbose --signal: --kill-after:"),
			operands: 1},
		"stdbuf":  {opts: newSpec(stylePOSIX, "-i: -o: -e: --input: --output: --error:")},
		"ionice":  {opts: newSpec(stylePOSIX, "-t -c: -n: --ignore --class: --classdata:")},
		"command": {opts: newSpec(stylePOSIX, "-p -v -V"), noRun: []string{"-v", "-V"}},
		"exec":    {opts: newSpec(stylePOSIX, "-c -l -a:")},
		"xargs": {opts: newSpec(stylePOSIX, "-0 -r -t -x -a: -d: -E: -I: -L: -n: -P: -s: -i:: -l:: -e:: "+
			"--null --no-run-if-empty --verbose --exit --arg-file: --delimiter: --eof:: --replace:: --max-lines:: "+
			"--max-args: --max-procs: --max-chars: --show-limits"),
			open: true},
		"sudo": {opts: newSpec(stylePOSIX, "-A -b -E -e -H -i -K -k -l -n -P -S -s -V -v -C: -D: -g: -h: -p: -r: -t: -T: -U: -u: "+
			"--askpass --background --preserve-env:: --edit --login --non-interactive --preserve-groups --remove-timestamp "+
			"--reset-timestamp --shell --stdin --list --validate --version --help --bell --close-from: --chdir: --group: "+
			"--host: --prompt: --role: --type: --command-timeout: --other-user: --user:"),
			assigns: true, elevates: true,
			noRun: []string{"-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "--help", "-K"}},
		"doas": {opts: newSpec(stylePOSIX, "-n -s -L -u: -a: -C:"), elevates: true, noRun: []string{"-C", "-L"}},
	}
})

// wrapper judges a wrapper and the command it runs.
func (a *analyzer) wrapper(name string, spec wrapperSpec, words []word, env envInfo, h how) {
	sc := spec.opts.scan(name, words[1:])
	problem := sc.problem
	rest := sc.operands
	if spec.assigns {
		for len(rest) > 0 {
			n, ok := assignmentName(rest[0])
			if !ok {
				break
			}
			env = env.with(n)
			rest = rest[1:]
		}
	}
	var duration word
	for k := 0; k < spec.operands && len(rest) > 0 && problem == ""; k++ {
		if rest[0].multi {
			problem = fmt.Sprintf("its operand %s is only known at run time", rest[0].text)
		}
		duration, rest = rest[0], rest[1:]
	}
	noRun := sc.has(spec.noRun...)
	runs := len(rest) > 0 && !noRun
	switch {
	case spec.elevates:
		a.an.add(item{kind: kindCommand, words: words, sensitive: env.sensitive, open: h.open,
			why: name + " runs a command as another user", forever: "it runs a command as another user"})
	case runs:
		a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
	default:
		a.plain(name, words, env, h)
	}
	if problem != "" {
		a.an.cannotJudge("%s: %s", displayWords(words), problem)
		return
	}
	if !runs {
		if h.open && !noRun {
			a.an.cannotJudge("%s: the command it runs is read at run time", displayWords(words))
		}
		return
	}
	replace := h.replace
	if spec.open {
		replace = xargsReplace(sc)
	}
	before := len(a.an.items)
	a.command(rest, env, how{open: h.open || spec.open, wrapped: true, replace: replace, stdin: h.stdin})
	if name == "timeout" && finiteDuration(duration, 24*3600) {
		a.bounded(before, sc.has("-k", "--kill-after"))
	}
}

// bounded marks the items from index before as ending: timeout ends them
// after a finite duration. Without -k a command can ignore the signal; a
// read-only command cannot (trap is not read-only… except trap ” SIG,
// which ignores signals), so without -k only read-only items end.
func (a *analyzer) bounded(before int, kill bool) {
	for i := before; i < len(a.an.items); i++ {
		it := &a.an.items[i]
		if kill || it.readOnly && !isTrap(it) {
			it.forever = ""
		}
	}
}

func isTrap(it *item) bool {
	return len(it.words) > 0 && it.words[0].lit && it.words[0].text == "trap"
}

// xargsReplace is the replacement string of xargs -I R, -i[R] or
// --replace[=R] ("{}" by default), or "".
func xargsReplace(sc scanned) string {
	for _, o := range sc.opts {
		switch o.name {
		case "-I", "-i", "--replace":
			if o.val != nil && o.val.lit && o.val.text != "" {
				return o.val.text
			}
			if o.val != nil && !o.val.lit {
				return "\x00" // unknown: nothing matches, see command
			}
			return "{}"
		}
	}
	return ""
}

// assignmentName reports whether w is a NAME=VALUE word and returns NAME.
func assignmentName(w word) (string, bool) {
	name, _, ok := strings.Cut(w.lead, "=")
	if !ok || !validName(name) {
		return "", false
	}
	return name, true
}

func validName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// shellSpec is the allowlist of a shell's options: -c and the options
// that change nothing but error handling and tracing. -i, -l, --login,
// --rcfile and --init-file run startup files; --posix and -k change how
// the script is read.
var shellSpec = newSpec(stylePOSIX, "+ -c -e -u -x -v -f -C -n -s -o: --norc --noprofile --noediting --restricted -r")

// harmlessShellOptions are the names -o may set.
var harmlessShellOptions = lazyTable(func() map[string]bool {
	return map[string]bool{"errexit": true, "nounset": true, "pipefail": true, "xtrace": true,
		"verbose": true, "noglob": true, "noclobber": true, "noexec": true}
})

// shell judges sh/bash/…: with -c and a literal script, the script is
// parsed and judged; fed a literal here-document and no script file, the
// here-document is; otherwise it runs a script file or its input.
func (a *analyzer) shell(name string, words []word, env envInfo, h how) {
	sc := shellSpec.scan(name, words[1:])
	problem := sc.problem
	for _, o := range sc.opts {
		if (o.name == "-o" || o.name == "+o") && o.val != nil && (!o.val.lit || !harmlessShellOptions()[o.val.text]) {
			problem = name + " -o " + o.val.text + " is not known to be harmless"
		}
	}
	hasC := sc.has("-c")
	rest := sc.operands
	if sc.runtimeProblem {
		a.an.cannotJudge("%s", problem)
	}
	if problem != "" {
		a.an.add(item{kind: kindCommand, words: words, sensitive: env.sensitive, why: problem, forever: "it runs a shell"})
		if hasC && len(rest) > 0 && rest[0].lit {
			a.nested(rest[0].text, name+" script", env, nil) // for the deny rules
		}
		return
	}
	var script *word
	switch {
	case hasC && len(rest) > 0:
		script = &rest[0]
	case !hasC && len(rest) == 0 && h.stdin != nil && !h.open:
		script = h.stdin
	}
	if !hasC && script == nil {
		why := "runs a shell script"
		if len(rest) == 0 {
			why = "runs the commands it reads from its input"
		}
		a.an.add(item{kind: kindCommand, words: words, sensitive: env.sensitive, open: h.open, why: why, forever: why})
		return
	}
	a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
	switch {
	case script == nil && h.open:
		a.an.cannotJudge("%s -c: the script is read at run time", name)
	case script == nil: // bash -c with no script does nothing
	case !script.lit:
		a.an.cannotJudge("%s: the script %s is only known at run time", name, script.text)
	default:
		a.nested(script.text, name+" script", env, nil)
	}
}

// nested judges a script run by the command at hand (sh -c, eval, trap).
func (a *analyzer) nested(src, what string, env envInfo, funcs []string) {
	sub := &analyzer{an: a.an, depth: a.depth, env: a.env.merge(env)}
	sub.script(src, what, funcs)
}

// eval is never read-only; its arguments are parsed as a script when they
// are literal.
func (a *analyzer) eval(words []word, env envInfo, h how) {
	a.an.add(item{kind: kindCommand, words: words, sensitive: env.sensitive, open: h.open,
		why: "eval runs its arguments as shell code", forever: "eval runs shell code"})
	if h.open {
		a.an.cannotJudge("eval: its arguments are read at run time")
		return
	}
	parts := make([]string, 0, len(words)-1)
	for _, w := range words[1:] {
		if !w.lit {
			a.an.cannotJudge("eval: the argument %s is only known at run time", w.text)
			return
		}
		parts = append(parts, w.text)
	}
	a.nested(strings.Join(parts, " "), "eval", env, a.defined())
}

// trap judges the action a trap will run.
func (a *analyzer) trap(words []word, env envInfo) {
	args := words[1:]
	for len(args) > 0 && args[0].lit && (args[0].text == "-l" || args[0].text == "-p" || args[0].text == "-P") {
		args = args[1:] // print only
	}
	if len(args) > 0 && args[0].lit && args[0].text == "--" {
		args = args[1:]
	}
	if len(args) < 2 {
		a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
		return // prints, or resets a signal
	}
	action := args[0]
	switch {
	case !action.lit:
		a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
		a.an.cannotJudge("trap: the action %s is only known at run time", action.text)
	case action.text == "":
		a.an.add(item{kind: kindCommand, words: words, readOnly: true, forever: "trap '' ignores signals"})
	case action.text == "-" || isDigits(action.text):
		a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
	default:
		a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
		a.nested(action.text, "trap", env, a.defined())
	}
}

// alias defines aliases. A definition cannot be judged: when alias
// expansion is on (sh, --posix, shopt -s expand_aliases, POSIXLY_CORRECT)
// it changes how every later line is read (alias r=rm, then r -rf /), so
// deny rules cannot be checked; its value is judged for them anyway.
func (a *analyzer) alias(words []word) {
	a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
	for _, w := range words[1:] {
		name, _, ok := strings.Cut(w.lead, "=")
		switch {
		case !ok && w.lit:
			// alias NAME, alias -p: prints
		case !ok || !w.lit:
			a.an.cannotJudge("alias: %s is only known at run time", w.text)
		default:
			_, value, _ := strings.Cut(w.text, "=")
			a.an.cannotJudge("alias %s: an alias changes how later lines are read", name)
			a.nested(value, "alias "+name, envInfo{}, a.defined())
		}
	}
}

func hasAny(seen, set []string) bool {
	for _, s := range seen {
		if slices.Contains(set, s) {
			return true
		}
	}
	return false
}
