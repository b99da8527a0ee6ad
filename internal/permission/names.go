package permission

import "strings"

// readOnlyNames are upper-case variables a read-only command may be given:
// locale, time zone, terminal and colour settings.
var readOnlyNames = map[string]bool{
	"LANG": true, "LANGUAGE": true, "TZ": true, "TERM": true, "COLUMNS": true, "LINES": true,
	"NO_COLOR": true, "FORCE_COLOR": true, "CLICOLOR": true, "CLICOLOR_FORCE": true,
	"GREP_COLOR": true, "GREP_COLORS": true, "LS_COLORS": true, "TIME_STYLE": true,
	"QUOTING_STYLE": true, "POSIXLY_CORRECT": true,
}

// sensitiveNames are variables that can change which code a program runs
// (search paths, preloads, hooks, pagers, editors, config locations,
// interpreter options). Best effort: the list cannot be complete.
var sensitiveNames = map[string]bool{
	"PATH": true, "BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true,
	"PS4": true, "IFS": true, "PROMPT_COMMAND": true, "CDPATH": true,
	"HOME": true, "ZDOTDIR": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true,
	"EDITOR": true, "VISUAL": true, "BROWSER": true, "LESSOPEN": true, "LESSCLOSE": true,
	"SSH_ASKPASS": true, "SUDO_ASKPASS": true, "GCONV_PATH": true,
	"NODE_OPTIONS": true, "NODE_PATH": true, "JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true,
	"JDK_JAVA_OPTIONS": true, "PERL5OPT": true, "PERL5LIB": true, "PERLLIB": true,
	"PYTHONPATH": true, "PYTHONSTARTUP": true, "PYTHONHOME": true, "RUBYOPT": true, "RUBYLIB": true,
	"GOFLAGS": true, "CC": true, "CXX": true, "LD": true, "MAKEFLAGS": true,
	"RUSTC": true, "RUSTC_WRAPPER": true, "RUSTFLAGS": true,
}

var sensitivePrefixes = []string{"LD_", "DYLD_", "BASH_FUNC_", "GIT_", "NPM_CONFIG_", "npm_config_", "CARGO_"}

// classifyName says what assigning the variable does to the command it is
// given to: notRO when it keeps the command from being read-only (any name
// with no lower-case letter, except locale and display settings), and
// sensitive when it can change which code runs.
func classifyName(name string) (notRO, sensitive bool) {
	sensitive = sensitiveNames[name] || strings.HasSuffix(name, "PAGER")
	for _, p := range sensitivePrefixes {
		if strings.HasPrefix(name, p) {
			sensitive = true
		}
	}
	if sensitive {
		return true, true
	}
	if readOnlyNames[name] || strings.HasPrefix(name, "LC_") {
		return false, false
	}
	return !hasLower(name), false
}

func hasLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'a' && s[i] <= 'z' {
			return true
		}
	}
	return false
}
