package permission

import (
	"strings"
	"testing"
)

func BenchmarkDecideTypical(b *testing.B) {
	rules := Rules{Allow: []string{"go test", "npm run build"}, Deny: []string{"rm -rf", "git push --force", "curl"}}
	cmd := "cd sub && git status --short && go test ./... 2>&1 | tail -20"
	for b.Loop() {
		Decide(ModeAsk, rules, []string{"make build"}, cmd)
	}
}

func BenchmarkDecideLargest(b *testing.B) {
	rules := Rules{Deny: []string{"rm -rf", "curl"}}
	cmd := strings.Repeat("rm a b c d e f; ", maxCommandBytes/16)
	for b.Loop() {
		Decide(ModeAsk, rules, nil, cmd)
	}
}
