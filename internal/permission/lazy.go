package permission

import (
	"regexp"
	"sync"
	"sync/atomic"
)

// The judge's built-in tables (the read-only list, the subcommands of git,
// go, pip and docker, the wrappers), its option allowlists and its regular
// expressions are built on first use, not at package init: a process that
// links the package but judges nothing (a daemon answering initialize)
// never pays for them, and a judgement builds only what it reads.

// built counts the tables, allowlists and expressions built so far.
var built atomic.Int64

// lazyTable returns a function that builds its value on the first call
// and returns that same value on every call; safe for concurrent use.
func lazyTable[T any](build func() T) func() T {
	return sync.OnceValue(func() T {
		built.Add(1)
		return build()
	})
}

// lazyRegexp is regexp.MustCompile(expr), compiled on first use.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return lazyTable(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// TablesBuilt reports how many of the judge's built-in tables, option
// allowlists and regular expressions have been built so far. It is 0 until
// the first judgement (package init builds none); each is built once, when
// a judgement first needs it. For start-up diagnostics and tests.
func TablesBuilt() int { return int(built.Load()) }
