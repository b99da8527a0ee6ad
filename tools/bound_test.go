package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapText(t *testing.T) {
	if got, cut := CapText("short", 100, "/s"); got != "short" || cut {
		t.Errorf("uncut text changed: %q %v", got, cut)
	}
	long := strings.Repeat("é", 300) + "TAIL"
	got, cut := CapText(long, 200, "/spill/x.log")
	if !cut || utf8.RuneCountInString(got) > 200 || !utf8.ValidString(got) {
		t.Fatalf("cut=%v, %d runes, valid %v", cut, utf8.RuneCountInString(got), utf8.ValidString(got))
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ééé") || strings.Contains(got, "TAIL") ||
		lines[2] != "[output truncated; full output: /spill/x.log]" {
		t.Errorf("%q", got)
	}
	omitted := 304 - utf8.RuneCountInString(lines[0])
	if lines[1] != headOmission(omitted) {
		t.Errorf("omission line %q, want %d omitted", lines[1], omitted)
	}
	if got, _ := CapText(long, 10, ""); !strings.HasSuffix(got, "[output truncated; full output: (unavailable)]") {
		t.Errorf("a limit below the markers still keeps them: %q", got)
	}
	if got, cut := CapText(strings.Repeat("x", DefaultOutputLimit+1), 0, ""); !cut || utf8.RuneCountInString(got) > DefaultOutputLimit {
		t.Errorf("the default limit: cut=%v, %d runes", cut, utf8.RuneCountInString(got))
	}
}
