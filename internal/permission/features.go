package permission

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// feature judges the shell features that are not commands: expansions,
// arithmetic, tests, comments, loops. Each node type is listed: the ones
// harmless by construction pass, the others are judged, and a type not
// listed cannot be judged (a newer parser may add features).
func (a *analyzer) feature(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.Comment:
		a.comment(n)
	case *syntax.DblQuoted:
		if nestedSingleQuotes(n) {
			a.an.cannotJudge("single quotes inside an expansion in double quotes do not quote in bash: %s", nodeSource(n))
		}
	case *syntax.ParamExp:
		a.param(n)
	case *syntax.ArithmExp:
		a.arithm(n.X, nodeSource(n))
	case *syntax.ArithmCmd:
		a.arithm(n.X, nodeSource(n))
	case *syntax.LetClause:
		for _, x := range n.Exprs {
			a.arithm(x, nodeSource(n))
		}
	case *syntax.CStyleLoop:
		for _, x := range []syntax.ArithmExpr{n.Init, n.Cond, n.Post} {
			if x != nil {
				a.arithm(x, "for (( … ))")
			}
		}
		a.an.forever.add("an arithmetic for loop may never end")
	case *syntax.WhileClause:
		a.an.forever.add("a while or until loop may never end")
	case *syntax.TestClause:
		a.test(n.X)
	case *syntax.Assign:
		if n.Index != nil {
			a.arithm(n.Index, nodeSource(n))
		}
	case *syntax.ArrayElem:
		if n.Index != nil {
			a.arithm(n.Index, nodeSource(n))
		}
	case *syntax.CoprocClause:
		a.an.effect(nodeSource(n), "starts a coprocess")
		a.an.forever.add("a coprocess may never end")
	case *syntax.FuncDecl:
		if a.inside(isFunc) {
			a.an.forever.add("a function defined inside a function may recurse")
		}
	case *syntax.File, *syntax.Word, *syntax.Lit, *syntax.SglQuoted, *syntax.CmdSubst, *syntax.ProcSubst,
		*syntax.BinaryCmd, *syntax.Subshell, *syntax.Block, *syntax.IfClause, *syntax.CaseClause,
		*syntax.CaseItem, *syntax.WordIter, *syntax.TimeClause, *syntax.Redirect, *syntax.ArrayExpr,
		*syntax.ExtGlob, *syntax.BraceExp, *syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm,
		*syntax.BinaryTest, *syntax.UnaryTest, *syntax.ParenTest:
	default:
		a.an.cannotJudge("the shell feature %s is not known to be harmless", strings.TrimPrefix(fmt.Sprintf("%T", n), "*syntax."))
	}
}

func isFunc(n syntax.Node) bool {
	_, ok := n.(*syntax.FuncDecl)
	return ok
}

// comment asks when a comment ends in a backslash: mvdan's parser joins
// the next line to the command before the comment, bash does not, so the
// two would see different commands.
func (a *analyzer) comment(c *syntax.Comment) {
	if strings.Contains(c.Text, "\\\n") || strings.HasSuffix(c.Text, "\\") {
		a.an.cannotJudge("a comment ends in a backslash, which the parser and bash read differently")
	}
}

// nestedSingleQuotes reports whether single quotes appear inside n
// outside any command substitution: inside double quotes and unquoted
// here-documents bash does not treat them as quotes, while the parser
// does ("${x:-'$(…)'}").
func nestedSingleQuotes(n syntax.Node) bool {
	found := false
	var walk func(syntax.Node) bool
	walk = func(m syntax.Node) bool {
		switch m.(type) {
		case *syntax.SglQuoted:
			found = true
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		}
		return !found
	}
	syntax.Walk(n, walk)
	return found
}

// harmlessAtOps are the ${x@op} transformations that do not evaluate the
// value: quoting, escapes, attributes, case.
var harmlessAtOps = lazyTable(func() map[string]bool {
	return map[string]bool{"Q": true, "E": true, "a": true, "A": true, "K": true, "k": true, "U": true, "u": true, "L": true}
})

