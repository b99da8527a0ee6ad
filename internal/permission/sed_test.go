package permission

import "testing"

func TestSedScriptReadOnly(t *testing.T) {
	cases := map[string]bool{
		"p":                    true,
		"1,20p":                true,
		"/foo/,/bar/d":         true,
		"s/a/b/g":              true,
		"s/hello/world/2":      true,
		"s|/usr|/opt|g;p":      true,
		"s/x/y/w out":          false,
		"s/x/y/e":              false,
		"s/x/y/gw out":         false,
		"w out":                false,
		"1W out":               false,
		"e date":               false,
		"/re/!e date":          false,
		"$!N;P;D":              true,
		"y/abc/xyz/":           true,
		"a\\\nappended":        true,
		"1i hello w world":     true,
		"r header.txt":         true,
		"0~3d":                 true,
		"\\%re%d":              true,
		":a;N;$!ba;s/\\n/ /g":  true,
		"/x/{s/a/b/;p}":        true,
		"s/a\\/w/b/":           true,
		"# comment\np":         true,
		"l 40":                 true,
		"q5":                   true,
		"s/a/b":                false, // unterminated
		"k":                    false, // unknown
		"/x/Ip":                true,
		"1,+3p":                true,
		"s/a/b/;w /etc/passwd": false,
		"s/a/b/\n1e rm -rf /":  false,
		"s/a/b/ ; 2 w out":     false,
	}
	for script, want := range cases {
		if got, _ := sedScriptReadOnly(script); got != want {
			t.Errorf("sedScriptReadOnly(%q) = %v, want %v", script, got, want)
		}
	}
}

func TestSedAndAwkArguments(t *testing.T) {
	cases := map[string]bool{
		"sed -n 5p f":                      true,
		"sed -ne 's/a/b/p' f":              true,
		"sed -e p -e 'w x' f":              false,
		"sed --expression=p f":             true,
		"sed --expression='w x' f":         false,
		"sed -i.bak s/a/b/ f":              false,
		"sed -Ei s/a/b/ f":                 false,
		"sed --in-place s/a/b/ f":          false,
		"sed --in s/a/b/ f":                false,
		"sed -f script.sed f":              false,
		"sed --sandbox 'w x' f":            true,
		"sed \"$SCRIPT\" f":                false,
		"sed -n \"${N}p\" f":               false,
		"sed -n 1p -- \"$FILE\"":           true,
		"sed -n 1p \"$FILE\"":              false, // $FILE could be -i
		"sed -- 's/a/b/' -i":               true,
		"awk -F: '{print $1}' /etc/passwd": true,
		"awk -v n=3 'NR<n' f":              true,
		"awk '$3 > 100' f":                 true,
		"awk '{print \"a>b\"}' f":          true,
		"awk '{print | \"sort\"}' f":       false,
		"awk '{\"date\" | getline d}' f":   false,
		"awk '@load \"x\"' f":              false,
		"awk -f prog.awk f":                false,
		"gawk -i inplace '{print}' f":      false,
		"awk \"$PROG\" f":                  false,
	}
	for cmd, want := range cases {
		if got := Analyze(cmd).ReadOnly; got != want {
			t.Errorf("Analyze(%q).ReadOnly = %v, want %v (%q)", cmd, got, want, Analyze(cmd).Reasons)
		}
	}
}

func TestReadOnlyList(t *testing.T) {
	cases := map[string]bool{
		"git status --porcelain":             true,
		"git log -p --stat -- a.go":          true,
		"git show HEAD:go.mod":               true,
		"git diff --output=x":                false,
		"git diff --out=x":                   false,
		"git grep -O foo":                    false,
		"git grep -e Open":                   true,
		"git ls-remote --upload-pack=evil .": false,
		"git branch --list 'feat/*'":         true,
		"git branch -m a b":                  false,
		"git branch --merged main":           true,
		"git tag":                            true,
		"git tag v1.0":                       false,
		"git tag -n5":                        true,
		"git remote -v":                      true,
		"git remote add o url":               false,
		"git stash list":                     true,
		"git stash drop":                     false,
		"git config --get user.email":        true,
		"git config --global user.email a@b": false,
		"git config --unset user.email":      false,
		"git worktree list":                  true,
		"git submodule status":               true,
		"git submodule foreach 'rm -rf x'":   false,
		"git reflog":                         true,
		"git reflog expire --all":            false,
		"git --version":                      true,
		"git --exec-path=/tmp status":        false,
		"git --git-dir=.git log":             true,
		"git fetch":                          false,
		"go env -json":                       true,
		"go env -u GOFLAGS":                  false,
		"go list -m all":                     true,
		"go list -toolexec x ./...":          false,
		"go doc fmt.Println":                 true,
		"go test ./...":                      false,
		"gofmt -l .":                         true,
		"gofmt -w .":                         false,
		"gofmt -cpuprofile p .":              false,
		"sort -k2 -t, f":                     true,
		"sort -nro out f":                    false,
		"sort --out=x f":                     false,
		"sort --compress-program=sh f":       false,
		"uniq -c f":                          true,
		"tree -L 2":                          true,
		"tree -o out":                        false,
		"date +%Y":                           true,
		"date 0101":                          false,
		"hostname":                           true,
		"hostname evil":                      false,
		"file -C -m x":                       false,
		"rg --pre=cat x":                     false,
		"rg --pretty x":                      true,
		"fd -e go":                           true,
		"fd -x rm":                           false,
		"yq -i '.a=1' f.yaml":                false,
		"printf -v PATH x":                   false,
		"read -r line":                       true,
		"read -r PATH":                       false,
		"cd /tmp && pwd":                     true,
		"ls -la /":                           true,
		"./ls":                               false,
		"/usr/bin/ls":                        true,
		"/tmp/ls":                            false,
		"stat -c %s f":                       true,
		"du -sh .":                           true,
		"df -h":                              true,
		"which go":                           true,
		"printenv PATH":                      true,
		"jq -r .x f":                         true,
		"head -n 5 f && tail -f log":         true,
		"wc -l < f":                          true,
		"echo a | base64":                    true,
		"cat f | sort | uniq -c | sort -rn":  true,
		"sleep 1":                            true,
		"tee f":                              false,
		"touch f":                            false,
		"mkdir d":                            false,
		"cp a b":                             false,
		"python3 -c 'print(1)'":              false,
	}
	for cmd, want := range cases {
		if got := Analyze(cmd).ReadOnly; got != want {
			t.Errorf("Analyze(%q).ReadOnly = %v, want %v (%q)", cmd, got, want, Analyze(cmd).Reasons)
		}
	}
}
