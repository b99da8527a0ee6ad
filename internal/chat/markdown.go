package chat

import (
	"regexp"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
)

// markdown styles the agent's markdown one whole line at a time, as it
// streams: it remembers only whether a code fence is open. Without colour
// a line is left as written (the raw markdown reads well enough), and only
// the hanging indent of a list item is worked out.
type markdown struct {
	fence string // the open fence's marker ("" outside a code block)
}

// mdPatterns are the patterns of markdown lines and spans, compiled on
// first use: not at the start of the daemon, which is the same binary.
type mdPatterns struct {
	fence, heading, item, quote, rule, bold, italic *regexp.Regexp
}

// mdOnce and mdCompiled hold the patterns: a zero sync.Once costs nothing
// at package initialisation, where sync.OnceValue allocates.
var (
	mdOnce     sync.Once
	mdCompiled *mdPatterns
)

// mdRE is the markdown patterns, compiled by the first call.
func mdRE() *mdPatterns {
	mdOnce.Do(func() { mdCompiled = compileMarkdown() })
	return mdCompiled
}

func compileMarkdown() *mdPatterns {
	return &mdPatterns{
		fence:   regexp.MustCompile("^\\s*(```+|~~~+)"),
		heading: regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`),
		item:    regexp.MustCompile(`^(\s*)([-*+]|\d{1,9}[.)])(\s+)`),
		quote:   regexp.MustCompile(`^\s*>\s?`),
		rule:    regexp.MustCompile(`^\s*(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$`),
		bold:    regexp.MustCompile(`\*\*([^*\s](?:[^*]*[^*\s])?)\*\*`),
		italic:  regexp.MustCompile(`(^|[^*\w])\*([^*\s](?:[^*]*[^*\s])?)\*`),
	}
}

// line is l styled with st, and the indent its continuation lines take.
func (m *markdown) line(l string, st style) (string, string) {
	if m.fence != "" {
		if strings.HasPrefix(strings.TrimSpace(l), m.fence) {
			m.fence = ""
			return st.dim + l + st.reset, ""
		}
		return st.cyan + l + st.reset, ""
	}
	if f := mdRE().fence.FindStringSubmatch(l); f != nil {
		m.fence = f[1]
		return st.dim + l + st.reset, ""
	}
	indent := ""
	if it := mdRE().item.FindStringSubmatch(l); it != nil {
		indent = strings.Repeat(" ", len(it[0]))
	}
	if st.bold == "" {
		return l, indent
	}
	switch {
	case mdRE().heading.MatchString(l):
		h := mdRE().heading.FindStringSubmatch(l)
		return st.bold + inline(h[2], st) + st.reset, ""
	case mdRE().rule.MatchString(l):
		return st.dim + strings.Repeat("─", 20) + st.reset, ""
	case mdRE().quote.MatchString(l):
		q := mdRE().quote.FindString(l)
		return st.dim + "▏ " + st.italic + inline(l[len(q):], st) + st.reset, "  "
	}
	if it := mdRE().item.FindStringSubmatch(l); it != nil {
		marker := it[2]
		if marker == "-" || marker == "*" || marker == "+" {
			marker = "•"
		}
		return it[1] + st.yellow + marker + st.reset + it[3] + inline(l[len(it[0]):], st), indent
	}
	return inline(l, st), ""
}

// inline styles `code`, **bold** and *italic* spans; nothing inside code
// is styled further.
func inline(s string, st style) string {
	var b strings.Builder
	for s != "" {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			b.WriteString(emphasis(s, st))
			break
		}
		j := strings.IndexByte(s[i+1:], '`')
		if j < 0 {
			b.WriteString(emphasis(s, st))
			break
		}
		b.WriteString(emphasis(s[:i], st))
		b.WriteString(st.cyan + s[i+1:i+1+j] + st.reset)
		s = s[i+2+j:]
	}
	return b.String()
}

func emphasis(s string, st style) string {
	s = mdRE().bold.ReplaceAllString(s, st.bold+"$1"+st.reset)
	return mdRE().italic.ReplaceAllString(s, "$1"+st.italic+"$2"+st.reset)
}

// wrap breaks s at word boundaries (inside a word only when the word alone
// is too long) into lines of at most width columns, escape sequences not
// counted; each continuation line starts with indent. width 0 leaves s
// as it is.
func wrap(s string, width int, indent string) string {
	if width <= 0 || ansi.StringWidth(s) <= width {
		return s
	}
	iw := ansi.StringWidth(indent)
	if width-iw < 10 {
		indent, iw = "", 0
	}
	lines := strings.Split(ansi.Wrap(s, width-iw, ""), "\n")
	for i := 1; i < len(lines); i++ {
		lines[i] = indent + lines[i]
	}
	return strings.Join(lines, "\n")
}

func displayWidth(s string) int { return ansi.StringWidth(s) }

// truncate cuts s to width columns, ending with … when it cut.
func truncate(s string, width int) string {
	if width <= 0 || ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}
