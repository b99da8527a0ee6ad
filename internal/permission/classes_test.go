package permission

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// classRules are the rules every case of the class tables is decided
// under: deny rules, so that auto mode shows whether they can be checked.
var classRules = Rules{
	Allow: []string{"go test", "npm run dev"},
	Deny:  []string{"rm -rf", "curl", "touch"},
}

// classCase is one command line and its decisions in ask, auto and
// read-only mode (A allow, Q ask, D deny); bg runs it as a background task.
type classCase struct {
	cmd  string
	want string
	bg   bool
}

// classes are the tables written from the classes: each class
// holds lines that must not run unasked (dangerous) and look-alikes that
// must (harmless, want "AAA").
var classes = map[string][]classCase{
	"parse/bash disagreement": {
		{cmd: "ls # note \\\nrm -rf /", want: "QDD"},
		{cmd: "echo a # \\\ntouch pwned", want: "QDD"},
		{cmd: "cat f # x \\\ncat g", want: "QDD"},
		{cmd: "true # \\", want: "QDD"},
		{cmd: "echo \"${x:-'$(touch p)'}\"", want: "QDD"},
		{cmd: "echo \"${x:+'a'}\"", want: "QDD"},
		{cmd: "echo \"${x#'a'}\"", want: "QDD"},
		{cmd: "cat <<EOF\n${x:-'$(id)'}\nEOF", want: "QDD"},
		{cmd: "cat <<EOF\na \\\nb\nEOF", want: "QDD"},
		{cmd: "cat <<'EOF'\n EOF\nrm -rf /\nEOF", want: "QDD"},
		{cmd: "cat <<EOF\nEOF)\nEOF", want: "QDD"},
		{cmd: "cat <<\"E F\"\nx\nE F", want: "QDD"},
		{cmd: "echo $(( '1' + 2 ))", want: "QDD"},
		{cmd: "echo $(( \"1\" + 2 ))", want: "QDD"},
		{cmd: "(( '1' ))", want: "QDD"},
		{cmd: "ls # a plain comment", want: "AAA"},
		{cmd: "echo \"${x:-default}\"", want: "AAA"},
		{cmd: "echo ${x:-'a b'}", want: "AAA"},
		{cmd: "cat <<'EOF'\nhello $(not run)\nEOF", want: "AAA"},
		{cmd: "cat <<EOF\nplain text\nEOF", want: "AAA"},
		{cmd: "echo \"$(echo 'quoted in a substitution')\"", want: "AAA"},
	},
	"text evaluated as code": {
		{cmd: "test -v 'a[$(touch p)]'", want: "QDD"},
		{cmd: "[ -v 'a[$(rm -rf /)]' ]", want: "QDD"},
		{cmd: "[[ 'a[$(touch p)]' -eq 0 ]]", want: "QDD"},
		{cmd: "[[ -v 'a[$(touch p)]' ]]", want: "QDD"},
		{cmd: "read 'a[$(touch p)]' <<< x", want: "QDD"},
		{cmd: "unset 'a[$(touch p)]'", want: "QDD"},
		{cmd: "printf -v 'a[$(touch p)]' x", want: "QDD"},
		{cmd: "wait -p 'a[$(touch p)]'", want: "QDD"},
		{cmd: "let 'a[$(touch p)]=1'", want: "QDD"},
		{cmd: "declare -i 'n=a[$(touch p)]'", want: "QDD"},
		{cmd: "let x=1", want: "QAD"},
		{cmd: "declare -i n=5", want: "QAD"},
		{cmd: "wait -p v", want: "QAD"},
		{cmd: "echo ${!x}", want: "QAD"},
		{cmd: "echo \"${!name}\"", want: "QAD"},
		{cmd: "echo ${x@P}", want: "QAD"},
		{cmd: "echo $((x))", want: "QAD"},
		{cmd: "echo $((x + 1))", want: "QAD"},
		{cmd: "echo $(( $x ))", want: "QAD"},
		{cmd: "[[ $n -eq 0 ]]", want: "QAD"},
		{cmd: "[[ -v \"$name\" ]]", want: "QAD"},
		{cmd: "test -v \"$name\"", want: "QAD"},
		{cmd: "echo \"${a[$i]}\"", want: "QAD"},
		{cmd: "echo \"${x:$n}\"", want: "QAD"},
		{cmd: "echo $(( 1 + 2 ))", want: "AAA"},
		{cmd: "echo $(( $# + 1 ))", want: "AAA"},
		{cmd: "[[ $# -eq 0 ]]", want: "AAA"},
		{cmd: "[[ ${#x} -gt 3 ]]", want: "AAA"},
		{cmd: "test -v name", want: "AAA"},
		{cmd: "[ -n \"$x\" ] && [ \"$a\" = \"$b\" ]", want: "AAA"},
		{cmd: "echo \"${a[0]}\" \"${a[@]}\" \"${#a[@]}\" \"${!a[@]}\"", want: "AAA"},
		{cmd: "echo \"${x:1:2}\" \"${x/a/b}\" \"${x^^}\" \"${x@Q}\"", want: "AAA"},
	},
	"state the judge does not track": {
		{cmd: "declare 'PS4=$(touch p)'", want: "QDD"},
		{cmd: "typeset 'BASH_ENV=/tmp/x'", want: "QDD"},
		{cmd: "local 'PATH=/tmp'", want: "QDD"},
		{cmd: "export 'GIT_CONFIG_COUNT=1'", want: "QDD"},
		{cmd: "readonly 'x=1'", want: "QDD"},
		{cmd: "declare \"$x\"", want: "QAD"},
		{cmd: "export PATH=/tmp", want: "QAD"},
		{cmd: "export BASH_CMDS=x", want: "QAD"},
		{cmd: "GIT_CONFIG_COUNT=1 git status", want: "QAD"},
		{cmd: "echo ${PATH:=/tmp}", want: "QAD"},
		{cmd: "echo ${BASH_ENV=/tmp/x}", want: "QAD"},
		{cmd: "read -a PATH <<< x", want: "QAD"},
		{cmd: "read PS4 <<< x", want: "QAD"},
		{cmd: "let PATH=5", want: "QAD"},
		{cmd: "(( PATH = 1 ))", want: "QAD"},
		{cmd: "for ((PATH=0; PATH<1; PATH++)); do :; done", want: "QAD"},
		{cmd: "set -k; ls", want: "QAD"},
		{cmd: "set -o posix", want: "QAD"},
		{cmd: "POSIXLY_CORRECT=1 ls", want: "QAD"},
		{cmd: "export POSIXLY_CORRECT=1", want: "QAD"},
		{cmd: "shopt -s expand_aliases", want: "QAD"},
		{cmd: "sort ~-", want: "QAD"},
		{cmd: "sed -n 1p ~+", want: "QAD"},
		{cmd: "git log ~-", want: "QAD"},
		{cmd: "declare x=1", want: "AAA"},
		{cmd: "echo ${x:=1}", want: "AAA"},
		{cmd: "read -ra parts <<< \"$line\"", want: "AAA"},
		{cmd: "set -euo pipefail; ls", want: "AAA"},
		{cmd: "ls ~ ~/src", want: "AAA"},
		{cmd: "LC_ALL=C sort f", want: "AAA"},
	},
	"file descriptors as files": {
		{cmd: "cat < f >> /dev/fd/0", want: "QAD"},
		{cmd: "echo x > /dev/stdout", want: "QAD"},
		{cmd: "echo x > /dev/stderr", want: "QAD"},
		{cmd: "echo x >/dev/fd/1", want: "QAD"},
		{cmd: "sort f 2>/proc/self/fd/2", want: "QAD"},
		{cmd: "cat < /dev/tcp/127.0.0.1/80", want: "QAD"},
		{cmd: "exec 3<>/dev/tcp/example.com/80", want: "QAD"},
		{cmd: "echo > /dev/udp/1.2.3.4/53", want: "QAD"},
		{cmd: "cat < \"$f\"", want: "QAD"},
		{cmd: "cat < \"/dev/$x\"", want: "QAD"},
		{cmd: "{fd}>&1 echo", want: "QAD"},
		{cmd: "echo x >&2", want: "AAA"},
		{cmd: "ls 2>/dev/null", want: "AAA"},
		{cmd: "ls &>/dev/null", want: "AAA"},
		{cmd: "cat < ./\"$f\"", want: "AAA"},
		{cmd: "wc -l < go.mod", want: "AAA"},
		{cmd: "exec 2>&1 3>&-", want: "AAA"},
	},
	"shells that run startup code": {
		{cmd: "bash -i -c ls", want: "QAD"},
		{cmd: "bash -l -c ls", want: "QAD"},
		{cmd: "bash -lc ls", want: "QAD"},
		{cmd: "sh -l -c ls", want: "QAD"},
		{cmd: "bash --login -c ls", want: "QAD"},
		{cmd: "bash --rcfile x -c ls", want: "QAD"},
		{cmd: "bash --init-file x -c ls", want: "QAD"},
		{cmd: "bash --posix -c ls", want: "QAD"},
		{cmd: "bash -O extglob -c ls", want: "QAD"},
		{cmd: "bash -i -c 'rm -rf /'", want: "DDD"},
		{cmd: "bash -c ls", want: "AAA"},
		{cmd: "bash -e -c 'ls | wc -l'", want: "AAA"},
		{cmd: "bash -o pipefail -c ls", want: "AAA"},
		{cmd: "bash --norc --noprofile -c ls", want: "AAA"},
		{cmd: "sh -euc 'cat x'", want: "AAA"},
	},
	"program knowledge gaps": {
		{cmd: "git ls-remote --exec=/tmp/x origin", want: "QAD"},
		{cmd: "git ls-remote origin", want: "QAD"},
		{cmd: "git remote show origin", want: "QAD"},
		{cmd: "git submodule --quiet foreach 'touch p'", want: "QAD"},
		{cmd: "git reflog --output=x", want: "QAD"},
		{cmd: "git notes --ref=x add -m y", want: "QAD"},
		{cmd: "git config --unset-a x", want: "QAD"},
		{cmd: "git config --remove-sec x", want: "QAD"},
		{cmd: "git log --outp=x", want: "QAD"},
		{cmd: "git diff --ext-diff", want: "QAD"},
		{cmd: "git -c core.pager=x log", want: "QAD"},
		{cmd: "find . -exec sh -c 'cat {}' \\;", want: "QDD"},
		{cmd: "find . -name '*.o' -delete", want: "QAD"},
		{cmd: "find . -fprintf out %p", want: "QAD"},
		{cmd: "xargs --process-slot-var=PATH ls", want: "QDD"},
		{cmd: "xargs -o ls", want: "QDD"},
		{cmd: "yq -e -i '.a=1' f.yaml", want: "QAD"},
		{cmd: "yq --in-place '.a' f", want: "QAD"},
		{cmd: "go list -mod=mod ./...", want: "QAD"},
		{cmd: "go list -m -versions example.com/x", want: "QAD"},
		{cmd: "go doc -http", want: "QAD"},
		{cmd: "awk '/\"/ { print > \"out\" }' f", want: "QAD"},
		{cmd: "awk '# \"\n{ print > \"out\" }' f", want: "QAD"},
		{cmd: "awk '{ x = \"a\\\"b\"; print x > \"o\" }' f", want: "QAD"},
		{cmd: "awk 'BEGIN { \"date\" | getline d }'", want: "QAD"},
		{cmd: "awk '{ getline line < \"/etc/passwd\" }' f", want: "QAD"},
		{cmd: "awk 'BEGIN { f = \"system\"; @f(\"id\") }'", want: "QAD"},
		{cmd: "sort --compress-prog=sh f", want: "QAD"},
		{cmd: "tar -xzf a.tgz", want: "QAD"},
		{cmd: "tar -tf host:/x.tar", want: "QAD"},
		{cmd: "tar -t -I sh -f a.tar", want: "QAD"},
		{cmd: "unzip a.zip", want: "QAD"},
		{cmd: "xxd -r dump out.bin", want: "QAD"},
		{cmd: "nm --plugin x.so a.o", want: "QAD"},
		{cmd: "ss -K dst 1.2.3.4", want: "QAD"},
		{cmd: "lsof -r 1", want: "QAD"},
		{cmd: "iconv -f utf8 -t ascii -o out in", want: "QAD"},
		{cmd: "git remote show -n origin", want: "AAA"},
		{cmd: "git submodule --quiet status", want: "AAA"},
		{cmd: "git reflog --oneline -5", want: "AAA"},
		{cmd: "git notes --ref=x list", want: "AAA"},
		{cmd: "find . -exec cat {} \\;", want: "AAA"},
		{cmd: "yq -e '.a' f.yaml", want: "AAA"},
		{cmd: "go list -m all", want: "AAA"},
		{cmd: "awk '/a\\/b/ { n++ } END { print n }' f", want: "AAA"},
		{cmd: "awk '{ print $1 > $2 ? \"a\" : \"b\" }' f", want: "QAD"},
		{cmd: "awk '{ print ($1 > $2) }' f", want: "AAA"},
	},
	"globs over attacker-named files": {
		{cmd: "sort *", want: "QAD"},
		{cmd: "sed -n 1p *", want: "QAD"},
		{cmd: "git log *", want: "QAD"},
		{cmd: "uniq *", want: "QAD"},
		{cmd: "tar -tf *", want: "QAD"},
		{cmd: "find *", want: "QDD"},
		{cmd: "rm *", want: "QDD"},
		{cmd: "xxd ?", want: "QAD"},
		{cmd: "sort [ab]*", want: "QAD"},
		{cmd: "cat *.go", want: "AAA"},
		{cmd: "grep -n TODO *", want: "AAA"},
		{cmd: "sort ./*", want: "AAA"},
		{cmd: "sort -- *", want: "AAA"},
		{cmd: "sed -n 1p -- *.txt", want: "AAA"},
		{cmd: "git log -- *", want: "AAA"},
		{cmd: "echo \\* '*' \"*\"", want: "AAA"},
	},
	"commands that never end, in the background": {
		{cmd: "tail -f log", bg: true, want: "QAD"},
		{cmd: "tail -F log", bg: true, want: "QAD"},
		{cmd: "tail --follow=name log", bg: true, want: "QAD"},
		{cmd: "sleep infinity", bg: true, want: "QAD"},
		{cmd: "sleep 1e9", bg: true, want: "QAD"},
		{cmd: "sleep 100000", bg: true, want: "QAD"},
		{cmd: "yes", bg: true, want: "QAD"},
		{cmd: "yes | head -1", bg: true, want: "QAD"},
		{cmd: "cat /dev/stdout", bg: true, want: "QAD"},
		{cmd: "cat /dev/zero", bg: true, want: "QAD"},
		{cmd: "cat /proc/self/fd/1", bg: true, want: "QAD"},
		{cmd: "while true; do ls; done", bg: true, want: "QAD"},
		{cmd: "until false; do :; done", bg: true, want: "QAD"},
		{cmd: "f() { f; }; f", bg: true, want: "QAD"},
		{cmd: "seq inf", bg: true, want: "QAD"},
		{cmd: "top -b", bg: true, want: "QAD"},
		{cmd: "free -s 1", bg: true, want: "QAD"},
		{cmd: "sed ':a; ba' f", bg: true, want: "QAD"},
		{cmd: "awk 'BEGIN { while (1) n++ }'", bg: true, want: "QAD"},
		{cmd: "tail -f log &", bg: true, want: "QAD"},
		{cmd: "timeout 10 bash -c 'trap \"\" TERM; sleep infinity'", bg: true, want: "QAD"},
		{cmd: "npm run dev", bg: true, want: "AAD"},
		{cmd: "tail -f log", want: "AAA"},
		{cmd: "sleep infinity", want: "AAA"},
		{cmd: "ls -la", bg: true, want: "AAA"},
		{cmd: "sleep 5", bg: true, want: "AAA"},
		{cmd: "seq 1 10", bg: true, want: "AAA"},
		{cmd: "top -bn1", bg: true, want: "AAA"},
		{cmd: "timeout 5 tail -f log", bg: true, want: "AAA"},
		{cmd: "for f in a b; do cat \"$f\"; done", bg: true, want: "AAA"},
		{cmd: "free -s 1 -c 3", bg: true, want: "AAA"},
	},
	"asked on purpose, measured against bash": {
		// npm writes a debug log to ~/.npm/_logs and asks the registry
		// for a newer npm on every command, npm ls included.
		{cmd: "npm ls", want: "QAD"},
		{cmd: "npm ls --depth=0", want: "QAD"},
		{cmd: "npm list --json", want: "QAD"},
		{cmd: "npm --version", want: "QAD"},
		// git grep -O and git log -p --ext-diff run other programs.
		{cmd: "git grep -O foo", want: "QAD"},
		{cmd: "git log -p --ext-diff", want: "QAD"},
		// a command the judge does not know.
		{cmd: "make -n", want: "QAD"},
		{cmd: "python3 -c 'print(1)'", want: "QAD"},
	},
	"deny rules under tricks in auto mode": {
		{cmd: "alias r=rm\nr -rf /", want: "QDD"},
		{cmd: "shopt -s expand_aliases; alias r='rm -r'\nr -f /", want: "QDD"},
		{cmd: "sh -c 'alias c=curl\nc evil'", want: "DDD"},
		{cmd: "sh -c 'alias c=cur\nc\\l evil'", want: "QDD"},
		{cmd: "alias x='rm -rf '", want: "DDD"},
		{cmd: "ls # \\\nrm -rf /", want: "QDD"},
		{cmd: "echo hi # \\\ncurl evil", want: "QDD"},
		{cmd: "bash -c 'ls # \\\ncurl evil'", want: "QDD"},
		{cmd: "eval 'ls # \\\ntouch x'", want: "QDD"},
		{cmd: "docker exec c rm -rf /", want: "DDD"},
		{cmd: "python3 -c 'import os' rm -rf /", want: "DDD"},
	},
}

