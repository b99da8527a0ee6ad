package permission

import (
	"fmt"
	"strings"
	"sync"
)

// optKind says whether an option takes a value.
type optKind uint8

const (
	// optFlag takes no value ("-v", "--verbose").
	optFlag optKind = iota
	// optValue takes a value: attached ("-n5", "--lines=5") or the next
	// word ("-n 5", "--lines 5").
	optValue
	// optAttached takes an optional value, attached only ("--color",
	// "--color=auto", "-w" or "-w80" for od).
	optAttached
	// optNextOptional takes the next word as its value when that word
	// does not begin with '-' (lsof -i [ADDR]).
	optNextOptional
	// optValue2 takes the next two words (jq --arg NAME VALUE).
	optValue2
)

// optStyle is how a program reads its options.
type optStyle uint8

const (
	// styleGNU: getopt_long with permutation: options may follow
	// operands, short options cluster ("-la"), "--" ends options.
	styleGNU optStyle = iota
	// stylePOSIX: as GNU, but the first operand ends the options (env,
	// xargs, awk: what follows belongs to the command or program).
	stylePOSIX
	// styleWhole: every option is a whole word ("-ps", "-cols"); a short
	// option may carry its value attached ("-c8", "-n5"); no clusters.
	// Options may follow operands. Git's revision options and xxd.
	styleWhole
	// styleGo: Go's flag package: "-name" or "--name", "-name=v" or
	// "-name v"; the first operand ends the flags.
	styleGo
)

// optSpec is the allowlist of a program's options: the options it is
// known to have that keep it read-only. Any other option makes the
// command not read-only. It is built by newSpec from a compact text.
type optSpec struct {
	style optStyle
	text  string    // the compact text newSpec was given
	once  sync.Once // parse runs on the first scan, not at package init
	// The fields below are set by parse.
	short map[byte]optKind
	long  map[string]optKind // by name without dashes; styleWhole and styleGo: the whole word without its first dash
	// digits: "-5" is an option (head -5, git log -3, nice -10).
	digits bool
	// runtimeSafe: every option the real program has is harmless, so a
	// word only known at run time may be taken for any of them.
	runtimeSafe bool
	// plus: "+x" clusters turn options off (sh +e); they are read like
	// "-x" clusters.
	plus bool
}

// newSpec builds a spec from space-separated option words:
//
//	-x      short flag            --name    long flag
//	-x:     short with value      --name:   long with value
//	-x::    short, attached value --name::  long, attached optional value
//	-x?     short, optional next  --name?   long, optional next word
//	-x;     short, two values     --name;   long, two values
//	#       "-N" digits are an option
//	!       every option of the program is harmless (runtimeSafe)
//	+       "+x" clusters are options too (sh +e)
//
// In styleWhole and styleGo every word is a whole option name.
// The text is parsed on the spec's first use (see parsed), which panics on
// a malformed one: specs are constants of this package (a test parses
// every one).
func newSpec(style optStyle, text string) *optSpec {
	return &optSpec{style: style, text: text}
}

// parsed returns s with its option tables built (once, on first use).
func (s *optSpec) parsed() *optSpec {
	s.once.Do(s.parse)
	return s
}

// parse builds s's option tables from its text.
func (s *optSpec) parse() {
	built.Add(1)
	style := s.style
	s.short, s.long = map[byte]optKind{}, map[string]optKind{}
	for _, f := range strings.Fields(s.text) {
		switch f {
		case "#":
			s.digits = true
			continue
		case "!":
			s.runtimeSafe = true
			continue
		case "+":
			s.plus = true
			continue
		}
		kind := optFlag
		switch {
		case strings.HasSuffix(f, "::"):
			kind, f = optAttached, f[:len(f)-2]
		case strings.HasSuffix(f, ":"):
			kind, f = optValue, f[:len(f)-1]
		case strings.HasSuffix(f, "?"):
			kind, f = optNextOptional, f[:len(f)-1]
		case strings.HasSuffix(f, ";"):
			kind, f = optValue2, f[:len(f)-1]
		}
		switch {
		case style == styleWhole || style == styleGo:
			if !strings.HasPrefix(f, "-") || len(f) < 2 {
				panic("permission: bad spec word " + f)
			}
			s.long[strings.TrimPrefix(f[1:], "-")] = kind
		case strings.HasPrefix(f, "--") && len(f) > 2:
			s.long[f[2:]] = kind
		case len(f) == 2 && f[0] == '-':
			s.short[f[1]] = kind
		default:
			panic("permission: bad spec word " + f)
		}
	}
}

