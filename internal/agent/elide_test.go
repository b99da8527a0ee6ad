package agent

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func numbered(n int, format string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

func TestElide(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name string
		in   string
		want string // exact result; "" means unchanged
	}{
		{name: "short output stays", in: "a\nb\nc\n"},
		{name: "eleven lines stay: nothing worth cutting", in: numbered(11, "line %d\n")},
		{
			name: "many lines keep head and tail",
			in:   numbered(40, "line %02d\n") + "[exit code: 1]",
			want: numbered(5, "line %02d\n") +
				"[… compacted: 30 lines (240 bytes) of this old output were elided to save context; run the command again if you need them]\n" +
				"line 36\nline 37\nline 38\nline 39\nline 40\n[exit code: 1]",
		},
		{
			name: "the spill file is named",
			in:   numbered(80, "line %02d\n") + "[exit code: 0]\n[output truncated; full output: /state/spill/s/bash-1.log]",
			want: numbered(5, "line %02d\n") +
				"[… compacted: 70 lines (560 bytes) of this old output were elided to save context; the full output may still be in /state/spill/s/bash-1.log]\n" +
				"line 76\nline 77\nline 78\nline 79\nline 80\n[exit code: 0]\n[output truncated; full output: /state/spill/s/bash-1.log]",
		},
		{
			name: "an unavailable spill file is not named",
			in:   numbered(40, "line %02d\n") + "[output truncated; full output: (unavailable)]",
			want: numbered(5, "line %02d\n") +
				"[… compacted: 30 lines (240 bytes) of this old output were elided to save context; run the command again if you need them]\n" +
				"line 36\nline 37\nline 38\nline 39\nline 40\n[output truncated; full output: (unavailable)]",
		},
		{
			name: "one huge line is cut both ends",
			in:   long,
			want: strings.Repeat("x", 240) + "…\n[… compacted: 4757 bytes of this old output's long lines were elided to save context; run the command again if you need them]",
		},
		{
			name: "already elided stays",
			in:   "a\n[… compacted: 3 lines (9 bytes) of this old output were elided to save context; run the command again if you need them]\nz",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			got := elide(tt.in)
			if got != want {
				t.Errorf("elide:\n%s\nwant:\n%s", got, want)
			}
			if elide(got) != got {
				t.Errorf("elide is not idempotent on %q", got)
			}
		})
	}
}

func TestElideKeepsUTF8(t *testing.T) {
	in := strings.Repeat("é", 3000) + "\n" + numbered(30, "ligne %d\n")
	got := elide(in)
	if !utf8.ValidString(got) || len(got) >= len(in)/2 {
		t.Errorf("elide gave %d valid=%v bytes of %d", len(got), utf8.ValidString(got), len(in))
	}
}

func FuzzElide(f *testing.F) {
	f.Add(numbered(40, "line %02d\n") + "[output truncated; full output: /x]")
	f.Add(strings.Repeat("ü", 400))
	f.Add("\n\n\n\n\n\n\n\n\n\n\n\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		got := elide(s)
		if len(got) > len(s) {
			t.Fatalf("elide grew %d bytes to %d", len(s), len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("elide broke UTF-8: %q", got)
		}
		if elide(got) != got {
			t.Fatalf("not idempotent: %q", got)
		}
	})
}