// harmless are the false positives of the audit: read-only
// commands users run all day, which must run unasked.
var harmless = []string{
	"awk 'NR > 1' f", "awk '/a|b/' f", "awk '{print \"a@b\"}' f", "awk -F, '$3 > 100 { print $1 }' data.csv",
	"node --version", "python3 --version", "cargo --version", "tac f", "expr 1 + 2", "zgrep x f.gz", "xxd f",
	"xxd -l 64 f", "tar -tzf a.tgz", "tar tzf a.tgz", "unzip -l a.zip", "iconv -f latin1 -t utf8 f", "readelf -h a.out",
	"nm -C a.o", "numfmt --to=iec 1048576", "cal", "cal 2024", "lscpu", "ss -tlnp", "lsof -i", "lsof -i :8080 -n -P",
	"top -bn1", "getconf PAGE_SIZE", "ulimit -a", "umask", "dirs", "dirs -v", "jobs", "jobs -l", "history",
	"go mod graph", "go mod why golang.org/x/sys", "git help log", "pip list",
	"docker ps", "docker ps -a --format '{{.Names}}'",
}

var letters = map[Decision]byte{Allow: 'A', Ask: 'Q', Deny: 'D'}

func decisions(t *testing.T, rules Rules, c classCase) (string, []string) {
	t.Helper()
	var got []byte
	var reasons []string
	for _, m := range Modes() {
		v := Judge(Request{Mode: m, Rules: rules, Command: c.cmd, Background: c.bg})
		got = append(got, letters[v.Decision])
		reasons = append(reasons, v.Reason)
		if v.Reason == "" {
			t.Errorf("%s: empty reason", m)
		}
	}
	return string(got), reasons
}