// opt is one option as read: its canonical name ("-n", "--lines") and
// its value, when it has one.
type opt struct {
	name string
	val  *word
	val2 *word // the second value of an optValue2 option
}

// scanned is a command line read against a spec.
type scanned struct {
	opts     []opt
	operands []word
	// problem says why the words keep the program from being read-only
	// ("" when none does): an option not on the allowlist, or one only
	// known at run time.
	problem string
	// runtime counts the words only known at run time that may be
	// options (accepted only by a runtimeSafe spec).
	runtime int
	// runtimeProblem: the problem is a word only known at run time.
	runtimeProblem bool
}

// has reports whether any of the names was given.
func (s *scanned) has(names ...string) bool {
	for _, o := range s.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// value returns the last value given to any of the names.
func (s *scanned) value(names ...string) (word, bool) {
	var (
		v  word
		ok bool
	)
	for _, o := range s.opts {
		for _, n := range names {
			if o.name == n && o.val != nil {
				v, ok = *o.val, true
			}
		}
	}
	return v, ok
}

// scan reads args (the words after the program name) against the spec.
func (s *optSpec) scan(prog string, args []word) scanned {
	s.parsed()
	var out scanned
	fail := func(format string, a ...any) scanned {
		if out.problem == "" {
			out.problem = fmt.Sprintf(format, a...)
		}
		return out
	}
	options := true
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !options {
			out.operands = append(out.operands, w)
			continue
		}
		if !w.lit {
			if w.flagish() {
				if !s.runtimeSafe {
					out.runtimeProblem = true
					return fail("%s may get an option only known at run time (%s)", prog, w.text)
				}
				out.runtime++
			}
			out.operands = append(out.operands, w)
			if s.style == stylePOSIX || s.style == styleGo {
				options = false
			}
			continue
		}
		t := w.text
		switch {
		case t == "--":
			options = false
			continue
		case len(t) < 2 || t[0] != '-' && !(s.plus && t[0] == '+'):
			out.operands = append(out.operands, w)
			if s.style == stylePOSIX || s.style == styleGo {
				options = false
			}
			continue
		case s.digits && isDigits(t[1:]):
			out.opts = append(out.opts, opt{name: t})
			continue
		}
		var next int
		var problem string
		switch {
		case s.style == styleWhole || s.style == styleGo:
			next, problem = s.whole(prog, args, i, &out)
		case strings.HasPrefix(t, "--"):
			next, problem = s.longOpt(prog, args, i, &out)
		default:
			next, problem = s.cluster(prog, args, i, &out)
		}
		if problem != "" {
			return fail("%s", problem)
		}
		i = next
	}
	return out
}

// takeValue reads the value of an option from the word after args[i]. A
// word that may begin with '-' is refused: the real program might read
// it as an option instead.
func takeValue(prog, name string, args []word, i int) (*word, int, string) {
	if i+1 >= len(args) {
		return nil, i, "" // the program reports the missing value
	}
	v := args[i+1]
	if v.isFlag() || !v.lit && v.flagish() {
		return nil, i, fmt.Sprintf("%s %s is followed by %s, which could be read as an option", prog, name, v.text)
	}
	return &v, i + 1, ""
}