// param judges a parameter expansion: plain names, lengths, defaults,
// pattern removal and replacement, case changes and numeric subscripts
// are harmless. Indirection (${!x}), ${x@P}, subscripts and slices that
// evaluate names as arithmetic, and assignments (${x:=v}) are not.
func (a *analyzer) param(pe *syntax.ParamExp) {
	src := nodeSource(pe)
	if pe.Flags != nil || pe.Width || pe.IsSet || pe.NestedParam != nil || len(pe.Modifiers) > 0 ||
		pe.Split != syntax.OptUnset || pe.GlobSubst != syntax.OptUnset || pe.RcExpand != syntax.OptUnset {
		a.an.cannotJudge("%s is not bash", src)
		return
	}
	if pe.Excl && pe.Names == 0 && !allIndex(pe.Index) {
		a.an.effect(src, "indirect expansion reads the variable named by a value, which can run commands")
	}
	if pe.Index != nil && !allIndex(pe.Index) {
		a.arithm(pe.Index, src)
	}
	if pe.Slice != nil {
		for _, x := range []syntax.ArithmExpr{pe.Slice.Offset, pe.Slice.Length} {
			if x != nil {
				a.arithm(x, src)
			}
		}
	}
	if pe.Exp == nil {
		return
	}
	switch pe.Exp.Op {
	case syntax.AssignUnset, syntax.AssignUnsetOrNull:
		if pe.Param != nil {
			a.assignName(pe.Param.Value, src)
		}
		if pe.Index != nil || pe.Param == nil {
			a.an.effect(src, "assigns an array element")
		}
	case syntax.OtherParamOps:
		if op := pe.Exp.Word.Lit(); !harmlessAtOps()[op] {
			a.an.effect(src, "${…@"+op+"} evaluates the value (prompt expansion runs commands)")
		}
	case syntax.MatchEmpty, syntax.ArrayExclude, syntax.ArrayIntersect:
		a.an.cannotJudge("%s is not bash", src)
	}
}

// allIndex reports whether a subscript is @ or *.
func allIndex(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	return ok && (w.Lit() == "@" || w.Lit() == "*")
}

// numberLit matches the integer constants of bash arithmetic.
var numberLit = lazyRegexp(`^([0-9]+|0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z@_]+)$`)

// arithm judges an arithmetic expression: harmless when its operands are
// integer constants and numeric special parameters ($#, $?, $$, $!,
// ${#x}). A name, or any other expansion, makes bash evaluate a value as
// an expression, and a value like a[$(cmd)] runs cmd; quotes inside it
// are read differently by the parser and bash.
func (a *analyzer) arithm(x syntax.ArithmExpr, src string) {
	bad, quoted := "", false
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Word:
			if numberLit().MatchString(n.Lit()) {
				return false
			}
			if len(n.Parts) == 1 {
				if pe, ok := n.Parts[0].(*syntax.ParamExp); ok && numericParam(pe) {
					return false
				}
			}
			if bad == "" {
				bad = nodeSource(n)
			}
		case *syntax.SglQuoted, *syntax.DblQuoted:
			quoted = true
		}
		return true
	})
	switch {
	case quoted:
		a.an.cannotJudge("quotes inside arithmetic are read differently by the parser and bash: %s", src)
	case bad != "":
		a.an.effect(src, "arithmetic evaluates the value of "+bad+" as an expression, which can run commands")
	}
}

// numericParam reports whether an expansion always yields a number.
func numericParam(pe *syntax.ParamExp) bool {
	if pe.Param == nil || pe.Excl || pe.Index != nil || pe.Slice != nil || pe.Repl != nil || pe.Exp != nil || pe.Names != 0 {
		return false
	}
	if pe.Length {
		return true
	}
	switch pe.Param.Value {
	case "#", "?", "$", "!":
		return true
	}
	return false
}

// arithmeticTestOps are the [[ ]] operators that evaluate their operands
// as arithmetic.
var arithmeticTestOps = lazyTable(func() map[syntax.BinTestOperator]bool {
	return map[syntax.BinTestOperator]bool{
		syntax.TsEql: true, syntax.TsNeq: true, syntax.TsLeq: true, syntax.TsGeq: true, syntax.TsLss: true, syntax.TsGtr: true,
	}
})

// test judges a [[ … ]] expression: -eq and friends evaluate their
// operands as arithmetic, -v and -R evaluate a subscript.
func (a *analyzer) test(x syntax.TestExpr) {
	switch x := x.(type) {
	case *syntax.BinaryTest:
		if arithmeticTestOps()[x.Op] {
			for _, side := range []syntax.TestExpr{x.X, x.Y} {
				if w, ok := side.(*syntax.Word); ok {
					a.arithm(w, "[[ "+nodeSource(x)+" ]]")
				}
			}
		}
		a.test(x.X)
		a.test(x.Y)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			if w, ok := x.X.(*syntax.Word); ok {
				a.varOperand(convertWord(w), "[[ "+nodeSource(x)+" ]]")
			}
		}
		a.test(x.X)
	case *syntax.ParenTest:
		a.test(x.X)
	}
}

// varOperand judges the operand of test -v / -R, which bash reads as a
// variable name with an optional subscript that it evaluates.
func (a *analyzer) varOperand(w word, src string) {
	switch {
	case !w.lit:
		a.an.effect(src, "the variable name is only known at run time; its subscript would be evaluated")
	case validName(w.text) || subscripted(w.text):
	default:
		a.an.cannotJudge("%s: bash evaluates the subscript of %s as code", src, quoteWord(w.text))
	}
}

// subscripted reports whether s is name[digits].
func subscripted(s string) bool {
	name, rest, ok := strings.Cut(s, "[")
	return ok && validName(name) && strings.HasSuffix(rest, "]") && isDigits(strings.TrimSuffix(rest, "]"))
}
