package permission

import (
	"fmt"
	"strings"
)

// awkReadOnly judges awk: only -F and -v options, and a literal program
// that neither redirects output, pipes, calls system() nor loads code.
func awkReadOnly(prog string, args []word) (bool, string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.lit {
			if w.flagish() {
				return false, fmt.Sprintf("%s may get an option only known at run time (%s)", prog, w.text)
			}
			return false, prog + ": the program " + w.text + " is only known at run time"
		}
		t := w.text
		switch {
		case t == "--":
			return awkProgram(prog, args[i+1:])
		case t == "-F" || t == "-v":
			i++
		case strings.HasPrefix(t, "-F") || strings.HasPrefix(t, "-v"):
		case w.isFlag():
			return false, fmt.Sprintf("%s %s is not judged (it can load or run code)", prog, t)
		default:
			return awkProgram(prog, args[i:])
		}
	}
	return true, ""
}

func awkProgram(prog string, args []word) (bool, string) {
	if len(args) == 0 {
		return true, ""
	}
	if !args[0].lit {
		return false, prog + ": the program " + args[0].text + " is only known at run time"
	}
	if !awkProgramReadOnly(args[0].text) {
		return false, prog + ": the program may write files or run commands (>, |, system, @load)"
	}
	return true, ""
}

// awkProgramReadOnly reports whether an awk program cannot write a file or
// run a command: no '>' or '|' outside string literals (output
// redirection, pipes; comparisons with '>' are caught too), and no
// system(), extension() or @load/@include.
func awkProgramReadOnly(p string) bool {
	for _, kw := range []string{"system", "extension", "@"} {
		if strings.Contains(p, kw) {
			return false
		}
	}
	inString := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == '>' || c == '|'):
			return false
		}
	}
	return true
}
