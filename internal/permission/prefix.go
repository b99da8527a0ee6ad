package permission

import (
	"path"
	"slices"
)

// subcommandTools are programs whose first argument is a subcommand. The
// always-allow prefix of their commands is program + subcommand; the
// listed subcommands (or all, for "*") take a third word too (npm run
// build, git stash drop, docker compose up, gh pr create).
var subcommandTools = lazyTable(func() map[string][]string {
	return map[string][]string{
		"git":       {"stash", "remote", "worktree", "submodule", "notes", "lfs", "bisect", "reflog", "sparse-checkout", "maintenance"},
		"go":        {"mod", "work", "run", "tool"},
		"cargo":     nil,
		"rustup":    {"toolchain", "target", "component", "override"},
		"docker":    {"compose", "container", "image", "volume", "network", "system", "builder", "buildx", "context", "plugin", "swarm", "service", "stack", "secret", "config", "node", "trust", "manifest"},
		"podman":    {"compose", "container", "image", "volume", "network", "system", "pod", "machine", "secret", "manifest"},
		"kubectl":   {"config", "rollout", "auth", "certificate", "set", "top", "create"},
		"helm":      {"repo", "plugin", "dependency", "registry"},
		"npm":       {"run", "run-script"},
		"yarn":      {"run", "workspace"},
		"pnpm":      {"run"},
		"bun":       {"run"},
		"deno":      {"task", "run"},
		"uv":        {"run", "pip", "tool", "python", "cache"},
		"poetry":    {"run"},
		"pipenv":    {"run"},
		"bundle":    {"exec"},
		"gh":        {"*"},
		"glab":      {"*"},
		"aws":       {"*"},
		"az":        {"*"},
		"gcloud":    {"*"},
		"terraform": {"state", "workspace"},
		"tofu":      {"state", "workspace"},
		"make":      nil, "just": nil, "pip": nil, "pip3": nil, "conda": {"env"}, "brew": nil,
		"apt": nil, "apt-get": nil, "dnf": nil, "yum": nil, "systemctl": nil, "dotnet": nil,
		"mvn": nil, "gradle": nil, "nix": nil, "zig": nil, "bazel": nil, "swift": {"package"},
		"composer": nil, "rails": nil, "rake": nil, "mix": nil, "cabal": nil, "stack": nil,
		"flutter": nil, "dart": nil,
	}
})

// neverAlwaysAllow are programs whose first argument is no safe boundary
// (rm build would allow rm build ~): always-allow is never offered for
// them, nor for privilege and code-evaluating tools.
var neverAlwaysAllow = lazyTable(func() map[string]bool {
	return map[string]bool{
		"rm": true, "rmdir": true, "unlink": true, "shred": true, "dd": true, "mv": true, "cp": true,
		"ln": true, "install": true, "truncate": true, "chmod": true, "chown": true, "chgrp": true,
		"chattr": true, "setfacl": true, "mount": true, "umount": true, "kill": true, "killall": true,
		"pkill": true, "sudo": true, "doas": true, "su": true, "eval": true, "exec": true, "source": true,
		".": true, "tee": true, "curl": true, "wget": true, "scp": true, "rsync": true, "ssh": true,
		"sed": true, "awk": true, "gawk": true, "perl": true, "find": true, "xargs": true, "crontab": true,
		"tar": true, "mkfs": true, "fdisk": true, "parted": true, "systemd-run": true,
	}
})

// subcommandWord is what a subcommand (or script name) must look like.
var subcommandWord = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// hasSubcommands reports whether the program's first argument is a
// subcommand.
func hasSubcommands(name string) bool {
	_, ok := subcommandTools()[name]
	return ok
}

// prefixOf is the prefix always-allow would remember for a command, or ""
// when none may be offered. It is program + subcommand for tools with
// subcommands (three words for npm run X and the like), program + first
// argument for other programs, and never the program alone; the words must
// be literal and the first argument must not be an option.
func prefixOf(it item) string {
	if it.kind != kindCommand || len(it.sensitive) > 0 {
		return ""
	}
	words, ok := canonical(it.words)
	if !ok || len(words) < 2 || !words[0].lit {
		return ""
	}
	name := programName(words[0].text)
	if neverAlwaysAllow()[name] || neverAlwaysAllow()[path.Base(words[0].text)] || isMkfs(name) {
		return ""
	}
	literal := func(i int, subcommand bool) bool {
		if i >= len(words) || !words[i].lit || words[i].text == "" || words[i].isFlag() || words[i].text[0] == '-' {
			return false
		}
		return !subcommand || subcommandWord().MatchString(words[i].text)
	}
	third, tool := subcommandTools()[name]
	if !literal(1, tool) {
		return ""
	}
	n := 2
	for _, s := range third {
		if s == "*" || s == words[1].text {
			if !literal(2, false) {
				return ""
			}
			n = 3
			break
		}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = words[i].text
	}
	return ruleString(out)
}

// ruleString renders words as a rule, or "" when the rule would not read
// back as the same words (bytes the shell cannot quote plainly).
func ruleString(ws []string) string {
	s := joinRule(ws)
	back, err := parseRule(s)
	if err != nil || !slices.Equal(back, ws) {
		return ""
	}
	return s
}

func isMkfs(name string) bool { return len(name) > 4 && name[:5] == "mkfs." }
