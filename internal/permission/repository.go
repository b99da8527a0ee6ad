package permission

// Creating a git repository asks first (issue 32): at a confined level the
// sandbox keeps a workspace without a repository from getting one (a
// placeholder holds the name .git), so that hooks and config cannot be
// planted before the user's own `git init`. The judge therefore classes
// `git init` as a question in auto mode too (in ask mode it is one anyway:
// it writes), and marks the verdict, so that an approved run can lift the
// placeholder (executor.Spec.AllowNewRepository).

// createsRepository reports whether the line runs `git init` (global
// options such as -C allowed), or a git whose subcommand is known only at
// run time.
func (an *analysis) createsRepository() bool {
	for _, it := range an.items {
		if it.kind != kindCommand || len(it.words) == 0 || !it.words[0].lit || programName(it.words[0].text) != "git" {
			continue
		}
		words, ok := canonical(it.words)
		if !ok {
			// Global options off the allowlist (-c …): the subcommand is
			// one of the words; any that is init or unknown counts.
			for _, w := range it.words[1:] {
				if !w.lit || w.text == "init" {
					return true
				}
			}
			continue
		}
		if len(words) < 2 {
			continue
		}
		if sub := words[1]; !sub.lit || sub.text == "init" {
			return true
		}
	}
	return false
}

// CreatesRepository reports whether command runs `git init` (or a git
// whose subcommand is known only at run time): what a command the user
// typed needs to be let create a repository at a confined level.
func CreatesRepository(command string) bool { return analyze(command).createsRepository() }

// askForRepository turns an auto-mode Allow of a line that creates a
// repository into a question.
func askForRepository(an *analysis, v Verdict) Verdict {
	if !an.createsRepository() {
		return v
	}
	v.CreatesRepository = true
	if v.Decision == Allow {
		v.Decision = Ask
		v.Reason = "creates a git repository, which asks first (its hooks and config would run later, outside the sandbox)"
		v.Prefixes = nil
	}
	return v
}
