package permission

import "testing"

// FuzzDecide checks that Decide never panics on any input and keeps its
// promises: a valid decision with a reason; prefixes only when asking,
// and a remembered prefix allows the same command; read-only mode allows
// only what Analyze proves read-only; a deny rule naming a contained
// command's program always denies.
func FuzzDecide(f *testing.F) {
	for _, c := range classificationCases {
		f.Add(c.cmd, uint8(0), "go test", "rm -rf")
	}
	for _, s := range []string{"", "\x00", "$(", "`", "<<", "a=(", "${x", "[[", "((", "case", "if", "\\", "'", "\"",
		"f() {", "<(", ">(", "{a,b}", "$'\\x72m' -rf /", "bash <<EOF\n", "eval '", "sh -c", "xargs -I", "find -exec"} {
		f.Add(s, uint8(1), s, s)
	}
	modes := Modes()
	f.Fuzz(func(t *testing.T, cmd string, m uint8, allow, deny string) {
		mode := modes[int(m)%len(modes)]
		rules := Rules{Allow: []string{allow}, Deny: []string{deny}}
		v := Decide(mode, rules, []string{allow}, cmd)
		if v.Decision > Deny || v.Reason == "" {
			t.Fatalf("invalid verdict %+v", v)
		}
		if len(v.Prefixes) > 0 {
			if v.Decision != Ask || len(v.Prefixes) != 1 {
				t.Fatalf("prefixes %q with %v", v.Prefixes, v)
			}
			if _, err := NormalizeRule(v.Prefixes[0]); err != nil {
				t.Fatalf("prefix %q does not parse: %v", v.Prefixes[0], err)
			}
			if again := Decide(mode, rules, append([]string{allow}, v.Prefixes...), cmd); again.Decision != Allow {
				t.Fatalf("always-allow %q then %v", v.Prefixes, again)
			}
		}
		an := Analyze(cmd)
		if v := Decide(ModeReadOnly, Rules{}, nil, cmd); (v.Decision == Allow) != an.ReadOnly {
			t.Fatalf("read-only mode %v but ReadOnly=%v", v, an.ReadOnly)
		}
		if an.ReadOnly {
			if v := Decide(ModeAsk, Rules{}, nil, cmd); v.Decision != Allow {
				t.Fatalf("read-only command asked: %v", v)
			}
		}
		for _, words := range an.Commands {
			prog := ruleString(words[:1])
			if prog == "" {
				continue
			}
			for _, md := range modes {
				if v := Decide(md, Rules{Allow: []string{prog}, Deny: []string{prog}}, []string{prog}, cmd); v.Decision != Deny {
					t.Fatalf("%s: deny %q on %q: %v", md, prog, cmd, v)
				}
			}
		}
		if !an.Judgeable && an.ReadOnly {
			t.Fatalf("unjudgeable yet read-only: %+v", an)
		}
	})
}
