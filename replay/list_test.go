package replay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

func TestTitle(t *testing.T) {
	tests := []struct{ prompt, want string }{
		{"", ""},
		{"list the files", "list the files"},
		{"\n\n  fix   the\tbuild  \nsecond line", "fix the build"},
		{"\x1b[31mred\x1b[0m alert\r\n", "red alert"},
		{"bell\a and \x1b]0;title\a osc", "bell and osc"},
		{strings.Repeat("word ", 30), strings.TrimSpace(strings.Repeat("word ", 16)) + "…"},
		{strings.Repeat("é", 100), strings.Repeat("é", 79) + "…"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
	}
	for _, tt := range tests {
		got := Title(tt.prompt)
		if got != tt.want {
			t.Errorf("Title(%q) = %q, want %q", tt.prompt, got, tt.want)
		}
		if n := len([]rune(got)); n > TitleMax {
			t.Errorf("Title(%q) has %d characters", tt.prompt, n)
		}
	}
}

// listStore makes sessions s1…s6 with modification times one minute apart
// (s6 newest) in cwds /a and /b, plus files List must leave out: s4 has had
// no turn.
func listStore(t *testing.T) (*Store, string) {
	s, state := newTestStore(t)
	dir := filepath.Join(state, "sessions")
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, cwd := range []string{"/a", "/b", "/a", "/a", "/b", "/a"} {
		id := "s" + string(rune('1'+i))
		j := mustCreate(t, s, id, cwd)
		if i != 3 { // s4 has no prompt yet
			mustAppend(t, j, event.UserPrompt{Text: "prompt of " + id + "\nmore"}, event.UserPrompt{Text: "second prompt"})
		}
		j.Close()
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, id+".jsonl"), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{"notes.txt": "x", ".hidden.jsonl": "x", "empty.jsonl": "", "junk.jsonl": "junk\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("s1.jsonl", filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func ids(sums []Summary) string {
	var out []string
	for _, s := range sums {
		out = append(out, s.ID)
	}
	return strings.Join(out, " ")
}

func TestList(t *testing.T) {
	s, _ := listStore(t)
	all, next, err := s.List("", "", 0)
	if err != nil || next != "" {
		t.Fatal(err, next)
	}
	if got := ids(all); got != "s6 s5 s3 s2 s1" {
		t.Errorf("all: %s", got)
	}
	s6 := all[0]
	if s6.Cwd != "/a" || s6.Title != "prompt of s6" || s6.Created.IsZero() || !s6.UpdatedAt.Equal(time.Date(2026, 5, 1, 0, 5, 0, 0, time.UTC)) {
		t.Errorf("summary %+v", s6)
	}
	if _, err := s.Load("s4"); err != nil {
		t.Errorf("the session without a turn, left out of the list, does not load: %v", err)
	}

	tests := []struct {
		cwd   string
		limit int
		pages []string
	}{
		{"", 2, []string{"s6 s5", "s3 s2", "s1"}},
		{"", 4, []string{"s6 s5 s3 s2", "s1"}},
		{"", 5, []string{"s6 s5 s3 s2 s1"}},
		{"/a", 2, []string{"s6 s3", "s1"}},
		{"/b", 1, []string{"s5", "s2"}},
		{"/c", 3, []string{""}},
		{"/a/", 3, []string{""}},
	}
	for _, tt := range tests {
		var pages []string
		cursor := ""
		for range 10 {
			page, next, err := s.List(tt.cwd, cursor, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, ids(page))
			if next == "" {
				break
			}
			cursor = next
		}
		if got, want := strings.Join(pages, " | "), strings.Join(tt.pages, " | "); got != want {
			t.Errorf("List(%q, limit %d) pages %q, want %q", tt.cwd, tt.limit, got, want)
		}
	}
}

func TestListCursorStable(t *testing.T) {
	s, dir := listStore(t)
	first, cursor, err := s.List("", "", 2)
	if err != nil || ids(first) != "s6 s5" {
		t.Fatal(ids(first), err)
	}
	// Between pages: a new session appears, and one of the next page is deleted.
	j := mustCreate(t, s, "s7", "/a")
	j.Close()
	newest := time.Date(2026, 5, 1, 1, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "s7.jsonl"), newest, newest); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "s3.jsonl")); err != nil {
		t.Fatal(err)
	}
	second, _, err := s.List("", cursor, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(second); got != "s2 s1" {
		t.Errorf("second page %q, want %q", got, "s2 s1")
	}
	for _, bad := range []string{"!!", "bm90IGEgY3Vyc29y", "MTIzLy4uL3g"} {
		if _, _, err := s.List("", bad, 2); !errors.Is(err, ErrBadCursor) {
			t.Errorf("List with cursor %q = %v", bad, err)
		}
	}
}
