package permission

import "strings"

// readOnlyNames are upper-case variables a read-only command may be given:
// locale, time zone, terminal and colour settings.
var readOnlyNames = lazyTable(func() map[string]bool {
	return map[string]bool{
		"LANG": true, "LANGUAGE": true, "TZ": true, "TERM": true, "COLUMNS": true, "LINES": true,
		"NO_COLOR": true, "FORCE_COLOR": true, "CLICOLOR": true, "CLICOLOR_FORCE": true,
		"GREP_COLOR": true, "GREP_COLORS": true, "LS_COLORS": true, "TIME_STYLE": true,
		"QUOTING_STYLE": true,
	}
})

// harmlessNames are upper-case variables known not to change which code
// a program runs: build targets, log levels, modes. They keep a command
// from being read-only but do not stop an allow rule from covering it.
var harmlessNames = lazyTable(func() map[string]bool {
	return map[string]bool{
		"CGO_ENABLED": true, "GOOS": true, "GOARCH": true, "GOARM": true, "GOAMD64": true, "GOMAXPROCS": true,
		"GOTRACEBACK": true, "RUST_BACKTRACE": true, "RUST_LOG": true, "NODE_ENV": true, "CI": true, "DEBUG": true,
		"VERBOSE": true, "PYTHONUNBUFFERED": true, "PYTHONDONTWRITEBYTECODE": true, "RAILS_ENV": true, "PORT": true,
		"TF_LOG": true, "LOG_LEVEL": true, "TIMEOUT": true,
	}
})

// sensitiveLower are prefixes and suffixes of lower-case variables that
// programs read as configuration: npm's and yarn's settings, proxies.
var (
	sensitiveLowerPrefixes = []string{"npm_config_", "yarn_", "bash_"}
	sensitiveLowerSuffixes = []string{"_proxy"}
)

// classifyName says what assigning the variable does to the command it is
// given to, by allowlist: a name with a lower-case letter is an ordinary
// shell variable (except npm_config_*, *_proxy and the like); a name
// without one is read-only when it is a locale or display setting,
// harmless when it is on harmlessNames, and otherwise sensitive — it can
// change which code runs (PATH, BASH_ENV, PS4, GIT_*, LD_*, BASH_CMDS,
// POSIXLY_CORRECT…). notRO: it keeps the command from being read-only.
func classifyName(name string) (notRO, sensitive bool) {
	if hasLower(name) {
		lower := strings.ToLower(name)
		for _, p := range sensitiveLowerPrefixes {
			if strings.HasPrefix(lower, p) {
				return true, true
			}
		}
		for _, p := range sensitiveLowerSuffixes {
			if strings.HasSuffix(lower, p) {
				return true, true
			}
		}
		return false, false
	}
	switch {
	case readOnlyNames()[name] || strings.HasPrefix(name, "LC_"):
		return false, false
	case harmlessNames()[name]:
		return true, false
	}
	return true, true
}

func hasLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'a' && s[i] <= 'z' {
			return true
		}
	}
	return false
}
