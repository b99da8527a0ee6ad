package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// NamePrefix starts the name under which every MCP tool is offered to the
// model: mcp__<server>__<tool>.
const NamePrefix = "mcp__"

// maxName is the longest tool name providers accept (OpenAI's and
// DeepSeek's ^[a-zA-Z0-9_-]{1,64}$).
const maxName = 64

// IsToolName reports whether name is one this package gives MCP tools.
func IsToolName(name string) bool { return strings.HasPrefix(name, NamePrefix) }

// sanitize maps s into the providers' charset: every byte outside
// [A-Za-z0-9_-] (a multi-byte rune counts once) becomes '_'; "" becomes "_".
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// namer hands out tool names for one session. Given the same servers and
// tools in the same order it gives the same names: a tool keeps
// mcp__<server>__<tool> (sanitized) when that fits in 64 characters and is
// free; otherwise the name is cut and ends with a short hash of the real
// server and tool names, and, if even that is taken, a counter.
type namer struct{ taken map[string]bool }

func newNamer() *namer { return &namer{taken: map[string]bool{}} }

// name returns the name for tool of server and marks it taken.
func (n *namer) name(server, tool string) string {
	base := NamePrefix + sanitize(server) + "__" + sanitize(tool)
	if len(base) <= maxName && !n.taken[base] {
		n.taken[base] = true
		return base
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	hash := hex.EncodeToString(sum[:3])
	for i := 1; ; i++ {
		suffix := "_" + hash
		if i > 1 {
			suffix = fmt.Sprintf("_%s_%d", hash, i)
		}
		cand := base[:min(len(base), maxName-len(suffix))] + suffix
		if !n.taken[cand] {
			n.taken[cand] = true
			return cand
		}
	}
}

// splitName recovers the server and tool parts of a name this package
// gave, as sanitized: "mcp__github__list_issues" → "github",
// "list_issues". ok is false for a name without the prefix or separator.
func splitName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, NamePrefix)
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}
