package permission

import (
	"errors"
	"testing"
)

// firstCommand is the first command item of a command line.
func firstCommand(t *testing.T, cmd string) item {
	t.Helper()
	for _, it := range analyze(cmd).items {
		if it.kind != kindEffect {
			return it
		}
	}
	t.Fatalf("no command in %q", cmd)
	return item{}
}

func TestAllowRuleIsWordPrefix(t *testing.T) {
	cases := []struct {
		rule, cmd string
		want      bool
	}{
		{"git status", "git status", true},
		{"git status", "git status -s", true},
		{"git status", "git statusx", false},
		{"git status", "git", false},
		{"git status", "git -C sub status", true},
		{"git status", "git --no-pager status", true},
		{"git status", "git -c x=y status", false},
		{"git status", "/usr/bin/git status", false},
		{"git --no-pager log", "git log -1", true},
		{"go test", "go -C mod test ./...", true},
		{"go test", "go $SUB", false},
		{"npm run build", "npm run build -- --prod", true},
		{"npm run build", "npm run build:prod", false},
		{"grep 'a b'", "grep 'a b' file", true},
		{"grep 'a b'", "grep a b", false},
		{"./build.sh", "./build.sh --fast", true},
		{"make", "make anything", true},
	}
	for _, c := range cases {
		rs := compileRules([]string{c.rule})
		if len(rs) != 1 {
			t.Fatalf("rule %q did not compile", c.rule)
		}
		if got := rs[0].allows(firstCommand(t, c.cmd)); got != c.want {
			t.Errorf("allow %q on %q = %v, want %v", c.rule, c.cmd, got, c.want)
		}
	}
}

func TestDenyRuleMatching(t *testing.T) {
	cases := []struct {
		rule, cmd string
		want      match
	}{
		{"rm", "rm x", matches},
		{"rm", "/bin/rm x", matches},
		{"rm", "./rm x", matches},
		{"/bin/rm", "rm x", noMatch},
		{"rm -rf", "rm -rf /", matches},
		{"rm -rf", "rm -fr /", matches},
		{"rm -rf", "rm -r -f /", matches},
		{"rm -rf", "rm -Rf /", noMatch},
		{"rm -rf", "rm -r /", noMatch},
		{"rm -rf", "rm -r $X", mayMatch},
		{"rm -rf", "rm -r \"$X\"", mayMatch},
		{"rm -rf", "rm -r \"./$X\"", noMatch},
		{"rm -rf", "rm -r -- $X", noMatch},
		{"rm -rf", "rm $X -- y", mayMatch},
		{"rm /", "rm -rf /tmp /", matches},
		{"git push --force", "git push --force", matches},
		{"git push --force", "git push --force=true", matches},
		{"git push --force", "git push --force-with-lease", noMatch},
		{"git push --force", "git push origin main --force", matches},
		{"git push --force", "git -C dir push --force", matches},
		{"git push --force", "git -c a=b push --force", matches},
		{"git push --force", "git push -f", noMatch},
		{"git push", "git stash push", noMatch},
		{"git push", "git log push", noMatch},
		{"git push", "git $X", mayMatch},
		{"git push", "git commit -m \"$MSG\"", noMatch},
		{"kubectl delete", "kubectl -n prod delete pod x", matches},
		{"docker rm", "docker run --rm img", noMatch},
		{"find -delete", "find . -name x -delete", matches},
		{"find -delete", "find . -name x -type d", noMatch},
	}
	for _, c := range cases {
		rs := compileRules([]string{c.rule})
		if got := rs[0].denies(firstCommand(t, c.cmd)); got != c.want {
			t.Errorf("deny %q on %q = %d, want %d", c.rule, c.cmd, got, c.want)
		}
	}
}

