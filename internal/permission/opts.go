package permission

import (
	"fmt"
	"slices"
	"strings"
)

// optSet describes the options a program accepts before its operands.
type optSet struct {
	short    string   // short options without a value
	shortArg string   // short options taking a value (attached, or the next word)
	shortOpt string   // short options with an optional attached value (xargs -i[R])
	long     []string // long options without a value (an "=value" is tolerated)
	longArg  []string // long options taking a value ("=value", or the next word)
	digits   bool     // -N is an option (nice -10)
	dash     bool     // a lone "-" is an option (env -)
}

// scan walks the leading options of args. It returns the index of the
// first operand and the options seen ("-x", "--name"), or a problem when an
// option is unknown or only known at run time.
func (o optSet) scan(args []word) (next int, seen []string, problem string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.lit {
			if w.flagish() {
				return i, seen, fmt.Sprintf("the option %s is only known at run time", w.text)
			}
			return i, seen, ""
		}
		t := w.text
		switch {
		case t == "--":
			return i + 1, seen, ""
		case t == "-" && o.dash:
			seen = append(seen, t)
		case len(t) < 2 || t[0] != '-':
			return i, seen, ""
		case o.digits && isDigits(t[1:]):
			seen = append(seen, t)
		case strings.HasPrefix(t, "--"):
			name, _, eq := strings.Cut(t, "=")
			switch {
			case slices.Contains(o.long, name):
			case slices.Contains(o.longArg, name):
				if !eq {
					i++
					if i < len(args) && args[i].multi {
						return i, seen, fmt.Sprintf("the value of %s is only known at run time", name)
					}
				}
			default:
				return i, seen, "unknown option " + t
			}
			seen = append(seen, name)
		default:
			var p string
			i, seen, p = o.cluster(args, i, seen)
			if p != "" {
				return i, seen, p
			}
		}
	}
	return len(args), seen, ""
}

// cluster reads the short options of args[i] ("-abc", "-ofile").
func (o optSet) cluster(args []word, i int, seen []string) (int, []string, string) {
	t := args[i].text
	for j := 1; j < len(t); j++ {
		c := t[j]
		seen = append(seen, "-"+string(c))
		switch {
		case strings.IndexByte(o.short, c) >= 0:
			continue
		case strings.IndexByte(o.shortArg, c) >= 0:
			if j == len(t)-1 {
				i++
				if i < len(args) && args[i].multi {
					return i, seen, fmt.Sprintf("the value of -%c is only known at run time", c)
				}
			}
		case strings.IndexByte(o.shortOpt, c) >= 0:
		default:
			return i, seen, "unknown option -" + string(c)
		}
		break
	}
	return i, seen, ""
}

// argSpec describes the arguments of a read-only program that some options
// turn into a writer or a runner of other programs.
type argSpec struct {
	shortArg string   // short options taking a value
	longArg  []string // long options taking the next word as value (without "=")
	badShort string   // short options that write files or run programs
	badLong  []string // long options (or their abbreviations) that do
	bad      string   // what the bad options do, for the reason
	// maxOperands bounds the operands (uniq IN OUT writes OUT); 0 means
	// no bound, use noOperands for none.
	maxOperands int
	noOperands  bool
	operand     func(string) bool // an operand's check, when set
}

// check reports whether args keep the program read-only. A word only known
// at run time that could be an option makes it not read-only.
func (s argSpec) check(prog string, args []word) (bool, string) {
	operands, opts := 0, true
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.lit {
			if opts && w.flagish() {
				return false, fmt.Sprintf("%s may get an option only known at run time (%s)", prog, w.text)
			}
			operands++
			if w.multi && (s.noOperands || s.maxOperands > 0) {
				return false, fmt.Sprintf("%s may get several operands from %s", prog, w.text)
			}
			continue
		}
		t := w.text
		switch {
		case opts && t == "--":
			opts = false
		case opts && strings.HasPrefix(t, "--"):
			name, _, eq := strings.Cut(t[2:], "=")
			if name != "" && slices.ContainsFunc(s.badLong, func(b string) bool { return strings.HasPrefix(b, name) }) {
				return false, fmt.Sprintf("%s %s %s", prog, t, s.bad)
			}
			if !eq && slices.Contains(s.longArg, name) {
				i++
			}
		case opts && len(t) > 1 && t[0] == '-':
			for j := 1; j < len(t); j++ {
				if strings.IndexByte(s.badShort, t[j]) >= 0 {
					return false, fmt.Sprintf("%s -%c %s", prog, t[j], s.bad)
				}
				if strings.IndexByte(s.shortArg, t[j]) >= 0 {
					if j == len(t)-1 {
						i++
					}
					break
				}
			}
		default:
			operands++
			if s.operand != nil && !s.operand(t) {
				return false, fmt.Sprintf("%s %s %s", prog, t, s.bad)
			}
		}
	}
	if s.noOperands && operands > 0 || s.maxOperands > 0 && operands > s.maxOperands {
		return false, fmt.Sprintf("%s with %d operands %s", prog, operands, s.bad)
	}
	return true, ""
}
