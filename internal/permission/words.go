package permission

import (
	"bytes"
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word is one shell word of a simple command, as far as it can be known
// without running anything.
type word struct {
	// text is the word's value when lit; otherwise its shell source.
	text string
	// lit reports that the value is fully known: literal text and quotes
	// only, no expansion of any kind.
	lit bool
	// multi reports that the word may expand to zero or several words
	// (unquoted expansions split into fields; brace expansion; "$@").
	multi bool
	// lead is the literal text the word is known to begin with (all of
	// text when lit).
	lead string
}

// flagish reports whether the word may begin with '-', i.e. whether a
// program could read it as an option.
func (w word) flagish() bool {
	return w.lead == "" || w.lead[0] == '-'
}

// isFlag reports whether the word is a literal that begins with '-' and is
// not the lone "-" (which programs read as stdin).
func (w word) isFlag() bool {
	return w.lit && len(w.text) > 1 && w.text[0] == '-'
}

func litWord(s string) word { return word{text: s, lit: true, lead: s} }

func litWords(ss []string) []word {
	out := make([]word, len(ss))
	for i, s := range ss {
		out[i] = litWord(s)
	}
	return out
}

// convertWords converts a simple command's arguments.
func convertWords(ws []*syntax.Word) []word {
	out := make([]word, len(ws))
	for i, w := range ws {
		out[i] = convertWord(w)
	}
	return out
}

// convertWord computes what can be known about w without expanding it.
func convertWord(w *syntax.Word) word {
	var (
		b       strings.Builder
		lit     = true
		multi   = hasBraceExpansion(w)
		lead    string
		leading = true // still inside the word's known leading text
	)
	known := func(s string) { b.WriteString(s) }
	unknown := func() {
		if leading {
			lead, leading = b.String(), false
		}
		lit = false
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			known(unescapeUnquoted(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				unknown() // $'…' escapes are not decoded here
				continue
			}
			known(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					known(unescapeDouble(l.Value))
					continue
				}
				unknown()
				if expandsToFields(q) {
					multi = true
				}
			}
		case *syntax.ProcSubst:
			unknown() // a single /dev/fd/N path
		default: // ParamExp, CmdSubst, ArithmExp, ExtGlob, unquoted
			unknown()
			multi = true
		}
	}
	if lit && !multi {
		s := b.String()
		return word{text: s, lit: true, lead: s}
	}
	if lit { // only a brace expansion hides the value; its first word is unknown
		return word{text: nodeSource(w), multi: true}
	}
	return word{text: nodeSource(w), multi: multi, lead: lead}
}

// hasBraceExpansion reports whether an unquoted part of w holds a brace
// expansion such as {a,b} or {1..3}. w is left untouched.
func hasBraceExpansion(w *syntax.Word) bool {
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		return false
	}
	return slices.ContainsFunc(cp.Parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.BraceExp)
		return ok
	})
}

// expandsToFields reports whether a part inside double quotes can still
// expand to several words: "$@", "${a[@]}", "${!prefix@}".
func expandsToFields(p syntax.WordPart) bool {
	pe, ok := p.(*syntax.ParamExp)
	if !ok {
		return false
	}
	if pe.Param != nil && pe.Param.Value == "@" {
		return true
	}
	if pe.Names != 0 {
		return true
	}
	if idx, ok := pe.Index.(*syntax.Word); ok && idx.Lit() == "@" {
		return true
	}
	return false
}

// unescapeUnquoted removes the backslashes of an unquoted literal.
func unescapeUnquoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that are special inside double
// quotes (before $ ` " \ and newline).
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return unescapeBefore(s, "$`\"\\")
}

// unescapeBefore removes each backslash that precedes one of special, and
// each backslash-newline pair (a line continuation).
func unescapeBefore(s, special string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch {
			case strings.IndexByte(special, s[i+1]) >= 0:
				i++
			case s[i+1] == '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// nodeSource prints a node back as shell source on one line.
func nodeSource(n syntax.Node) string {
	var buf bytes.Buffer
	if err := syntax.NewPrinter(syntax.SingleLine(true)).Print(&buf, n); err != nil {
		return "?"
	}
	return strings.TrimSpace(buf.String())
}

// quoteWord renders a literal value as a shell word.
func quoteWord(s string) string {
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil {
		return strconv.Quote(s)
	}
	return q
}

// displayWords renders words as a command line a user can read.
func displayWords(ws []word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		if w.lit {
			parts[i] = quoteWord(w.text)
		} else {
			parts[i] = w.text
		}
	}
	return strings.Join(parts, " ")
}

// joinRule renders rule words as a rule string; parseRule reads it back.
func joinRule(ws []string) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = quoteWord(w)
	}
	return strings.Join(parts, " ")
}

// systemDirs are the directories whose programs are judged by their base
// name: /usr/bin/git is git, ./git is not.
var systemDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/usr/local/bin": true,
	"/sbin": true, "/usr/sbin": true, "/usr/local/sbin": true,
	"/opt/homebrew/bin": true,
}

// programName is the name a command word is judged by: the word itself
// when it has no slash, its base name when it lies in a system directory,
// and the whole path otherwise (which matches no built-in table).
func programName(s string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	if systemDirs[path.Dir(s)] {
		return path.Base(s)
	}
	return s
}
