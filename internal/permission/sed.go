package permission

import "strings"

// sedSpec is sed's option allowlist: not -i/--in-place (edits files),
// not -f/--file (a script not on the command line).
var sedSpec = newSpec(styleGNU, "-n -E -r -s -u -z -e: -l: --quiet --silent --expression: --regexp-extended --separate "+
	"--unbuffered --null-data --line-length: --posix --sandbox --debug --follow-symlinks --help --version")

// sedReadOnly judges sed: options on the allowlist, and scripts without
// the commands that write files or run programs (w, W, e, and the w and
// e flags of s). --sandbox makes any script safe. A script that branches
// may loop forever.
func sedReadOnly(prog string, args []word, open bool) roResult {
	if open {
		return notRO("sed receives more arguments at run time (xargs)")
	}
	sc := sedSpec.scan(prog, args)
	if sc.problem != "" {
		return notRO("%s", sc.problem)
	}
	var scripts []word
	files := sc.operands
	for _, o := range sc.opts {
		if (o.name == "-e" || o.name == "--expression") && o.val != nil {
			scripts = append(scripts, *o.val)
		}
	}
	if len(scripts) == 0 && len(files) > 0 {
		scripts, files = files[:1], files[1:]
	}
	r := roResult{ok: true}
	for _, f := range files {
		if f.lit {
			r.files = append(r.files, f.text)
			if endlessPath(f.text) {
				r.forever = "sed reads " + f.text + ", which may never end"
			}
		}
	}
	for _, w := range scripts {
		if !w.lit {
			return notRO("the sed script %s is only known at run time", w.text)
		}
		ok, loops := sedScriptReadOnly(w.text)
		if !ok && !sc.has("--sandbox") {
			return notRO("the sed script may write files or run commands (w, W, e)")
		}
		if loops {
			r.forever = "a sed script that branches may loop forever"
		}
	}
	return r
}

// sedScriptReadOnly reports whether a sed script uses no command that
// writes a file or runs a program. Anything it does not understand counts
// as unsafe.
func sedScriptReadOnly(s string) (ok, loops bool) {
	p := sedParser{s: s}
	for {
		p.skip(" \t\n;")
		if p.eof() {
			return true, p.loops
		}
		if p.peek() == '#' {
			p.toEOL()
			continue
		}
		if !p.address() {
			return false, p.loops
		}
		p.skip(" \t")
		if p.peek() == '!' {
			p.i++
			p.skip(" \t")
		}
		if p.eof() || !p.command() {
			return false, p.loops
		}
	}
}

type sedParser struct {
	s     string
	i     int
	loops bool // a branch command (b, t, T) was seen
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
		if c != ':' && c != 'v' {
			p.loops = true
		}
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
