package permission

import (
	"fmt"
	"slices"
	"strings"
)

// Git's global options (before the subcommand).
var (
	gitGlobalFlags = []string{"--no-pager", "-P", "-p", "--paginate", "--no-optional-locks",
		"--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
		"--no-replace-objects", "--bare", "--no-advice", "--no-lazy-fetch"}
	gitGlobalValues = []string{"-C", "--git-dir", "--work-tree", "--namespace"}
	gitInfoOptions  = []string{"--version", "--help", "-h", "--html-path", "--man-path", "--info-path", "--exec-path"}
)

// gitGlobals skips git's global options. It returns the words from the
// subcommand on, and false with a reason when an option is unknown, only
// known at run time, or can make git run other programs (-c,
// --config-env, --exec-path=DIR).
func gitGlobals(args []word) ([]word, bool, string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.lit {
			if w.flagish() {
				return args[i:], false, fmt.Sprintf("git's option %s is only known at run time", w.text)
			}
			return args[i:], true, ""
		}
		name, _, eq := strings.Cut(w.text, "=")
		switch {
		case !strings.HasPrefix(w.text, "-"):
			return args[i:], true, ""
		case slices.Contains(gitGlobalFlags, w.text):
		case slices.Contains(gitGlobalValues, name):
			if !eq {
				i++
				if i < len(args) && args[i].multi {
					return args[i:], false, fmt.Sprintf("the value of git %s is only known at run time", name)
				}
			}
		case slices.Contains(gitInfoOptions, w.text):
			return args[i:], true, ""
		case name == "-c" || name == "--config-env" || name == "--exec-path":
			return args[i:], false, "git " + name + " can make git run other programs"
		default:
			return args[i:], false, "unknown git option " + w.text
		}
	}
	return nil, true, ""
}

// canonical returns the command's words with the global options of git
// and go removed (git -C dir status → git status), so that rules and
// prefixes see the subcommand where they expect it. ok is false when that
// was not possible; words are then returned unchanged.
func canonical(words []word) ([]word, bool) {
	if len(words) == 0 || !words[0].lit {
		return words, false
	}
	switch programName(words[0].text) {
	case "git":
		rest, ok, _ := gitGlobals(words[1:])
		if !ok {
			return words, false
		}
		return append([]word{words[0]}, rest...), true
	case "go":
		args := words[1:]
		for len(args) > 0 && args[0].lit && (args[0].text == "-C" || strings.HasPrefix(args[0].text, "-C=")) {
			n := 1
			if args[0].text == "-C" {
				n = 2
			}
			if n == 2 && len(args) > 1 && args[1].multi {
				return words, false
			}
			args = args[min(n, len(args)):]
		}
		return append([]word{words[0]}, args...), true
	}
	return words, true
}

// gitOutput is the option of log/diff/show that writes a file.
var gitOutput = argSpec{badLong: []string{"output"}, bad: "writes a file"}

// gitReadOnly judges git: global options, then the subcommand.
func gitReadOnly(prog string, args []word) (bool, string) {
	rest, ok, why := gitGlobals(args)
	if !ok {
		return false, why
	}
	if len(rest) == 0 {
		return true, "" // git alone prints its usage
	}
	if !rest[0].lit {
		return false, "git: the subcommand " + rest[0].text + " is only known at run time"
	}
	sub, rest := rest[0].text, rest[1:]
	if slices.Contains(gitInfoOptions, sub) {
		return sub != "--exec-path" || len(rest) == 0, "git --exec-path with an argument is not read-only"
	}
	name := "git " + sub
	switch sub {
	case "status", "log", "diff", "show", "blame", "annotate", "shortlog", "describe", "rev-parse",
		"rev-list", "ls-files", "ls-tree", "cat-file", "merge-base", "name-rev", "for-each-ref",
		"show-ref", "show-branch", "check-ignore", "check-attr", "count-objects", "whatchanged",
		"cherry", "version", "diff-tree", "diff-files", "diff-index", "range-diff":
		return gitOutput.check(name, rest)
	case "ls-remote":
		return argSpec{badLong: []string{"upload-pack"}, bad: "runs a program"}.check(name, rest)
	case "grep":
		return argSpec{shortArg: "efABCm", badShort: "O", badLong: []string{"open-files-in-pager"},
			bad: "runs a pager program"}.check(name, rest)
	case "branch":
		return gitListing(name, rest, gitBranchFlags, "arvliq", false)
	case "tag":
		return gitListing(name, rest, gitTagFlags, "li", true)
	case "remote":
		return gitRemote(name, rest)
	case "config":
		return gitConfig(name, rest)
	case "stash", "worktree", "submodule", "reflog", "notes":
		return gitSubSub(sub, rest)
	}
	return false, name + " is not read-only"
}

