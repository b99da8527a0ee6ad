package tools_test

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/tools"
)

func TestCleanTerminalText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello\nworld\n", "hello\nworld\n"},
		{"SGR colours", "\x1b[1;31merror\x1b[0m: x", "error: x"},
		{"cursor movement and erase", "a\x1b[2K\x1b[1Gb\x1b[?25l", "ab"},
		{"OSC title with BEL", "\x1b]0;my title\x07text", "text"},
		{"OSC hyperlink with ST", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"charset and keypad escapes", "\x1b(Bx\x1b=y\x1b7z", "xyz"},
		{"DCS string", "\x1bPq#0;2;0;0;0\x1b\\after", "after"},
		{"C1 CSI", "\u009b31mred", "red"},
		{"unterminated CSI at the end", "ok\x1b[31", "ok"},
		{"lone ESC at the end", "ok\x1b", "ok"},
		{"progress redraws: the last segment wins", "10%\r50%\r100%\ndone", "100%\ndone"},
		{"CRLF is a newline", "a\r\nb\r\n", "a\nb\n"},
		{"trailing CR keeps the line", "building...\r\n", "building...\n"},
		{"bare trailing CR", "50%\r100%\r", "100%"},
		{"backspace erases", "ab\bc", "ac"},
		{"other controls dropped, tab kept", "a\x00b\tc\x07", "ab\tc"},
		{"invalid UTF-8 replaced", "a\xffb", "a\uFFFDb"},
		{"multibyte preserved", "héllo ✓ 日本", "héllo ✓ 日本"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tools.CleanTerminalText(tt.in); got != tt.want {
				t.Errorf("CleanTerminalText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ls\n", "```console\nls\n```"},
		{"a ``` b", "````console\na ``` b\n````"},
		{"`````", "``````console\n`````\n``````"},
	}
	for _, tt := range tests {
		if got := tools.Fence("console", tt.in); got != tt.want {
			t.Errorf("Fence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
