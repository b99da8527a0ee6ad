package permission

import (
	"fmt"
	"strings"
)

// sedReadOnly judges sed: not -i/--in-place, not -f (a script we cannot
// see), and scripts without the commands that write files or run programs
// (w, W, e, and the w and e flags of s). --sandbox makes any script safe.
func sedReadOnly(prog string, args []word) (bool, string) {
	var scripts []string
	explicit, sandbox, opts := false, false, true
	takeScript := func(w word) (bool, string) {
		if !w.lit {
			return false, "the sed script " + w.text + " is only known at run time"
		}
		scripts = append(scripts, w.text)
		return true, ""
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case !w.lit && opts && w.flagish():
			return false, fmt.Sprintf("sed may get an option only known at run time (%s)", w.text)
		case opts && w.lit && w.text == "--":
			opts = false
		case opts && w.lit && strings.HasPrefix(w.text, "--"):
			name, val, eq := strings.Cut(w.text[2:], "=")
			switch {
			case name == "":
			case strings.HasPrefix("in-place", name):
				return false, "sed --in-place edits files"
			case strings.HasPrefix("file", name):
				return false, "sed --file runs a script that is not on the command line"
			case len(name) > 1 && strings.HasPrefix("sandbox", name):
				sandbox = true
			case strings.HasPrefix("expression", name):
				explicit = true
				if eq {
					scripts = append(scripts, val)
				} else if i+1 < len(args) {
					i++
					if ok, why := takeScript(args[i]); !ok {
						return false, why
					}
				}
			case strings.HasPrefix("line-length", name) && !eq:
				i++
			}
		case opts && w.isFlag():
			for j := 1; j < len(w.text); j++ {
				switch c := w.text[j]; c {
				case 'i':
					return false, "sed -i edits files in place"
				case 'f':
					return false, "sed -f runs a script that is not on the command line"
				case 'e', 'l':
					if c == 'e' {
						explicit = true
					}
					if j < len(w.text)-1 {
						if c == 'e' {
							scripts = append(scripts, w.text[j+1:])
						}
					} else if i+1 < len(args) {
						i++
						if c == 'e' {
							if ok, why := takeScript(args[i]); !ok {
								return false, why
							}
						}
					}
					j = len(w.text)
				case 'n', 'r', 'E', 's', 'u', 'z':
				default:
					return false, fmt.Sprintf("sed -%c is not judged", c)
				}
			}
		case !explicit && len(scripts) == 0:
			if ok, why := takeScript(w); !ok {
				return false, why
			}
		}
	}
	if sandbox {
		return true, ""
	}
	for _, s := range scripts {
		if !sedScriptReadOnly(s) {
			return false, "the sed script may write files or run commands (w, W, e)"
		}
	}
	return true, ""
}

// sedScriptReadOnly reports whether a sed script uses no command that
// writes a file or runs a program. Anything it does not understand counts
// as unsafe.
func sedScriptReadOnly(s string) bool {
	p := sedParser{s: s}
	for {
		p.skip(" \t\n;")
		if p.eof() {
			return true
		}
		if p.peek() == '#' {
			p.toEOL()
			continue
		}
		if !p.address() {
			return false
		}
		p.skip(" \t")
		if p.peek() == '!' {
			p.i++
			p.skip(" \t")
		}
		if p.eof() {
			return false
		}
		if !p.command() {
			return false
		}
	}
}

type sedParser struct {
	s string
	i int
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sedParser) skip(set string) {
	for !p.eof() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *sedParser) toEOL() {
	for !p.eof() && p.s[p.i] != '\n' {
		p.i++
	}
}

// delimited skips text up to an unescaped delim and the delim itself.
func (p *sedParser) delimited(delim byte) bool {
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '\\':
			p.i++
		case delim:
			return true
		}
	}
	return false
}

// address skips the command's addresses (none, one, or a range).
func (p *sedParser) address() bool {
	if !p.oneAddress(false) {
		return false
	}
	if p.peek() == ',' {
		p.i++
		return p.oneAddress(true)
	}
	return true
}

func (p *sedParser) oneAddress(second bool) bool {
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		p.skip("0123456789")
		if p.peek() == '~' {
			p.i++
			p.skip("0123456789")
		}
	case c == '$':
		p.i++
	case c == '/':
		p.i++
		if !p.delimited('/') {
			return false
		}
		p.skip("IM")
	case c == '\\':
		p.i += 2
		if p.i > len(p.s) || !p.delimited(p.s[p.i-1]) {
			return false
		}
		p.skip("IM")
	case second && (c == '+' || c == '~'):
		p.i++
		p.skip("0123456789")
	}
	return true
}

// command reads one command; false when it writes, runs or is unknown.
func (p *sedParser) command() bool {
	c := p.s[p.i]
	p.i++
	switch c {
	case '{', '}', '=', 'd', 'D', 'h', 'H', 'g', 'G', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		return true
	case 'l', 'q', 'Q', 'L':
		p.skip(" \t0123456789")
		return true
	case ':', 'b', 't', 'T', 'v':
		for !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != ';' {
			p.i++
		}
		return true
	case 'a', 'i', 'c':
		for !p.eof() && p.s[p.i] != '\n' { // text runs to the end of the line…
			if p.s[p.i] == '\\' {
				p.i++ // …and escaped newlines continue it
			}
			p.i++
		}
		return true
	case 'r', 'R':
		p.toEOL()
		return true
	case 's':
		return p.substitute()
	case 'y':
		if p.eof() {
			return false
		}
		d := p.s[p.i]
		p.i++
		return p.delimited(d) && p.delimited(d)
	}
	return false // w, W, e, and anything not understood
}

// substitute reads s/re/repl/flags; the w and e flags write or run.
func (p *sedParser) substitute() bool {
	if p.eof() {
		return false
	}
	d := p.s[p.i]
	if d == '\\' || d == '\n' {
		return false
	}
	p.i++
	if !p.delimited(d) || !p.delimited(d) {
		return false
	}
	for !p.eof() {
		switch c := p.s[p.i]; {
		case c == 'w' || c == 'e':
			return false
		case strings.IndexByte("gpiImM0123456789", c) >= 0:
			p.i++
		default:
			return true
		}
	}
	return true
}