// Flags of git branch and git tag that only list. The bool says whether
// the flag takes the next word as its value.
var (
	gitBranchFlags = map[string]bool{
		"-a": false, "--all": false, "-r": false, "--remotes": false, "-v": false, "-vv": false,
		"--verbose": false, "-l": false, "--list": false, "--show-current": false, "--no-color": false,
		"--color": false, "--no-column": false, "--column": false, "-i": false, "--ignore-case": false,
		"--omit-empty": false, "--no-abbrev": false, "--abbrev": false, "-q": false, "--quiet": false,
		"--sort": true, "--format": true, "--points-at": true, "--contains": true, "--no-contains": true,
		"--merged": true, "--no-merged": true,
	}
	gitTagFlags = map[string]bool{
		"-l": false, "--list": false, "--no-column": false, "--column": false, "-i": false,
		"--ignore-case": false, "--color": false, "--omit-empty": false,
		"--sort": true, "--format": true, "--points-at": true, "--contains": true, "--no-contains": true,
		"--merged": true, "--no-merged": true,
	}
)

// gitListing judges git branch / git tag: read-only when every flag only
// lists and operands are patterns (after -l/--list, or -n for tags).
func gitListing(name string, args []word, flags map[string]bool, letters string, tag bool) (bool, string) {
	list, operands := false, 0
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.lit {
			if w.flagish() {
				return false, fmt.Sprintf("%s may get an option only known at run time (%s)", name, w.text)
			}
			operands++
			continue
		}
		t := w.text
		if !w.isFlag() {
			operands++
			continue
		}
		if tag && strings.HasPrefix(t, "-n") && (len(t) == 2 || isDigits(t[2:])) {
			list = true
			continue
		}
		flag, _, eq := strings.Cut(t, "=")
		takesValue, ok := flags[flag]
		if !ok && !strings.HasPrefix(t, "--") && clusterOf(t, letters) {
			ok = true
		}
		if !ok {
			return false, fmt.Sprintf("%s %s is not read-only", name, t)
		}
		if flag == "--list" || !strings.HasPrefix(flag, "--") && strings.Contains(flag, "l") {
			list = true
		}
		if takesValue && !eq && i+1 < len(args) && !args[i+1].isFlag() {
			i++
		}
	}
	if operands > 0 && !list {
		return false, name + " with a name creates or changes it"
	}
	return true, ""
}

// clusterOf reports whether t is a cluster of the given short options.
func clusterOf(t, letters string) bool {
	if len(t) < 2 || t[0] != '-' || t[1] == '-' {
		return false
	}
	for i := 1; i < len(t); i++ {
		if strings.IndexByte(letters, t[i]) < 0 {
			return false
		}
	}
	return true
}

// gitRemote allows git remote [-v], git remote show …, git remote get-url ….
func gitRemote(name string, args []word) (bool, string) {
	if len(args) == 0 {
		return true, ""
	}
	if !args[0].lit {
		return false, name + ": the subcommand is only known at run time"
	}
	switch args[0].text {
	case "-v", "--verbose":
		return len(args) == 1, name + " " + args[0].text + " takes no more arguments when listing"
	case "show", "get-url":
		return true, ""
	}
	return false, name + " " + args[0].text + " is not read-only"
}

// gitConfig allows reading options and forbids every writing one.
func gitConfig(name string, args []word) (bool, string) {
	read, operands := false, 0
	for i, w := range args {
		if !w.lit {
			if w.flagish() {
				return false, fmt.Sprintf("%s may get an option only known at run time (%s)", name, w.text)
			}
			operands++
			continue
		}
		flag, _, _ := strings.Cut(w.text, "=")
		switch {
		case slices.Contains([]string{"--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
			"--remove-section", "-e", "--edit"}, flag):
			return false, name + " " + flag + " changes the configuration"
		case slices.Contains([]string{"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l",
			"--get-color", "--get-colorbool"}, flag):
			read = true
		case i == 0 && (flag == "get" || flag == "list"):
			read = true
		case i == 0 && slices.Contains([]string{"set", "unset", "rename-section", "remove-section", "edit"}, flag):
			return false, name + " " + flag + " changes the configuration"
		case !w.isFlag():
			operands++
		}
	}
	if read || operands == 1 {
		return true, ""
	}
	return false, name + " with a value changes the configuration"
}

// gitSubSub allows the listing subcommands of git stash, worktree,
// submodule, reflog and notes.
func gitSubSub(sub string, args []word) (bool, string) {
	first := ""
	if len(args) > 0 {
		if !args[0].lit {
			return false, "git " + sub + ": the subcommand is only known at run time"
		}
		first = args[0].text
	}
	allowed := map[string][]string{
		"stash":     {"list", "show"},
		"worktree":  {"list"},
		"submodule": {"", "status", "summary"},
		"reflog":    {"", "show", "exists"},
		"notes":     {"", "list", "show"},
	}[sub]
	if strings.HasPrefix(first, "-") && slices.Contains(allowed, "") {
		first = "" // options of the default subcommand
	}
	if !slices.Contains(allowed, first) {
		return false, strings.TrimSpace("git "+sub+" "+first) + " is not read-only"
	}
	if len(args) == 0 {
		return true, ""
	}
	return gitOutput.check("git "+sub, args[1:])
}
