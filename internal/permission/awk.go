package permission

import "strings"

// awkSpec is awk's option allowlist (gawk, mawk, busybox and one-true-awk
// options that only change parsing or numbers). -f, -e, -i and -l load
// code; -d, -o and -p write files; -W is mawk's gateway to -W exec.
var awkSpec = newSpec(stylePOSIX, "-F: -v: -b -c -P -r -S -M -n -N -s -t -V -h -C --field-separator: --assign: "+
	"--characters-as-bytes --traditional --posix --re-interval --sandbox --bignum --non-decimal-data "+
	"--use-lc-numeric --optimize --no-optimize --version --help --copyright")

// awkReadOnly judges awk: options on the allowlist and a literal program
// that neither redirects output, pipes, reads files with getline, calls
// system() nor loads code. --sandbox (gawk) forbids all of that itself.
func awkReadOnly(prog string, args []word, open bool) roResult {
	if open {
		return notRO("%s receives more arguments at run time (xargs)", prog)
	}
	sc := awkSpec.scan(prog, args)
	if sc.problem != "" {
		return notRO("%s", sc.problem)
	}
	if sc.has("--version", "-V", "--help", "-h", "--copyright", "-C") || len(sc.operands) == 0 {
		return roResult{ok: true}
	}
	program, files := sc.operands[0], sc.operands[1:]
	if !program.lit {
		return notRO("%s: the program %s is only known at run time", prog, program.text)
	}
	safe, loops := awkProgramReadOnly(program.text)
	if !safe && !sc.has("--sandbox") {
		return notRO("%s: the program may write files or run commands (print >, |, getline <, system, @)", prog)
	}
	r := roResult{ok: true}
	if loops {
		r.forever = "an awk program with a loop may never end"
	}
	for _, f := range files {
		if f.lit && !strings.Contains(f.text, "=") {
			r.files = append(r.files, f.text)
			if endlessPath(f.text) {
				r.forever = prog + " reads " + f.text + ", which may never end"
			}
		}
	}
	return r
}

// awkToken is one token of an awk program.
type awkToken struct {
	kind byte   // 'i' identifier, 'n' number, 's' string, 'r' regex, 'o' operator, '\n' newline
	text string // identifier or operator
}

// awkLex splits an awk program into tokens, telling regular expressions
// from division by what comes before them. ok is false for a program it
// cannot read (an unterminated string or regex).
func awkLex(p string) (toks []awkToken, ok bool) {
	regexOK := true
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '\\' && i+1 < len(p) && p[i+1] == '\n':
			i += 2
			continue
		case c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
			continue
		case c == '\n':
			toks = append(toks, awkToken{kind: '\n'})
			i++
			regexOK = true
			continue
		case c == '"' || c == '/' && regexOK:
			j := i + 1
			inClass := false
			for ; j < len(p); j++ {
				if p[j] == '\\' {
					j++
					continue
				}
				if p[j] == '\n' {
					return nil, false
				}
				if c == '/' && p[j] == '[' {
					inClass = true
				} else if c == '/' && p[j] == ']' {
					inClass = false
				}
				if p[j] == c && !inClass {
					break
				}
			}
			if j >= len(p) {
				return nil, false
			}
			kind := byte('s')
			if c == '/' {
				kind = 'r'
			}
			toks = append(toks, awkToken{kind: kind})
			i = j + 1
			regexOK = false
			continue
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(p) && (p[j] == '_' || p[j] >= 'a' && p[j] <= 'z' || p[j] >= 'A' && p[j] <= 'Z' || p[j] >= '0' && p[j] <= '9') {
				j++
			}
			id := p[i:j]
			toks = append(toks, awkToken{kind: 'i', text: id})
			i = j
			switch id {
			case "print", "printf", "return", "in", "do", "else", "case", "getline":
				regexOK = true
			default:
				regexOK = false
			}
			continue
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(p) && (p[j] >= '0' && p[j] <= '9' || p[j] == '.' || p[j] == 'e' || p[j] == 'E' || p[j] == 'x' || p[j] >= 'a' && p[j] <= 'f') {
				j++
			}
			toks = append(toks, awkToken{kind: 'n'})
			i = j
			regexOK = false
			continue
		}
		op := string(c)
		if i+1 < len(p) {
			switch two := p[i : i+2]; two {
			case ">>", ">=", "<=", "==", "!=", "!~", "&&", "||", "|&", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "**":
				op = two
			}
		}
		toks = append(toks, awkToken{kind: 'o', text: op})
		i += len(op)
		regexOK = op != ")" && op != "]" && op != "$" && op != "++" && op != "--"
	}
	return toks, true
}

// awkProgramReadOnly reports whether an awk program cannot write a file,
// run a command or read a file it names: no output redirection in print
// or printf (a '>' at the statement's own parenthesis level; comparisons
// elsewhere are fine), no pipe, no getline from a file, no system(), no
// extension(), no @ (gawk's @load, @include and indirect calls). loops
// reports a while, do or C-style for loop, which may never end.
func awkProgramReadOnly(p string) (safe, loops bool) {
	toks, ok := awkLex(p)
	if !ok {
		return false, false
	}
	depth := 0
	printAt, getlineAt := -1, -1 // the depth of the current print / getline, -1 when none
	for i, t := range toks {
		switch {
		case t.kind == 'i' && (t.text == "system" || t.text == "extension"):
			return false, loops
		case t.kind == 'i' && (t.text == "print" || t.text == "printf"):
			printAt = depth
		case t.kind == 'i' && t.text == "getline":
			getlineAt = depth
		case t.kind == 'i' && (t.text == "while" || t.text == "do"):
			loops = true
		case t.kind == 'i' && t.text == "for":
			if awkCStyleFor(toks[i+1:]) {
				loops = true
			}
		case t.kind == '\n' || t.kind == 'o' && (t.text == ";" || t.text == "{" || t.text == "}"):
			printAt, getlineAt = -1, -1
		case t.kind != 'o':
		case t.text == "(" || t.text == "[":
			depth++
		case t.text == ")" || t.text == "]":
			depth--
			if depth < printAt {
				printAt = -1
			}
			if depth < getlineAt {
				getlineAt = -1
			}
		case t.text == "|" || t.text == "|&" || t.text == "@":
			return false, loops
		case (t.text == ">" || t.text == ">>") && printAt == depth:
			return false, loops
		case t.text == "<" && getlineAt == depth:
			return false, loops
		}
	}
	return true, loops
}

// awkCStyleFor reports whether the tokens after "for" open a C-style
// loop (a ';' inside its parentheses) rather than for (k in a).
func awkCStyleFor(toks []awkToken) bool {
	depth := 0
	for _, t := range toks {
		if t.kind != 'o' {
			continue
		}
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return false
			}
		case ";":
			if depth == 1 {
				return true
			}
		}
	}
	return false
}
