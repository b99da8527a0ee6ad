package chat

import "strings"

// A line diff for the change cards' unified diffs: the common prefix and
// suffix are trimmed, what is between is diffed with Myers' O(ND)
// algorithm, bounded so a huge or wholly rewritten file costs little (past
// the bound the middle is shown as removed, then added).

// diffOp is one line of a line diff: ' ' kept, '-' removed, '+' added.
type diffOp struct {
	kind byte
	text string
}

// diffWork bounds the Myers search: at most this many (N+M)·D steps, so
// diffing two 1 MiB files costs milliseconds, not seconds.
const diffWork = 4 << 20

// splitLines is s's lines without their newlines ("" has none; a last
// line without a newline still counts).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineDiff is the edit from a to b as kept, removed and added lines, in
// order: exact (shortest) where the edit distance of what lies between
// the common prefix and suffix is within diffWork, else that middle as
// removed then added.
func lineDiff(a, b []string) []diffOp {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	out := make([]diffOp, 0, len(a)+len(b)-p-s)
	for _, l := range a[:p] {
		out = append(out, diffOp{' ', l})
	}
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	if mid, ok := myers(ma, mb, max(32, diffWork/(len(ma)+len(mb)+1))); ok {
		out = append(out, mid...)
	} else {
		for _, l := range ma {
			out = append(out, diffOp{'-', l})
		}
		for _, l := range mb {
			out = append(out, diffOp{'+', l})
		}
	}
	for _, l := range a[len(a)-s:] {
		out = append(out, diffOp{' ', l})
	}
	return out
}

// myers is a shortest edit from a to b, or false when it takes more than
// maxD removed and added lines. It keeps each round's frontier (O(D²)
// memory) to walk the path back.
func myers(a, b []string, maxD int) ([]diffOp, bool) {
	n, m := len(a), len(b)
	maxD = min(maxD, n+m)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d]: v[-d-1 .. d+1] before round d
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			x := v[off+k-1] + 1 // a line of a removed
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // a line of b added
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b), true
			}
		}
	}
	return nil, false
}

// backtrack walks myers' frontiers back from the end of a and b.
func backtrack(trace [][]int, a, b []string) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d] // index k+d+1 holds diagonal k
		k := x - y
		prevK := k - 1
		if k == -d || (k != d && v[k-1+d+1] < v[k+1+d+1]) {
			prevK = k + 1
		}
		prevX := v[prevK+d+1]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, diffOp{' ', a[x-1]})
			x, y = x-1, y-1
		}
		if d == 0 {
			break
		}
		if x == prevX {
			rev = append(rev, diffOp{'+', b[y-1]})
		} else {
			rev = append(rev, diffOp{'-', a[x-1]})
		}
		x, y = prevX, prevY
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// hunk is one unified-diff hunk: its ops and where it starts in the old
// and new texts (1-based; 0 for an empty side, as diff -u writes it).
type hunk struct {
	oldStart, oldLines, newStart, newLines int
	ops                                    []diffOp
}

// diffContext is how many kept lines surround a change in a hunk.
const diffContext = 3

// hunks groups ops into unified-diff hunks with diffContext kept lines
// around each change; changes closer than twice that share a hunk.
func hunks(ops []diffOp) []hunk {
	var out []hunk
	oldLine, newLine := 1, 1 // the line numbers ops[i] is at
	olds, news := make([]int, len(ops)), make([]int, len(ops))
	for i, op := range ops {
		olds[i], news[i] = oldLine, newLine
		if op.kind != '+' {
			oldLine++
		}
		if op.kind != '-' {
			newLine++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-diffContext)
		end := i // one past the last change of the hunk
		for j := i; j < len(ops) && j < end+2*diffContext+1; j++ {
			if ops[j].kind != ' ' {
				end = j + 1
			}
		}
		stop := min(len(ops), end+diffContext)
		out = append(out, newHunk(ops[start:stop], olds[start], news[start]))
		i = stop
	}
	return out
}

// newHunk is the hunk of ops starting at the given old and new lines.
func newHunk(ops []diffOp, oldStart, newStart int) hunk {
	h := hunk{oldStart: oldStart, newStart: newStart, ops: ops}
	for _, op := range ops {
		if op.kind != '+' {
			h.oldLines++
		}
		if op.kind != '-' {
			h.newLines++
		}
	}
	if h.oldLines == 0 {
		h.oldStart-- // diff -u: an empty side starts at the line before
	}
	if h.newLines == 0 {
		h.newStart--
	}
	return h
}