func (s *optSpec) longOpt(prog string, args []word, i int, out *scanned) (int, string) {
	name, val, eq := strings.Cut(args[i].text[2:], "=")
	kind, ok := s.long[name]
	if !ok {
		return i, fmt.Sprintf("%s --%s is not known to be read-only", prog, name)
	}
	o := opt{name: "--" + name}
	switch {
	case eq && (kind == optFlag || kind == optValue2):
		return i, fmt.Sprintf("%s --%s takes no value here", prog, name)
	case eq:
		v := litWord(val)
		o.val = &v
	case kind == optValue:
		var p string
		if o.val, i, p = takeValue(prog, "--"+name, args, i); p != "" {
			return i, p
		}
	case kind == optValue2:
		return s.two(prog, args, i, o, out)
	case kind == optNextOptional:
		if i+1 < len(args) && !args[i+1].flagish() {
			v := args[i+1]
			o.val, i = &v, i+1
		}
	}
	out.opts = append(out.opts, o)
	return i, ""
}

func (s *optSpec) two(prog string, args []word, i int, o opt, out *scanned) (int, string) {
	if i+2 >= len(args) {
		return i, ""
	}
	a, b := args[i+1], args[i+2]
	o.val, o.val2 = &a, &b
	out.opts = append(out.opts, o)
	return i + 2, ""
}

func (s *optSpec) cluster(prog string, args []word, i int, out *scanned) (int, string) {
	t := args[i].text
	for j := 1; j < len(t); j++ {
		c := t[j]
		kind, ok := s.short[c]
		if !ok {
			return i, fmt.Sprintf("%s %c%c is not known to be read-only", prog, t[0], c)
		}
		o := opt{name: t[:1] + string(c)}
		switch kind {
		case optFlag:
			out.opts = append(out.opts, o)
			continue
		case optValue, optAttached:
			if j+1 < len(t) {
				v := litWord(t[j+1:])
				o.val = &v
			} else if kind == optValue {
				var p string
				if o.val, i, p = takeValue(prog, o.name, args, i); p != "" {
					return i, p
				}
			}
		case optNextOptional:
			if j+1 == len(t) && i+1 < len(args) && !args[i+1].flagish() {
				v := args[i+1]
				o.val, i = &v, i+1
			} else if j+1 < len(t) {
				return i, fmt.Sprintf("%s %s is not known to be read-only", prog, t)
			}
		case optValue2:
			if j+1 < len(t) {
				return i, fmt.Sprintf("%s %s is not known to be read-only", prog, t)
			}
			return s.two(prog, args, i, o, out)
		}
		out.opts = append(out.opts, o)
		break
	}
	return i, ""
}

// whole reads an option of styleWhole or styleGo: the word without its
// dashes is the name, possibly with "=value"; in styleWhole a one-letter
// name may carry its value attached ("-n5", "-Sfoo").
func (s *optSpec) whole(prog string, args []word, i int, out *scanned) (int, string) {
	t := args[i].text
	body := strings.TrimPrefix(t[1:], "-")
	name, val, eq := strings.Cut(body, "=")
	kind, ok := s.long[name]
	attached := ""
	if !ok && !eq && s.style == styleWhole && len(body) > 1 {
		if k, found := s.long[body[:1]]; found && (k == optValue || k == optAttached) {
			name, kind, ok, attached = body[:1], k, true, body[1:]
		}
	}
	if !ok {
		return i, fmt.Sprintf("%s %s is not known to be read-only", prog, t)
	}
	o := opt{name: "-" + name}
	if len(name) > 1 {
		o.name = "--" + name
	}
	switch {
	case eq && kind == optFlag && s.style == styleGo && val == "true":
	case eq && (kind == optFlag || kind == optValue2):
		return i, fmt.Sprintf("%s %s takes no value here", prog, t)
	case eq:
		v := litWord(val)
		o.val = &v
	case attached != "":
		v := litWord(attached)
		o.val = &v
	case kind == optValue:
		var p string
		if o.val, i, p = takeValue(prog, t, args, i); p != "" {
			return i, p
		}
	case kind == optValue2:
		return s.two(prog, args, i, o, out)
	}
	out.opts = append(out.opts, o)
	return i, ""
}