func TestClasses(t *testing.T) {
	counts := map[string]int{}
	for class, cases := range classes {
		if len(cases) < 8 {
			t.Errorf("class %q has %d cases, want at least 8", class, len(cases))
		}
		for _, c := range cases {
			name := fmt.Sprintf("%s/%q", class, c.cmd)
			if c.bg {
				name += "/background"
			}
			t.Run(name, func(t *testing.T) {
				got, reasons := decisions(t, classRules, c)
				if got != c.want {
					t.Errorf("decisions (ask, auto, read-only) = %s, want %s\nreasons: %q", got, c.want, reasons)
				}
			})
			switch {
			case c.want == "AAA":
				counts["harmless allowed"]++
			case c.want[0] != 'A' && c.want[2] == 'D':
				counts["dangerous asked or denied"]++
			}
		}
	}
	t.Logf("class tables: %v", counts)
}

func TestHarmlessRunUnasked(t *testing.T) {
	for _, cmd := range harmless {
		t.Run(cmd, func(t *testing.T) {
			for _, bg := range []bool{false, true} {
				got, reasons := decisions(t, classRules, classCase{cmd: cmd, bg: bg})
				if got != "AAA" {
					t.Errorf("background=%v: decisions (ask, auto, read-only) = %s, want AAA\nreasons: %q", bg, got, reasons)
				}
			}
		})
	}
}

// TestBackgroundFifoAsks checks Request.Stat: reading a named pipe may
// never end, a regular file ends.
func TestBackgroundFifoAsks(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Skipf("cannot make a fifo: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]Decision{
		"cat pipe": Ask, "wc -l < pipe": Ask, "sed -n 1p pipe": Ask, "grep x file pipe": Ask,
		"cat file": Allow, "wc -l < file": Allow, "cat missing": Allow,
	} {
		v := Judge(Request{Mode: ModeAsk, Command: cmd, Background: true, Stat: StatIn(dir)})
		if v.Decision != want || v.Ends != (want == Allow) {
			t.Errorf("%q in the background: %v (ends %v), want %v", cmd, v, v.Ends, want)
		}
		if v := Judge(Request{Mode: ModeAsk, Command: cmd, Stat: StatIn(dir)}); v.Decision != Allow {
			t.Errorf("%q in the foreground: %v, want allow", cmd, v)
		}
	}
}
