package chat

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lcs is the length of a longest common subsequence of a and b.
func lcs(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// randomLines is n lines drawn from a few, so texts share many.
func randomLines(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a' + rng.IntN(4)))
	}
	return out
}

// The diff of any two texts gives back both texts and is shortest: it
// keeps as many lines as a longest common subsequence has.
func TestLineDiffIsShortest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		a, b := randomLines(rng, rng.IntN(20)), randomLines(rng, rng.IntN(20))
		ops := lineDiff(a, b)
		var gotA, gotB []string
		kept := 0
		for _, op := range ops {
			if op.kind != '+' {
				gotA = append(gotA, op.text)
			}
			if op.kind != '-' {
				gotB = append(gotB, op.text)
			}
			kept += b2i(op.kind == ' ')
		}
		if strings.Join(gotA, ",") != strings.Join(a, ",") || strings.Join(gotB, ",") != strings.Join(b, ",") {
			t.Fatalf("diff of %q and %q is %v: does not give them back", a, b, ops)
		}
		if want := lcs(a, b); kept != want {
			t.Fatalf("diff of %q and %q keeps %d lines, a longest common subsequence %d", a, b, kept, want)
		}
	}
}

// unified writes hunks as a unified diff of a file.
func unified(name string, hs []hunk) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	for _, h := range hs {
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", span(h.oldStart, h.oldLines), span(h.newStart, h.newLines))
		for _, op := range h.ops {
			fmt.Fprintf(&b, "%c%s\n", op.kind, op.text)
		}
	}
	return b.String()
}

// The hunks are a unified diff the real patch(1) applies: old patched
// with them is new, for edits at the start, the end, the middle, close
// together and far apart, from and to empty files.
func TestHunksApplyWithPatch(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("patch(1) is not installed")
		}
		t.Skip("patch(1) is not installed")
	}
	numbered := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("line %d", i+1)
		}
		return out
	}
	edit := func(lines []string, f func([]string) []string) []string {
		return f(append([]string(nil), lines...))
	}
	base := numbered(40)
	rng := rand.New(rand.NewPCG(3, 4))
	cases := map[string][2][]string{
		"first line":  {base, edit(base, func(l []string) []string { l[0] = "FIRST"; return l })},
		"last line":   {base, edit(base, func(l []string) []string { return append(l, "appended") })},
		"near edits":  {base, edit(base, func(l []string) []string { l[10], l[15] = "x", "y"; return l })},
		"far edits":   {base, edit(base, func(l []string) []string { l[2], l[30] = "x", "y"; return append(l[:20], l[22:]...) })},
		"created":     {nil, numbered(5)},
		"emptied":     {numbered(5), nil},
		"rewritten":   {numbered(8), randomLines(rng, 12)},
		"interleaved": {randomLines(rng, 60), randomLines(rng, 60)},
	}
	dir := t.TempDir()
	for name, c := range cases {
		oldPath := filepath.Join(dir, "file")
		if err := os.WriteFile(oldPath, []byte(joinLines(c[0])), 0o600); err != nil {
			t.Fatal(err)
		}
		diff := unified("file", hunks(lineDiff(c[0], c[1])))
		cmd := exec.Command("patch", "--quiet", "--force", "--posix", oldPath)
		cmd.Stdin = strings.NewReader(diff)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: patch: %v %s\n%s", name, err, out, diff)
			continue
		}
		got, _ := os.ReadFile(oldPath)
		if string(got) != joinLines(c[1]) {
			t.Errorf("%s: patched to\n%s\nwant\n%s\ndiff:\n%s", name, got, joinLines(c[1]), diff)
		}
	}
}

func joinLines(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return strings.Join(l, "\n") + "\n"
}

// Two unrelated texts of 20 000 lines each (a rewrite) are diffed within
// the work bound: the middle is shown as removed then added, quickly.
func TestLineDiffBoundedOnRewrites(t *testing.T) {
	a, b := make([]string, 20000), make([]string, 20000)
	for i := range a {
		a[i], b[i] = fmt.Sprintf("old %d", i), fmt.Sprintf("new %d", i)
	}
	start := time.Now()
	ops := lineDiff(a, b)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("diffing two rewritten 20 000-line texts took %v", d)
	}
	if len(ops) != 40000 || ops[0] != (diffOp{'-', "old 0"}) || ops[20000] != (diffOp{'+', "new 0"}) {
		t.Errorf("%d ops, first %v", len(ops), ops[0])
	}
}
