package tools

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// fill renders tmpl, written in the part of text/template's syntax the
// embedded texts use: {{.Name}} prints a field; {{if .Name}}…{{else}}…{{end}}
// keeps one branch, by whether the field is set (true, non-zero, non-empty);
// "{{- " and " -}}" trim the white space before and after the action, as
// text/template does. field looks a name up: its text, whether it is set,
// and ok false for a name it does not know. An unknown name, another kind
// of action or an unbalanced if is an error.
//
// It replaces text/template, whose reflection-based method calls keep the
// linker from dropping any unused exported method of the whole binary
// (about 3 MB of it, paid in page faults at every start).
func fill(tmpl string, field func(name string) (text string, set, ok bool)) (string, error) {
	type branch struct{ outer, cond, inElse bool }
	var (
		out      strings.Builder
		stack    []branch
		active   = true
		trimNext bool
	)
	for {
		open := strings.Index(tmpl, "{{")
		text := tmpl
		if open >= 0 {
			text = tmpl[:open]
		}
		if trimNext {
			text = strings.TrimLeft(text, spaces)
		}
		if open < 0 {
			if active {
				out.WriteString(text)
			}
			break
		}
		rest := tmpl[open+2:]
		end := strings.Index(rest, "}}")
		if end < 0 {
			return "", errors.New("unclosed action")
		}
		action := rest[:end]
		tmpl = rest[end+2:]
		if a, ok := strings.CutPrefix(action, "- "); ok {
			text, action = strings.TrimRight(text, spaces), a
		}
		action, trimNext = strings.CutSuffix(action, " -")
		if active {
			out.WriteString(text)
		}
		action = strings.TrimSpace(action)
		switch {
		case action == "else":
			if len(stack) == 0 || stack[len(stack)-1].inElse {
				return "", errors.New("{{else}} without {{if}}")
			}
			top := &stack[len(stack)-1]
			top.inElse = true
			active = top.outer && !top.cond
		case action == "end":
			if len(stack) == 0 {
				return "", errors.New("{{end}} without {{if}}")
			}
			active = stack[len(stack)-1].outer
			stack = stack[:len(stack)-1]
		case strings.HasPrefix(action, "if "):
			_, set, err := lookup(field, strings.TrimSpace(action[3:]))
			if err != nil {
				return "", err
			}
			stack = append(stack, branch{outer: active, cond: set})
			active = active && set
		default:
			v, _, err := lookup(field, action)
			if err != nil {
				return "", err
			}
			if active {
				out.WriteString(v)
			}
		}
	}
	if len(stack) > 0 {
		return "", errors.New("{{if}} without {{end}}")
	}
	return out.String(), nil
}

// spaces is what "{{- " and " -}}" trim (text/template's white space).
const spaces = " \t\r\n"

// lookup resolves a ".Name" reference.
func lookup(field func(string) (string, bool, bool), ref string) (string, bool, error) {
	name, ok := strings.CutPrefix(ref, ".")
	if !ok {
		return "", false, fmt.Errorf("unsupported action {{%s}}", ref)
	}
	v, set, known := field(name)
	if !known {
		return "", false, fmt.Errorf("no field %q", name)
	}
	return v, set, nil
}

// field is textData's fields for fill.
func (d textData) field(name string) (text string, set, ok bool) {
	str := func(s string) (string, bool, bool) { return s, s != "", true }
	num := func(n int64) (string, bool, bool) { return strconv.FormatInt(n, 10), n != 0, true }
	flag := func(b bool) (string, bool, bool) { return strconv.FormatBool(b), b, true }
	switch name {
	case "DefaultTimeout":
		return str(d.DefaultTimeout)
	case "MaxTimeout":
		return str(d.MaxTimeout)
	case "DefaultTimeoutMs":
		return num(d.DefaultTimeoutMs)
	case "MaxTimeoutMs":
		return num(d.MaxTimeoutMs)
	case "OutputLimit":
		return num(int64(d.OutputLimit))
	case "Level":
		return str(string(d.Level))
	case "Confined":
		return flag(d.Confined)
	case "Writable":
		return flag(d.Writable)
	case "Network":
		return flag(d.Network)
	case "Where":
		return str(d.Where)
	}
	return "", false, false
}
