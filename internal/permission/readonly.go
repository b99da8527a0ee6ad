package permission

import (
	"fmt"
	"slices"
	"strings"
)

// roCheck judges the arguments of a program on the read-only list; nil
// means any arguments keep it read-only.
type roCheck func(prog string, args []word) (bool, string)

func (s argSpec) fn() roCheck { return s.check }

// readOnlyTable is the built-in read-only list.
var readOnlyTable = map[string]roCheck{
	// Arguments never make these write files or run other programs.
	"cat": nil, "head": nil, "tail": nil, "wc": nil, "nl": nil, "cut": nil, "tr": nil, "rev": nil,
	"fold": nil, "expand": nil, "unexpand": nil, "paste": nil, "join": nil, "comm": nil, "cmp": nil,
	"diff": nil, "md5sum": nil, "sha1sum": nil, "sha224sum": nil, "sha256sum": nil, "sha384sum": nil,
	"sha512sum": nil, "b2sum": nil, "cksum": nil, "sum": nil, "strings": nil, "od": nil, "hexdump": nil,
	"basename": nil, "dirname": nil, "realpath": nil, "readlink": nil, "pwd": nil, "whoami": nil,
	"id": nil, "groups": nil, "uname": nil, "uptime": nil, "nproc": nil, "arch": nil, "locale": nil,
	"tty": nil, "column": nil, "ps": nil, "pgrep": nil, "free": nil, "true": nil, "false": nil,
	"test": nil, "[": nil, "echo": nil, "which": nil, "whereis": nil, "type": nil, "seq": nil,
	"sleep": nil, "grep": nil, "egrep": nil, "fgrep": nil, "zcat": nil, "jq": nil, "ls": nil,
	"stat": nil, "du": nil, "df": nil, "printenv": nil, "cd": nil, "pushd": nil, "popd": nil, ":": nil,
	"yes": nil, "base64": nil, "set": nil, "exit": nil, "return": nil, "break": nil, "continue": nil, "shift": nil, "wait": nil,
	// Wrappers that run nothing (env, command -v, xargs alone echoes).
	"env": nil, "command": nil, "nice": nil, "nohup": nil, "timeout": nil, "stdbuf": nil,
	"ionice": nil, "builtin": nil, "exec": nil, "xargs": nil, "time": nil,

	"read": argSpec{shortArg: "adnNptu", bad: "assigns a variable that can change which programs run",
		operand: func(s string) bool { notRO, _ := classifyName(s); return !notRO }}.fn(),
	"printf": argSpec{shortArg: "v", badShort: "v", bad: "assigns a variable"}.fn(),
	"sort": argSpec{shortArg: "kotST", badShort: "o", badLong: []string{"output", "compress-program"},
		bad: "writes a file or runs a program"}.fn(),
	"uniq": argSpec{shortArg: "fsw", maxOperands: 1, bad: "writes its output file"}.fn(),
	"tree": argSpec{shortArg: "LPIHT", badShort: "o", longArg: []string{"charset", "filelimit", "timefmt"},
		bad: "writes a file"}.fn(),
	"file": argSpec{shortArg: "mfFeP", badShort: "C", badLong: []string{"compile"}, bad: "writes a magic file"}.fn(),
	"date": argSpec{shortArg: "dfr", badShort: "s", badLong: []string{"set"}, bad: "sets the clock",
		operand: func(s string) bool { return strings.HasPrefix(s, "+") }}.fn(),
	"hostname": argSpec{badShort: "bF", badLong: []string{"file", "boot"}, noOperands: true, bad: "sets the host name"}.fn(),
	"rg":       argSpec{badLong: []string{"pre"}, bad: "runs a preprocessor program"}.fn(),
	"fd":       argSpec{shortArg: "edtEScj", badShort: "xX", badLong: []string{"exec", "exec-batch"}, bad: "runs a program"}.fn(),
	"fdfind":   argSpec{shortArg: "edtEScj", badShort: "xX", badLong: []string{"exec", "exec-batch"}, bad: "runs a program"}.fn(),
	"yq":       argSpec{shortArg: "opIe", badShort: "i", badLong: []string{"inplace"}, bad: "edits files in place"}.fn(),
	"gofmt":    goFlags(map[string]bool{"l": false, "d": false, "s": false, "e": false, "r": true, "h": false, "help": false}),
	"sed":      sedReadOnly,
	"awk":      awkReadOnly, "gawk": awkReadOnly, "mawk": awkReadOnly, "nawk": awkReadOnly,
	"git": gitReadOnly,
	"go":  goReadOnly,
}

// readOnlyCommand judges a command by the read-only table. open marks a
// command that receives more arguments at run time: only programs whose
// arguments never matter stay read-only then.
func readOnlyCommand(name string, args []word, open bool) (bool, string) {
	check, ok := readOnlyTable[name]
	switch {
	case !ok:
		return false, name + " is not on the read-only list"
	case check == nil:
		return true, ""
	case open:
		return false, name + " receives more arguments at run time (xargs), which could change what it does"
	default:
		return check(name, args)
	}
}

// goFlags judges a program with Go-style flags (-name, --name, -name=v):
// only the listed flags are allowed; true marks a flag taking the next
// word as its value.
func goFlags(allowed map[string]bool) roCheck {
	return func(prog string, args []word) (bool, string) {
		for i := 0; i < len(args); i++ {
			w := args[i]
			if !w.lit {
				if w.flagish() {
					return false, fmt.Sprintf("%s may get a flag only known at run time (%s)", prog, w.text)
				}
				continue
			}
			if w.text == "--" {
				return true, ""
			}
			if !w.isFlag() {
				continue
			}
			name, _, eq := strings.Cut(strings.TrimLeft(w.text, "-"), "=")
			takesValue, ok := allowed[name]
			if !ok {
				return false, fmt.Sprintf("%s %s is not a read-only flag", prog, w.text)
			}
			if takesValue && !eq {
				i++
			}
		}
		return true, ""
	}
}

// goReadOnly allows go version, go env (not -w/-u), go doc, go list (not
// -toolexec/-export/-compiled) and go help.
func goReadOnly(prog string, args []word) (bool, string) {
	for len(args) > 0 && args[0].lit && (args[0].text == "-C" || strings.HasPrefix(args[0].text, "-C=")) {
		n := 1
		if args[0].text == "-C" {
			n = 2
		}
		args = args[min(n, len(args)):]
	}
	if len(args) == 0 || !args[0].lit {
		return false, "go: cannot see the subcommand"
	}
	sub, rest := args[0].text, args[1:]
	var bad []string
	switch sub {
	case "version", "help", "doc":
	case "env":
		bad = []string{"w", "u"}
	case "list":
		bad = []string{"toolexec", "export", "compiled", "overlay"}
	default:
		return false, "go " + sub + " is not read-only"
	}
	for _, w := range rest {
		if !w.lit {
			if w.flagish() {
				return false, fmt.Sprintf("go %s may get a flag only known at run time (%s)", sub, w.text)
			}
			continue
		}
		if !w.isFlag() {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w.text, "-"), "=")
		if slices.Contains(bad, name) {
			return false, fmt.Sprintf("go %s %s is not read-only", sub, w.text)
		}
	}
	return true, ""
}
