package permission

import "strings"

// findPrimaries are the find expression words known to be read-only, by
// the number of values each takes. -exec and friends are handled apart;
// -delete, -fprint* and -fls write and are not listed.
var findPrimaries = lazyTable(func() map[string]int {
	return map[string]int{
		// operators
		"(": 0, ")": 0, "!": 0, ",": 0, "-not": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0,
		// options
		"-depth": 0, "-d": 0, "-xdev": 0, "-mount": 0, "-follow": 0, "-noleaf": 0, "-ignore_readdir_race": 0,
		"-noignore_readdir_race": 0, "-daystart": 0, "-warn": 0, "-nowarn": 0, "-maxdepth": 1, "-mindepth": 1,
		"-regextype": 1, "-files0-from": 1, "-help": 0, "--help": 0, "-version": 0, "--version": 0,
		// tests
		"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1,
		"-iregex": 1, "-lname": 1, "-ilname": 1, "-type": 1, "-xtype": 1, "-size": 1, "-mtime": 1, "-mmin": 1,
		"-atime": 1, "-amin": 1, "-ctime": 1, "-cmin": 1, "-used": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1,
		"-perm": 1, "-user": 1, "-group": 1, "-uid": 1, "-gid": 1, "-nouser": 0, "-nogroup": 0, "-empty": 0,
		"-links": 1, "-inum": 1, "-samefile": 1, "-readable": 0, "-writable": 0, "-executable": 0,
		"-true": 0, "-false": 0, "-fstype": 1, "-context": 1,
		// actions
		"-print": 0, "-print0": 0, "-printf": 1, "-ls": 0, "-prune": 0, "-quit": 0,
	}
})

// findNewerXY matches -newerXY (-newermt, -neweraa…).
func findNewerXY(s string) bool {
	return len(s) == 8 && strings.HasPrefix(s, "-newer") && strings.ContainsRune("aBcmt", rune(s[6])) && strings.ContainsRune("aBcmt", rune(s[7]))
}

// find is read-only when its expression uses only the listed primaries;
// the commands of -exec, -execdir, -ok and -okdir are judged as commands
// of their own, with the file name ({}) known only at run time. Starting
// points and expression words only known at run time ask: a file named
// -delete is an action.
func (a *analyzer) find(words []word, env envInfo, h how) {
	it := item{kind: kindCommand, words: words, readOnly: true, sensitive: env.sensitive, open: h.open}
	fail := func(why string) {
		if it.readOnly {
			it.readOnly, it.why = false, why
		}
	}
	var targets [][]word
	i := 1
	for ; i < len(words); i++ { // leading options
		w := words[i]
		if !w.lit || !(w.text == "-H" || w.text == "-L" || w.text == "-P" || strings.HasPrefix(w.text, "-O")) {
			break
		}
	}
	expr := false
	for ; i < len(words); i++ {
		w := words[i]
		if !w.lit {
			if w.flagish() || expr {
				fail("find may get an expression word only known at run time (" + w.text + "), which could be -delete or -exec")
				a.an.cannotJudge("find: the argument %s is only known at run time (it could be -exec or -delete)", w.text)
			}
			continue
		}
		t := w.text
		if !expr && !strings.HasPrefix(t, "-") && t != "(" && t != "!" {
			it.operands = append(it.operands, t) // a starting point
			continue
		}
		expr = true
		switch t {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for ; j < len(words); j++ {
				if u := words[j]; u.lit && (u.text == ";" || u.text == "+" && j > i+1 && words[j-1].text == "{}") {
					break
				}
			}
			targets = append(targets, words[i+1:min(j, len(words))])
			i = j
			if t == "-ok" || t == "-okdir" {
				fail("find " + t + " asks on the terminal")
			}
			continue
		}
		n, ok := findPrimaries()[t]
		if !ok && findNewerXY(t) {
			n, ok = 1, true
		}
		if !ok {
			fail("find " + t + " is not known to be read-only")
			continue
		}
		if i+n >= len(words) {
			break
		}
		for k := 1; k <= n; k++ {
			if v := words[i+k]; !v.lit && t == "-files0-from" {
				fail("find -files0-from gets a file only known at run time")
			}
		}
		i += n
	}
	if it.readOnly && len(env.notRO) > 0 {
		it.readOnly, it.why = false, "assigns "+env.notRO[0]+" for the command"
	}
	if h.open {
		it.readOnly, it.why = false, "receives more arguments at run time (xargs)"
		a.an.cannotJudge("find: arguments read at run time could include -exec or -delete")
	}
	if !it.readOnly {
		it.forever = "it is not a read-only command"
	}
	a.an.add(it)
	for _, t := range targets {
		a.command(t, env, how{wrapped: true, replace: "{}", paths: true})
	}
}