func TestNormalizeRule(t *testing.T) {
	good := map[string]string{
		"git status":             "git status",
		"  go   test  ":          "go test",
		"git --no-pager log":     "git log",
		"git -C dir push":        "git push",
		"grep 'a b'":             "grep 'a b'",
		"rm -rf":                 "rm -rf",
		"r\\m":                   "rm",
		"npm run \"build:prod\"": "npm run build:prod",
	}
	for in, want := range good {
		got, err := NormalizeRule(in)
		if err != nil || got != want {
			t.Errorf("NormalizeRule(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "   ", "git status && ls", "ls; rm", "FOO=1 ls", "ls > x", "$X y", "ls $(pwd)", "echo 'unterminated", "ls &", "{a,b}"} {
		if _, err := NormalizeRule(bad); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("NormalizeRule(%q) error = %v, want ErrInvalidRule", bad, err)
		}
	}
}

func TestCompileRulesKeepsUnparsableDenyAndDropsEmpty(t *testing.T) {
	rs := compileRules([]string{"", "  ", "rm 'x"})
	if len(rs) != 1 || rs[0].words[0] != "rm" {
		t.Fatalf("compileRules = %+v, want one rule split on spaces", rs)
	}
	v := Decide(ModeAuto, Rules{Deny: []string{"rm 'x"}}, nil, "rm \"'x\"")
	if v.Decision != Deny {
		t.Errorf("a hand-built deny rule that does not parse must still deny: %v", v)
	}
	if v := Decide(ModeAsk, Rules{Allow: []string{""}}, []string{"  "}, "rm x"); v.Decision != Ask {
		t.Errorf("an empty allow rule must not allow everything: %v", v)
	}
}

func TestPrefixOf(t *testing.T) {
	cases := map[string]string{
		"git push origin main":      "git push",
		"git -C x push":             "git push",
		"git -c a=b push":           "",
		"git stash drop":            "git stash drop",
		"git stash":                 "",
		"go test ./...":             "go test",
		"go run ./cmd/x":            "go run ./cmd/x",
		"go run -race .":            "",
		"npm run build":             "npm run build",
		"npm run":                   "",
		"npm install":               "npm install",
		"yarn build":                "yarn build",
		"gh pr create --fill":       "gh pr create",
		"cargo +nightly build":      "",
		"kubectl -n x get pods":     "",
		"make":                      "",
		"make test":                 "make test",
		"python3 script.py -v":      "python3 script.py",
		"python3 -m pytest":         "",
		"./gradlew build":           "./gradlew build",
		"pytest":                    "",
		"rm build":                  "",
		"/bin/rm build":             "",
		"cp a b":                    "",
		"sed s/a/b/ f":              "",
		"mkfs.ext4 /dev/sda":        "",
		"docker compose up -d":      "docker compose up",
		"docker run --rm img":       "docker run",
		"terraform plan":            "terraform plan",
		"node $SCRIPT":              "",
		"LD_PRELOAD=x.so make test": "",
		"CGO_ENABLED=0 go build":    "go build",
		"bash deploy.sh prod":       "bash deploy.sh",
		"'my tool' 'sub cmd'":       "'my tool' 'sub cmd'",
	}
	for cmd, want := range cases {
		if got := prefixOf(firstCommand(t, cmd)); got != want {
			t.Errorf("prefixOf(%q) = %q, want %q", cmd, got, want)
		}
	}
}

func TestPrefixesRoundTripAsAllowRules(t *testing.T) {
	for _, cmd := range []string{"npm install lodash", "git -C x push origin", "'my tool' 'sub cmd' x", "docker compose up -d"} {
		v := Decide(ModeAsk, Rules{}, nil, cmd)
		if v.Decision != Ask || len(v.Prefixes) != 1 {
			t.Fatalf("%q: %v %q, want Ask with one prefix", cmd, v, v.Prefixes)
		}
		if v := Decide(ModeAsk, Rules{}, v.Prefixes, cmd); v.Decision != Allow {
			t.Errorf("%q: after always-allow %q: %v, want Allow", cmd, v.Prefixes, v)
		}
	}
}
