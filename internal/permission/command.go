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
	// replace: xargs -I substitutes its input into the words.
	replace bool
	// stdin: the literal here-document the command reads, if any.
	stdin *word
}

// command judges one simple command, program first. env is what the
// assignments in front of it do.
func (a *analyzer) command(words []word, env envInfo, h how) {
	if len(words) == 0 {
		return
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
		return
	}
	switch name := programName(prog.text); name {
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
		if spec, ok := wrappers[name]; ok {
			a.wrapper(name, spec, words, env, h)
			return
		}
		a.plain(name, words, env, h)
	}
}

// plain judges a command by the read-only table.
func (a *analyzer) plain(name string, words []word, env envInfo, h how) {
	it := item{kind: kindCommand, words: words, sensitive: env.sensitive, open: h.open}
	it.readOnly, it.why = readOnlyCommand(name, words[1:], h.open)
	if it.readOnly && len(env.notRO) > 0 {
		it.readOnly, it.why = false, "assigns "+env.notRO[0]+" for the command"
	}
	a.an.add(it)
}

// wrapperSpec describes a program that runs another command given as its
// operands.
type wrapperSpec struct {
	opts     optSet
	operands int      // operands before the command (timeout's DURATION)
	assigns  bool     // NAME=VALUE operands before the command (env, sudo)
	noRun    []string // options after which it runs nothing (command -v, sudo -l)
	writes   []string // options whose value is a file it writes (time -o)
	unknown  []string // options that change what runs in ways not modelled
	elevates bool     // runs the command as another user: never read-only
	open     bool     // the command receives more arguments at run time (xargs)
}

