package permission

import (
	"strings"
)

// gitGlobalSpec is the allowlist of git's global options (before the
// subcommand). -c, --config-env and --exec-path=DIR can make git run
// other programs and are not on it.
var gitGlobalSpec = newSpec(stylePOSIX, "--no-pager -P -p --paginate --no-optional-locks --literal-pathspecs "+
	"--glob-pathspecs --noglob-pathspecs --icase-pathspecs --no-replace-objects --bare --no-advice --no-lazy-fetch "+
	"-C: --git-dir: --work-tree: --namespace: --version --help -h --html-path --man-path --info-path --exec-path")

// gitGlobals skips git's global options. It returns the words from the
// subcommand on, the global options seen, and false with a reason when an
// option is not on the allowlist or is only known at run time.
func gitGlobals(args []word) ([]word, scanned, bool, string) {
	sc := gitGlobalSpec.scan("git", args)
	if sc.problem != "" {
		return args, sc, false, sc.problem
	}
	for _, o := range sc.opts {
		if o.name == "--exec-path" && o.val != nil {
			return args, sc, false, "git --exec-path=DIR runs programs from DIR"
		}
		if o.val != nil && o.val.multi {
			return args, sc, false, "the value of git " + o.name + " is only known at run time"
		}
	}
	// The operands are the subcommand and its words; scan stopped at the
	// subcommand, so they are the tail of args.
	return args[len(args)-len(sc.operands):], sc, true, ""
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
		rest, _, ok, _ := gitGlobals(words[1:])
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

// Option allowlists of git's read-only subcommands. Git accepts unique
// abbreviations of long options (--unset-a); only whole names are on the
// lists, so an abbreviation asks. Revision and diff options are whole
// words (styleWhole); --output and --ext-diff are not on them.
const (
	gitDiffOpts = "-p -u -s -z -R -a -b -w -W -B:: -M:: -C:: -D -l: -S: -G: -O: -U: -X:: " +
		"--patch --no-patch --unified: --raw --patch-with-raw --stat:: --numstat --shortstat --dirstat:: " +
		"--cumulative --dirstat-by-file:: --summary --patch-with-stat --name-only --name-status --submodule:: " +
		"--color:: --no-color --color-moved:: --no-color-moved --color-moved-ws: --word-diff:: --word-diff-regex: " +
		"--color-words:: --no-renames --check --full-index --binary --abbrev:: --break-rewrites:: " +
		"--find-renames:: --find-copies:: --find-copies-harder --irreversible-delete --diff-filter: " +
		"--pickaxe-all --pickaxe-regex --find-object: --relative:: --no-relative --text --ignore-cr-at-eol " +
		"--ignore-space-at-eol --ignore-space-change --ignore-all-space --ignore-blank-lines " +
		"--ignore-matching-lines: --inter-hunk-context: --function-context --exit-code --quiet --no-ext-diff " +
		"--textconv --no-textconv --ignore-submodules:: --src-prefix: --dst-prefix: --no-prefix --default-prefix " +
		"--line-prefix: --ita-invisible-in-index --ita-visible-in-index --minimal --patience --histogram " +
		"--anchored: --diff-algorithm: --indent-heuristic --no-indent-heuristic --compact-summary --stat-width: " +
		"--stat-name-width: --stat-graph-width: --stat-count: --output-indicator-new: --output-indicator-old: " +
		"--output-indicator-context: --no-stat --merge-base --cached --staged --no-index --name-rev -1 -2 -3 " +
		"--base --ours --theirs -c --cc --combined-all-paths -m --remerge-diff --diff-merges: --no-diff-merges " +
		"--dd --first-parent --rotate-to: --skip-to: -t -r --root --stdin --no-commit-id --always -v --pretty:: " +
		"--format: --expand-tabs:: --no-expand-tabs --notes:: --no-notes --show-notes-by-default --encoding: " +
		"--show-signature -h --help --default: --ws-error-highlight: -K"
	gitRevOpts = "# -n: --max-count: --skip: --since: --after: --until: --before: --author: --committer: --grep-reflog: " +
		"--grep: --all-match --invert-grep -i --regexp-ignore-case --basic-regexp -E --extended-regexp -F " +
		"--fixed-strings -P --perl-regexp --remove-empty --merges --no-merges --min-parents: --max-parents: " +
		"--no-min-parents --no-max-parents --first-parent --exclude-first-parent-only --not --all --branches:: " +
		"--tags:: --remotes:: --glob: --exclude: --exclude-hidden: --reflog --alternate-refs --single-worktree " +
		"--ignore-missing --bisect --cherry-mark --cherry-pick --left-only --right-only --cherry -g " +
		"--walk-reflogs --merge --boundary --simplify-by-decoration --show-pulls --full-history --dense --sparse " +
		"--simplify-merges --ancestry-path:: --date-order --author-date-order --topo-order --reverse --no-walk:: " +
		"--do-walk --oneline --decorate:: --no-decorate --decorate-refs: --decorate-refs-exclude: --source " +
		"--mailmap --no-mailmap --use-mailmap --no-use-mailmap --full-diff --log-size -L: --relative-date " +
		"--date: --parents --children --left-right --graph --show-linear-break:: --follow --abbrev-commit " +
		"--no-abbrev-commit --no-abbrev --clear-decorations --count --objects --objects-edge --unpacked " +
		"--in-commit-order --no-object-names --filter: --missing: --timestamp --header --show-origin "
	gitLogOpts = gitRevOpts + gitDiffOpts
)

// gitSubs are git's read-only subcommands and their allowlists.
var gitSubs = lazyTable(func() map[string]program {
	return map[string]program{
		"log":         std(styleWhole, gitLogOpts),
		"show":        std(styleWhole, gitLogOpts),
		"whatchanged": std(styleWhole, gitLogOpts),
		"rev-list":    std(styleWhole, gitLogOpts+" --quiet --disk-usage:: --exclude-promisor-objects --use-bitmap-index --indexed-objects"),
		"shortlog":    std(styleWhole, gitRevOpts+" -s -e -c -w:: --numbered --summary --email --committer --group: --format:: -h"),
		"diff":        std(styleWhole, gitDiffOpts),
		"diff-tree":   std(styleWhole, gitDiffOpts),
		"diff-files":  std(styleWhole, gitDiffOpts+" -q"),
		"diff-index":  std(styleWhole, gitDiffOpts),
		"range-diff":  std(styleWhole, gitDiffOpts+" --creation-factor: --no-dual-color --left-only --right-only"),
		"status": std(styleGNU, "-s -b -z -v -u:: -M:: --short --branch --porcelain:: --long --show-stash --ahead-behind "+
			"--no-ahead-behind --untracked-files:: --ignored:: --ignore-submodules:: --column:: --no-column --renames "+
			"--no-renames --find-renames:: --null --verbose -h --help"),
		"blame": std(styleGNU, "-b -c -e -f -l -n -p -s -t -w -M:: -C:: -L: -S: --root --show-stats --porcelain --line-porcelain "+
			"--incremental --encoding: --contents: --date: --progress --no-progress --score-debug --show-name "+
			"--show-number --show-email --abbrev:: --ignore-rev: --ignore-revs-file: --color-lines --color-by-age "+
			"--minimal --reverse: --first-parent -h --help"),
		"annotate": std(styleGNU, "-b -c -e -f -l -n -p -s -t -w -M:: -C:: -L: -S: --root --show-stats --porcelain --incremental "+
			"--encoding: --contents: --date: --show-name --show-number --show-email --abbrev:: -h --help"),
		"describe": std(styleGNU, "--all --tags --contains --abbrev:: --candidates: --exact-match --debug --long --match: --exclude: "+
			"--always --first-parent --dirty:: --broken:: -h --help"),
		"rev-parse": std(styleGNU, "--show-toplevel --git-dir --absolute-git-dir --git-common-dir --is-inside-work-tree "+
			"--is-inside-git-dir --is-bare-repository --is-shallow-repository --show-prefix --show-cdup "+
			"--show-superproject-working-tree --abbrev-ref:: --short:: --verify --quiet -q --symbolic --symbolic-full-name "+
			"--all --branches:: --tags:: --remotes:: --glob: --exclude: --default: --prefix: --sq --sq-quote --not "+
			"--revs-only --no-revs --flags --no-flags --local-env-vars --path-format: --git-path: --show-object-format:: "+
			"--resolve-git-dir: --since: --after: --until: --before: --shared-index-path --disambiguate: --end-of-options -h --help"),
		"ls-files": std(styleGNU, "-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others --ignored --stage "+
			"--unmerged --killed --directory --no-empty-directory --eol --exclude: -x: --exclude-from: -X: "+
			"--exclude-per-directory: --exclude-standard --error-unmatch --with-tree: --full-name --recurse-submodules "+
			"--abbrev:: --debug --deduplicate --sparse --format: --resolve-undo -h --help"),
		"ls-tree": std(styleGNU, "-d -r -t -l -z --long --name-only --name-status --object-only --full-name --full-tree --abbrev:: --format: -h --help"),
		"cat-file": std(styleGNU, "-t -s -e -p --batch:: --batch-check:: --batch-command:: --batch-all-objects --buffer "+
			"--follow-symlinks --unordered --textconv --filters --path: --allow-unknown-type --use-mailmap --no-use-mailmap -Z -h --help"),
		"merge-base": std(styleGNU, "-a --all --octopus --independent --is-ancestor --fork-point -h --help"),
		"name-rev":   std(styleGNU, "--tags --refs: --exclude: --all --annotate-stdin --name-only --no-undefined --always -h --help"),
		"for-each-ref": std(styleGNU, "--count: --shell -s --perl -p --python --tcl --sort: --format: --color:: --points-at: "+
			"--merged: --no-merged: --contains: --no-contains: --ignore-case --omit-empty --stdin --exclude: "+
			"--include-root-refs -h --help"),
		"show-ref": std(styleGNU, "--head --heads --tags --branches -d --dereference -s --hash:: --abbrev:: --verify -q --quiet "+
			"--exclude-existing:: --exists -h --help"),
		"show-branch": std(styleGNU, "-a -r -g --all --remotes --topo-order --date-order --current --color:: --no-color --more: "+
			"--list --merge-base --independent --no-name --sha1-name --sparse --topics --reflog:: -h --help"),
		"check-ignore":  std(styleGNU, "-q -v -n -z --quiet --verbose --non-matching --stdin --no-index -h --help"),
		"check-attr":    std(styleGNU, "-a -z --all --cached --stdin --source: -h --help"),
		"count-objects": std(styleGNU, "-v -H --verbose --human-readable -h --help"),
		"cherry":        std(styleGNU, "-v --abbrev:: -h --help"),
		"version":       std(styleGNU, "--build-options -h --help"),
		"grep": std(styleGNU, "# -e: -f: -i -v -w -n -l -L -c -h -H -o -q -E -F -G -P -r -I -W -p -z -a -A: -B: -C: -m: "+
			"--cached --untracked --no-index --no-recursive --recurse-submodules --max-depth: --and --or --not "+
			"--all-match --heading --break --color:: --no-color --column --null --full-name --threads: "+
			"--exclude-standard --no-exclude-standard --name-only --files-with-matches --files-without-match --count "+
			"--line-number --ignore-case --word-regexp --invert-match --extended-regexp --fixed-strings "+
			"--basic-regexp --perl-regexp --only-matching --quiet --text --textconv --no-textconv --max-count: "+
			"--function-context --show-function --no-index --recursive --help"),
		"branch": {spec: newSpec(styleGNU, "-a -r -v -l -i -q --all --remotes --verbose --list --show-current --no-color --color:: "+
			"--no-column --column:: --ignore-case --omit-empty --no-abbrev --abbrev:: --quiet --sort: --format: "+
			"--points-at: --contains: --no-contains: --merged: --no-merged: -h --help"), check: listing("--list", "-l")},
		"tag": {spec: newSpec(styleGNU, "-l -i -n:: --list --no-column --column:: --ignore-case --color:: --omit-empty --sort: "+
			"--format: --points-at: --contains: --no-contains: --merged: --no-merged: -h --help"), check: listing("--list", "-l", "-n")},
		"help": std(styleGNU, "-a -g -c -m --all --guides --config --man --user-interfaces --developer-interfaces --verbose "+
			"--no-verbose --no-external-commands --no-aliases"),
		"remote":    {custom: gitRemote},
		"config":    {custom: gitConfig},
		"stash":     {custom: gitGroup(map[string]program{"list": std(styleWhole, gitLogOpts), "show": std(styleWhole, gitDiffOpts+" --include-untracked --only-untracked")}, "")},
		"worktree":  {custom: gitGroup(map[string]program{"list": std(styleGNU, "--porcelain -z -v --verbose --expire:")}, "")},
		"submodule": {custom: gitSubmodule},
		"reflog": {custom: gitGroup(map[string]program{"show": std(styleWhole, gitLogOpts),
			"exists": std(styleGNU, "")}, "show")},
		"notes": {custom: gitNotes},
	}
})

// listing is the check of git branch and git tag: a name creates one
// unless it lists (--list, -l, -n).
func listing(flags ...string) func(string, *scanned) string {
	return func(name string, sc *scanned) string {
		if len(sc.operands) > 0 && !sc.has(flags...) {
			return name + " with a name creates or changes it"
		}
		return ""
	}
}

// gitReadOnly judges git: global options, then the subcommand.
func gitReadOnly(prog string, args []word, open bool) roResult {
	if open {
		return notRO("git receives more arguments at run time (xargs)")
	}
	rest, globals, ok, why := gitGlobals(args)
	if !ok {
		return notRO("%s", why)
	}
	if globals.has("--version", "--help", "-h", "--html-path", "--man-path", "--info-path", "--exec-path") {
		return roResult{ok: len(rest) == 0 || globals.has("--help", "-h"), why: "git with an information option takes no subcommand", forever: ""}
	}
	if len(rest) == 0 {
		return roResult{ok: true} // git alone prints its usage
	}
	if !rest[0].lit {
		return notRO("git: the subcommand %s is only known at run time", rest[0].text)
	}
	sub := rest[0].text
	p, ok := gitSubs()[sub]
	if !ok {
		return notRO("git %s is not on the read-only list", sub)
	}
	r := p.judge("git "+sub, rest[1:], false)
	r.files = nil
	return r
}

// gitGroup judges a subcommand with subcommands of its own (git stash
// list); def is the default one, used when the first word is an option
// or missing ("" when there is none).
func gitGroup(subs map[string]program, def string) func(string, []word, bool) roResult {
	return func(name string, args []word, open bool) roResult {
		first := def
		if len(args) > 0 && !args[0].isFlag() {
			if !args[0].lit {
				return notRO("%s: the subcommand %s is only known at run time", name, args[0].text)
			}
			first, args = args[0].text, args[1:]
		}
		p, ok := subs[first]
		if !ok {
			return notRO("%s is not read-only", strings.TrimSpace(name+" "+first))
		}
		return p.judge(name+" "+first, args, open)
	}
}

// gitRemote allows git remote [-v], git remote get-url and git remote
// show -n (without -n, show contacts the remote).
func gitRemote(name string, args []word, open bool) roResult {
	return gitGroup(map[string]program{
		"":        std(styleGNU, "-v --verbose"),
		"get-url": std(styleGNU, "--push --all"),
		"show": {spec: newSpec(styleGNU, "-n"), check: func(name string, sc *scanned) string {
			if !sc.has("-n") {
				return name + " contacts the remote unless -n is given"
			}
			return ""
		}},
	}, "")(name, args, open)
}

// gitSubmodule allows git submodule [--quiet] [status|summary …].
func gitSubmodule(name string, args []word, open bool) roResult {
	for len(args) > 0 && args[0].lit && (args[0].text == "--quiet" || args[0].text == "-q") {
		args = args[1:]
	}
	return gitGroup(map[string]program{
		"":        std(styleGNU, ""),
		"status":  std(styleGNU, "--cached --recursive -q --quiet"),
		"summary": std(styleGNU, "--cached --files -n: --summary-limit: -q --quiet"),
	}, "")(name, args, open)
}

// gitNotes allows git notes [--ref R] [list|show …].
func gitNotes(name string, args []word, open bool) roResult {
	if len(args) > 0 && args[0].lit && strings.HasPrefix(args[0].text, "--ref=") {
		args = args[1:]
	} else if len(args) > 1 && args[0].lit && args[0].text == "--ref" && !args[1].flagish() {
		args = args[2:]
	}
	return gitGroup(map[string]program{"": std(styleGNU, ""), "list": std(styleGNU, ""), "show": std(styleGNU, "")}, "")(name, args, open)
}

// gitConfigSpec lists the reading forms of git config and their
// modifiers; --add, --unset*, --replace-all, --rename-section,
// --remove-section and --edit are not on it.
var gitConfigSpec = newSpec(styleGNU, "--get --get-all --get-regexp --get-urlmatch --list -l --get-color --get-colorbool "+
	"--global --system --local --worktree -f: --file: --blob: --includes --no-includes --show-origin --show-scope "+
	"--name-only -z --null --type: --bool --int --bool-or-int --path --expiry-date --default: --fixed-value "+
	"--all --regexp: --value: --url: -h --help")

// gitConfig allows reading options and forbids every writing one.
func gitConfig(name string, args []word, open bool) roResult {
	if len(args) > 0 && args[0].lit {
		switch args[0].text {
		case "get", "list":
			sc := gitConfigSpec.scan(name, args[1:])
			if sc.problem != "" {
				return notRO("%s", sc.problem)
			}
			return roResult{ok: true}
		case "set", "unset", "rename-section", "remove-section", "edit":
			return notRO("%s %s changes the configuration", name, args[0].text)
		}
	}
	sc := gitConfigSpec.scan(name, args)
	if sc.problem != "" {
		return notRO("%s", sc.problem)
	}
	if sc.has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool", "-h", "--help") ||
		len(sc.operands) == 1 && !sc.operands[0].multi {
		return roResult{ok: true}
	}
	return notRO("%s with a value changes the configuration", name)
}
