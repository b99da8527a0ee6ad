package permission

import (
	"bytes"
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// word is one shell word of a simple command, as far as it can be known
// without running anything.
type word struct {
	// text is the word's value when lit; otherwise its shell source.
	text string
	// lit reports that the value is fully known: literal text and quotes
	// only, no expansion of any kind (no parameter, command, arithmetic,
	// tilde, brace or pathname expansion).
	lit bool
	// multi reports that the word may expand to zero or several words
	// (unquoted expansions split into fields; brace expansion; globs;
	// "$@").
	multi bool
	// lead is the literal text the word is known to begin with (all of
	// text when lit).
	lead string
	// noOpt reports that the word is known not to begin with '-' although
	// its lead is empty (~ and ~/x expand to the home directory, <(…) to
	// /dev/fd/N).
	noOpt bool
}

// flagish reports whether the word may begin with '-', i.e. whether a
// program could read it as an option.
func (w word) flagish() bool {
	if w.noOpt {
		return false
	}
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
// Only parts positively known to be literal make a literal word; their
// value is computed by mvdan.cc/sh/v3/expand (quote removal, $'…'
// escapes), never by hand.
func convertWord(w *syntax.Word) word {
	if w == nil {
		return litWord("")
	}
	if len(w.Parts) == 1 {
		// The common case: one plain literal, nothing to expand or remove.
		if l, ok := w.Parts[0].(*syntax.Lit); ok && !strings.ContainsAny(l.Value, "\\~*?[{") {
			return litWord(l.Value)
		}
	}
	if hasBraceExpansion(w) {
		return word{text: nodeSource(w), multi: true}
	}
	out := word{lit: true}
	var known []syntax.WordPart // the leading literal parts
	leading := true
	stop := func() {
		out.lit = false
		leading = false
	}
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				stop()
				out.multi = false
				out.noOpt = homeTilde(p.Value)
				continue
			}
			if at := globMeta(p.Value); at >= 0 {
				if leading && at > 0 {
					known = append(known, &syntax.Lit{Value: p.Value[:at]})
				}
				stop()
				out.multi = true
				continue
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for j, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); ok {
					continue
				}
				if leading && j > 0 {
					known = append(known, &syntax.DblQuoted{Parts: p.Parts[:j]})
				}
				stop()
				for _, r := range p.Parts[j:] {
					if expandsToFields(r) {
						out.multi = true
					}
				}
				break
			}
			if !leading {
				continue
			}
		case *syntax.ProcSubst:
			if leading && len(known) == 0 {
				out.noOpt = true // a /dev/fd/N path
			}
			stop()
			continue
		default: // ParamExp, CmdSubst, ArithmExp, ExtGlob: unquoted, split into fields
			stop()
			out.multi = true
			continue
		}
		if leading {
			known = append(known, part)
		}
	}
	if out.lit {
		v, ok := literalValue(w.Parts)
		if !ok {
			return word{text: nodeSource(w)}
		}
		return litWord(v)
	}
	out.text = nodeSource(w)
	if len(known) > 0 {
		if v, ok := literalValue(known); ok {
			out.lead = v
		}
	}
	return out
}

// literalValue is the value of literal parts, by mvdan.cc/sh/v3/expand
// with no environment: quote removal and the escapes of $'…'. ok is false
// if expansion fails or yields other than one field.
func literalValue(parts []syntax.WordPart) (string, bool) {
	fields, err := expand.Fields(&expand.Config{}, &syntax.Word{Parts: parts})
	if err != nil || len(fields) != 1 {
		return "", false
	}
	return fields[0], true
}

// globMeta returns the index of the first unescaped pathname-expansion
// character of an unquoted literal (*, ?, or a [ closed by a later ]), or
// -1.
func globMeta(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?':
			return i
		case '[':
			if strings.IndexByte(s[i+1:], ']') >= 0 {
				return i
			}
		}
	}
	return -1
}

// homeTilde reports whether an unquoted word beginning with ~ expands to
// a home directory (~, ~/x, ~user/x), which never begins with '-'. ~+,
// ~- and ~N expand to $PWD, $OLDPWD and the directory stack, which a
// script can set to anything.
func homeTilde(s string) bool {
	prefix, _, _ := strings.Cut(s[1:], "/")
	if prefix == "" {
		return true
	}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		if c != '_' && c != '.' && c != '-' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return prefix[0] != '-' && prefix[0] != '+' && (prefix[0] < '0' || prefix[0] > '9')
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
var systemDirs = lazyTable(func() map[string]bool {
	return map[string]bool{
		"/bin": true, "/usr/bin": true, "/usr/local/bin": true,
		"/sbin": true, "/usr/sbin": true, "/usr/local/sbin": true,
		"/opt/homebrew/bin": true,
	}
})

// programName is the name a command word is judged by: the word itself
// when it has no slash, its base name when it lies in a system directory,
// and the whole path otherwise (which matches no built-in table).
func programName(s string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	if systemDirs()[path.Dir(s)] {
		return path.Base(s)
	}
	return s
}