var wrappers = map[string]wrapperSpec{
	"env": {opts: optSet{short: "i0v", shortArg: "uCS", dash: true,
		long:    []string{"--ignore-environment", "--null", "--debug", "--list-signal-handling", "--default-signal", "--ignore-signal", "--block-signal"},
		longArg: []string{"--unset", "--chdir", "--split-string"}},
		assigns: true, unknown: []string{"-S", "--split-string"}},
	"time": {opts: optSet{short: "pvaq", shortArg: "fo",
		long: []string{"--portability", "--verbose", "--append", "--quiet"}, longArg: []string{"--format", "--output"}},
		writes: []string{"-o", "--output"}},
	"nice":    {opts: optSet{shortArg: "n", longArg: []string{"--adjustment"}, digits: true}},
	"nohup":   {},
	"builtin": {},
	"timeout": {opts: optSet{short: "v", shortArg: "sk",
		long: []string{"--preserve-status", "--foreground", "--verbose"}, longArg: []string{"--signal", "--kill-after"}},
		operands: 1},
	"stdbuf": {opts: optSet{shortArg: "ioe", longArg: []string{"--input", "--output", "--error"}}},
	"ionice": {opts: optSet{short: "t", shortArg: "cnpPu", long: []string{"--ignore"},
		longArg: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}},
		unknown: []string{"-p", "-P", "-u", "--pid", "--pgid", "--uid"}},
	"command": {opts: optSet{short: "pvV"}, noRun: []string{"-v", "-V"}},
	"exec":    {opts: optSet{short: "cl", shortArg: "a"}},
	"xargs": {opts: optSet{short: "0rtpx", shortArg: "adEILnPs", shortOpt: "eil",
		long:    []string{"--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit", "--show-limits", "--open-tty", "--replace", "--eof", "--max-lines"},
		longArg: []string{"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}},
		open: true},
	"sudo": {opts: optSet{short: "AbEeHiKklnPSsVv", shortArg: "CDghprtTUu",
		long: []string{"--askpass", "--background", "--preserve-env", "--edit", "--login", "--non-interactive",
			"--preserve-groups", "--remove-timestamp", "--reset-timestamp", "--shell", "--stdin", "--list",
			"--validate", "--version", "--help", "--bell"},
		longArg: []string{"--close-from", "--chdir", "--group", "--host", "--prompt", "--role", "--type",
			"--command-timeout", "--other-user", "--user"}},
		assigns: true, elevates: true,
		noRun: []string{"-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "--help", "-K"}},
	"doas": {opts: optSet{short: "nsL", shortArg: "uaC"}, elevates: true, noRun: []string{"-C", "-L"}},
}

// wrapper judges a wrapper and the command it runs.
func (a *analyzer) wrapper(name string, spec wrapperSpec, words []word, env envInfo, h how) {
	next, seen, problem := spec.opts.scan(words[1:])
	if problem == "" && hasAny(seen, spec.unknown) {
		problem = "options like " + strings.Join(spec.unknown, ", ") + " are not judged"
	}
	rest := words[1+next:]
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
	for k := 0; k < spec.operands && len(rest) > 0 && problem == ""; k++ {
		if rest[0].multi {
			problem = fmt.Sprintf("its operand %s is only known at run time", rest[0].text)
		}
		rest = rest[1:]
	}
	runs := len(rest) > 0 && !hasAny(seen, spec.noRun)
	switch {
	case spec.elevates:
		a.an.add(item{kind: kindCommand, words: words, sensitive: env.sensitive, open: h.open,
			why: name + " runs a command as another user"})
	case runs:
		a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
	default:
		a.plain(name, words, env, h)
	}
	if problem != "" {
		a.an.cannotJudge("%s: %s", displayWords(words), problem)
		return
	}
	if hasAny(seen, spec.writes) {
		a.an.add(item{kind: kindEffect, src: displayWords(words), why: name + " writes its report to a file"})
	}
	if !runs {
		if h.open && !hasAny(seen, spec.noRun) {
			a.an.cannotJudge("%s: the command it runs is read at run time", displayWords(words))
		}
		return
	}
	replace := spec.open && hasAny(seen, []string{"-I", "-i", "--replace"})
	a.command(rest, env, how{open: h.open || spec.open, wrapped: true, replace: h.replace || replace, stdin: h.stdin})
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

// shell judges sh/bash/…: with -c and a literal script, the script is
// parsed and judged; fed a literal here-document and no script file, the
// here-document is; otherwise it runs a script file or its input.
func (a *analyzer) shell(name string, words []word, env envInfo, h how) {
	hasC, rest, problem := shellOptions(words[1:])
	if problem != "" {
		a.an.add(item{kind: kindCommand, words: words, sensitive: env.sensitive, why: "runs a shell"})
		a.an.cannotJudge("%s: %s", name, problem)
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
		a.an.add(item{kind: kindCommand, words: words, sensitive: env.sensitive, open: h.open, why: why})
		return
	}
	a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
	switch {
	case script == nil && h.open:
		a.an.cannotJudge("%s -c: the script is read at run time", name)
	case script == nil: // bash -c with no script does nothing
	case hasC && h.replace:
		a.an.cannotJudge("%s -c: xargs -I substitutes its input into the script", name)
	case !script.lit:
		a.an.cannotJudge("%s: the script %s is only known at run time", name, script.text)
	default:
		a.nested(script.text, name+" script", env, nil)
	}
}

// shellOptions reads a shell's options: whether -c is among them, and the
// operands after them.
func shellOptions(args []word) (hasC bool, rest []word, problem string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.lit {
			if w.flagish() {
				return false, nil, "the option " + w.text + " is only known at run time"
			}
			return hasC, args[i:], ""
		}
		switch t := w.text; {
		case t == "--" || t == "-":
			return hasC, args[min(i+1, len(args)):], ""
		case t == "--rcfile" || t == "--init-file":
			i++
		case strings.HasPrefix(t, "--"):
		case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
			for _, c := range t[1:] {
				switch c {
				case 'c':
					hasC = true
				case 'o', 'O':
					i++ // the option's name
				}
			}
		default:
			return hasC, args[i:], ""
		}
	}
	return hasC, nil, ""
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
		why: "eval runs its arguments as shell code"})
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
	a.an.add(item{kind: kindWrapper, words: words, readOnly: true})
	args := words[1:]
	for len(args) > 0 && args[0].lit && strings.HasPrefix(args[0].text, "-") && args[0].text != "-" {
		if args[0].text == "--" {
			args = args[1:]
			break
		}
		args = args[1:] // -l, -p, -P: print only
	}
	if len(args) < 2 {
		return // prints, or resets a signal
	}
	action := args[0]
	switch {
	case !action.lit:
		a.an.cannotJudge("trap: the action %s is only known at run time", action.text)
	case action.text == "-" || action.text == "" || isDigits(action.text):
	default:
		a.nested(action.text, "trap", env, a.defined())
	}
}

// alias defines aliases; each definition is judged as a script, since
// expand_aliases lets it run.
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
			a.nested(value, "alias "+name, envInfo{}, a.defined())
		}
	}
}

// find is read-only unless it deletes or writes files; the commands of
// -exec, -execdir, -ok and -okdir are judged as commands of their own.
func (a *analyzer) find(words []word, env envInfo, h how) {
	it := item{kind: kindCommand, words: words, readOnly: true, sensitive: env.sensitive, open: h.open}
	var targets [][]word
	for i := 1; i < len(words); i++ {
		w := words[i]
		if !w.lit {
			if w.flagish() {
				a.an.cannotJudge("find: the argument %s is only known at run time (it could be -exec or -delete)", w.text)
			}
			continue
		}
		switch w.text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for ; j < len(words); j++ {
				if t := words[j]; t.lit && (t.text == ";" || t.text == "+" && j > i+1 && words[j-1].text == "{}") {
					break
				}
			}
			targets = append(targets, words[i+1:j])
			i = j
		case "-delete":
			it.readOnly, it.why = false, "find -delete removes files"
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			it.readOnly, it.why = false, "find "+w.text+" writes a file"
		}
	}
	if it.readOnly && len(env.notRO) > 0 {
		it.readOnly, it.why = false, "assigns "+env.notRO[0]+" for the command"
	}
	if h.open {
		it.readOnly, it.why = false, "receives more arguments at run time (xargs)"
		a.an.cannotJudge("find: arguments read at run time could include -exec or -delete")
	}
	a.an.add(it)
	for _, t := range targets {
		a.command(t, env, how{wrapped: true})
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
