package permission

import (
	"fmt"
	"strconv"
	"strings"
)

// roResult is what the read-only table says about one command.
type roResult struct {
	ok      bool     // read-only
	why     string   // why not, when !ok
	forever string   // why it may never end ("" when it ends)
	files   []string // literal operands that may name files it reads
}

func notRO(format string, a ...any) roResult {
	return roResult{why: fmt.Sprintf(format, a...), forever: "it is not a read-only command"}
}

// program is an entry of the read-only table: an option allowlist and
// what else keeps the program read-only and ending.
type program struct {
	spec *optSpec
	// maxOperands bounds the operands (uniq IN OUT writes OUT); 0 means
	// no bound, noOperands none at all.
	maxOperands int
	noOperands  bool
	// literalOperands: operands only known at run time (globs included)
	// ask (zgrep has run file names as sed code).
	literalOperands bool
	// operand checks each operand ("" when fine).
	operand func(w word) string
	// check judges what the options and operands say together ("" when
	// fine), when set.
	check func(name string, sc *scanned) string
	// forever are options after which the program never ends.
	forever []string
	// ends says why the program may never end, when set.
	ends func(sc *scanned) string
	// noFiles: operands are not files (echo, seq).
	noFiles bool
	// custom replaces all of the above.
	custom func(name string, args []word, open bool) roResult
}

// judge applies the entry to a command's arguments. open marks a command
// that receives more arguments at run time (an xargs target).
func (p program) judge(name string, args []word, open bool) roResult {
	if p.custom != nil {
		return p.custom(name, args, open)
	}
	sc := p.spec.scan(name, args)
	if sc.problem != "" {
		return notRO("%s", sc.problem)
	}
	if open && (!p.spec.parsed().runtimeSafe || p.maxOperands > 0 || p.noOperands || p.literalOperands || p.operand != nil || p.check != nil) {
		return notRO("%s receives more arguments at run time (xargs), which could change what it does", name)
	}
	n := 0
	var files []string
	for _, w := range sc.operands {
		n++
		if w.multi && (p.noOperands || p.maxOperands > 0) {
			return notRO("%s may get several operands from %s", name, w.text)
		}
		if !w.lit && p.literalOperands {
			return notRO("%s gets an operand only known at run time (%s), which it does not handle safely", name, w.text)
		}
		if p.operand != nil {
			if why := p.operand(w); why != "" {
				return notRO("%s", why)
			}
		}
		if w.lit && !p.noFiles {
			files = append(files, w.text)
		}
	}
	switch {
	case p.noOperands && n > 0:
		return notRO("%s with an operand changes settings", name)
	case p.maxOperands > 0 && n > p.maxOperands:
		return notRO("%s with %d operands writes a file", name, n)
	}
	if p.check != nil {
		if why := p.check(name, &sc); why != "" {
			return notRO("%s", why)
		}
	}
	r := roResult{ok: true, files: files}
	switch {
	case sc.has(p.forever...):
		r.forever = name + " with " + strings.Join(p.forever, "/") + " never ends"
	case len(p.forever) > 0 && sc.runtime > 0:
		r.forever = name + " may get an option only known at run time that makes it never end"
	case p.ends != nil:
		r.forever = p.ends(&sc)
	}
	if r.forever == "" && !p.noFiles {
		for _, f := range files {
			if endlessPath(f) {
				r.forever = name + " reads " + f + ", which may never end"
			}
		}
	}
	return r
}

// endlessPath reports whether reading the path may never end: devices
// other than /dev/null, descriptors and standard streams.
func endlessPath(p string) bool {
	return strings.HasPrefix(p, "/dev/") && p != "/dev/null" || strings.HasPrefix(p, "/proc/") && strings.Contains(p, "/fd/")
}

// std is an entry that only needs an option allowlist.
func std(style optStyle, spec string) program { return program{spec: newSpec(style, spec)} }

// gnu is std for a GNU program; --help and --version are added.
func gnu(spec string) program { return std(styleGNU, spec+" --help --version") }

// readOnlyTable is the built-in read-only list. Every program is listed
// with the options known to keep it read-only.
var readOnlyTable = lazyTable(func() map[string]program {
	return map[string]program{
		"cat":  gnu("! -A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs --show-nonprinting"),
		"tac":  gnu("! -b -r -s: --before --regex --separator:"),
		"head": gnu("! # -c: -n: -q -v -z --bytes: --lines: --quiet --silent --verbose --zero-terminated"),
		"tail": {spec: newSpec(styleGNU, "! # -c: -f -F -n: -q -s: -v -z --bytes: --follow:: --lines: --pid: --quiet --silent --retry "+
			"--sleep-interval: --verbose --zero-terminated --help --version"), forever: []string{"-f", "-F", "--follow"}},
		"wc":       gnu("! -c -m -l -L -w --bytes --chars --lines --max-line-length --words --files0-from: --total:"),
		"nl":       gnu("! -b: -d: -f: -h: -i: -l: -n: -p -s: -v: -w: --body-numbering: --section-delimiter: --footer-numbering: --header-numbering: --line-increment: --join-blank-lines: --number-format: --no-renumber --number-separator: --starting-line-number: --number-width:"),
		"cut":      gnu("! -b: -c: -d: -f: -n -s -z --bytes: --characters: --delimiter: --fields: --complement --only-delimited --output-delimiter: --zero-terminated"),
		"tr":       gnu("! -c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1"),
		"rev":      gnu("! -0 -h -V --zero"),
		"fold":     gnu("! -b -s -w: --bytes --spaces --width:"),
		"expand":   gnu("! # -i -t: --initial --tabs:"),
		"unexpand": gnu("! # -a -t: --all --first-only --tabs:"),
		"paste":    gnu("! -d: -s -z --delimiters: --serial --zero-terminated"),
		"join":     gnu("! -a: -e: -i -j: -o: -t: -v: -1: -2: -z --check-order --nocheck-order --header --ignore-case --zero-terminated"),
		"comm":     gnu("! -1 -2 -3 -z --check-order --nocheck-order --output-delimiter: --total --zero-terminated"),
		"cmp":      gnu("! -b -i: -l -n: -s --print-bytes --ignore-initial: --verbose --bytes: --quiet --silent"),
		"diff": gnu("! # -a -b -B -c -C: -d -D: -e -E -f -F: -H -i -I: -l -L: -n -N -p -P -q -r -s -S: -t -T -u -U: -v -w -W: -x: -X: -y -Z " +
			"--brief --report-identical-files --context:: --unified:: --ed --normal --rcs --side-by-side --width: --left-column " +
			"--suppress-common-lines --show-c-function --show-function-line: --label: --expand-tabs --initial-tab --tabsize: " +
			"--suppress-blank-empty --new-file --unidirectional-new-file --ignore-case --ignore-file-name-case " +
			"--no-ignore-file-name-case --ignore-tab-expansion --ignore-trailing-space --ignore-space-change " +
			"--ignore-all-space --ignore-blank-lines --ignore-matching-lines: --text --strip-trailing-cr --recursive " +
			"--exclude: --exclude-from: --starting-file: --from-file: --to-file: --speed-large-files --minimal " +
			"--horizon-lines: --color:: --palette: --no-dereference --line-format: --old-line-format: --new-line-format: " +
			"--unchanged-line-format: --old-group-format: --new-group-format: --changed-group-format: --unchanged-group-format:"),
		"md5sum":    gnu(sumOpts),
		"sha1sum":   gnu(sumOpts),
		"sha224sum": gnu(sumOpts),
		"sha256sum": gnu(sumOpts),
		"sha384sum": gnu(sumOpts),
		"sha512sum": gnu(sumOpts),
		"b2sum":     gnu(sumOpts + " -l: --length:"),
		"cksum":     gnu(sumOpts + " -a: -l: --algorithm: --length: --raw --untagged --base64 --debug"),
		"sum":       gnu("! -r -s --sysv"),
		"strings": gnu("! # -a -d -f -n: -t: -e: -T: -s: -o -U: -w --all --data --print-file-name --bytes: --radix: --encoding: " +
			"--target: --output-separator: --unicode: --include-all-whitespace"),
		"od": gnu("! -A: -j: -N: -S:: -t: -v -w:: -a -b -c -d -f -i -l -o -s -x --address-radix: --endian: --skip-bytes: " +
			"--read-bytes: --strings:: --format: --output-duplicates --width:: --traditional"),
		"hexdump":  gnu("! -b -c -C -d -o -x -e: -f: -n: -s: -v -L:: --length: --skip: --color::"),
		"xxd":      {custom: xxdReadOnly},
		"base64":   gnu("! -d -i -w: --decode --ignore-garbage --wrap:"),
		"basename": {spec: newSpec(styleGNU, "! -a -s: -z --multiple --suffix: --zero --help --version"), noFiles: true},
		"dirname":  {spec: newSpec(styleGNU, "! -z --zero --help --version"), noFiles: true},
		"realpath": {spec: newSpec(styleGNU, "! -e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical --physical --quiet --relative-to: --relative-base: --strip --no-symlinks --zero --help --version"), noFiles: true},
		"readlink": {spec: newSpec(styleGNU, "! -f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing --no-newline --quiet --silent --verbose --zero --help --version"), noFiles: true},
		"pwd":      {spec: newSpec(styleGNU, "-L -P"), noOperands: true},
		"whoami":   gnu(""),
		"id":       {spec: newSpec(styleGNU, "! -a -Z -g -G -n -r -u -z --context --group --groups --name --real --user --zero --help --version"), noFiles: true},
		"groups":   {spec: newSpec(styleGNU, "--help --version"), noFiles: true},
		"uname":    gnu("! -a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release --kernel-version --machine --processor --hardware-platform --operating-system"),
		"uptime":   gnu("-p -s -r --pretty --since --raw"),
		"nproc":    gnu("--all --ignore:"),
		"arch":     gnu(""),
		"locale":   {spec: newSpec(styleGNU, "-a -m -c -k -v --all-locales --charmaps --category-name --keyword-name --verbose --help --version"), noFiles: true},
		"tty":      gnu("-s --silent --quiet"),
		"column": gnu("! -t -s: -o: -c: -x -n -e -J -N: -R: -T: -H: -W: -E: -d -l: -r: -L -O: --table --separator: " +
			"--output-separator: --output-width: --fillrows --json --table-columns: --table-name: --table-right: " +
			"--table-truncate: --table-noextreme: --table-wrap: --table-hide: --table-order: --table-noheadings " +
			"--table-columns-limit: --keep-empty-lines --tree: --tree-id: --tree-parent:"),
		"ps": {spec: newSpec(styleGNU, "! -e -f -F -A -a -d -N -l -j -H -w -x -y -L -T -m -M -Z -c -o: -p: -u: -U: -g: -G: -C: "+
			"-t: -s: -q: -O: -k: --sort: --pid: --ppid: --user: --User: --group: --Group: --format: --forest --no-headers "+
			"--headers --cols: --columns: --width: --lines: --rows: --help:: --version --cumulative --deselect --context "+
			"--info --quick-pid: --sid: --tty:"), noFiles: true},
		"pgrep": {spec: newSpec(styleGNU, "! -l -a -c -d: -f -g: -G: -i -n -o -O: -P: -s: -t: -u: -U: -v -w -x -F: -r: "+
			"--list-name --list-full --count --delimiter: --full --pgroup: --group: --ignore-case --newest --oldest --older: "+
			"--parent: --session: --terminal: --euid: --uid: --inverse --lightweight --exact --pidfile: --logpidfile "+
			"--ns: --nslist: --runstates: --cgroup: --env: --quiet -q --help --version"), noFiles: true},
		"free": {spec: newSpec(styleGNU, "-b -k -m -g -h -l -t -v -w -L --kilo --mega --giga --tera --peta --bytes --kibi --mebi "+
			"--gibi --tebi --pebi --human --si --lohi --total --committed --wide --line -s: --seconds: -c: --count: --help --version"),
			noOperands: true, ends: func(sc *scanned) string {
				if sc.has("-s", "--seconds") && !sc.has("-c", "--count") {
					return "free -s without -c repeats forever"
				}
				return ""
			}},
		"true":    {custom: anyArgs},
		"false":   {custom: anyArgs},
		":":       {custom: anyArgs},
		"test":    {custom: testReadOnly},
		"[":       {custom: testReadOnly},
		"echo":    {custom: anyArgs},
		"which":   {spec: newSpec(styleGNU, "-a -s --all"), noFiles: true},
		"whereis": {spec: newSpec(styleGNU, "-b -m -s -u -l -g -B: -M: -S: -f"), noFiles: true},
		"type":    {spec: newSpec(styleGNU, "-a -f -P -p -t"), noFiles: true},
		"seq":     {custom: seqReadOnly},
		"sleep":   {custom: sleepReadOnly},
		"yes":     {custom: func(string, []word, bool) roResult { return roResult{ok: true, forever: "yes never ends"} }},
		"grep":    gnu(grepOpts),
		"egrep":   gnu(grepOpts),
		"fgrep":   gnu(grepOpts),
		"zgrep":   {spec: newSpec(styleGNU, grepOpts+" --help --version"), literalOperands: true},
		"zcat":    {spec: newSpec(styleGNU, "-f -l -q -v -t -h -L -V --force --list --quiet --verbose --test --help --version --license"), literalOperands: true},
		"jq": gnu("! -r -j -a -c -n -e -s -S -C -M -R -h -V -0 --raw-output --raw-output0 --join-output --ascii-output " +
			"--compact-output --null-input --exit-status --slurp --sort-keys --color-output --monochrome-output " +
			"--raw-input --tab --indent: --seq --stream --stream-errors --unbuffered --arg; --argjson; --slurpfile; " +
			"--rawfile; --args --jsonargs -f: --from-file: -L: --library-path:"),
		"ls": gnu("! -a -A -b -B -c -C -d -D -f -F -g -G -h -H -i -I: -k -l -L -m -n -N -o -p -q -Q -r -R -s -S -t -T: -u " +
			"-U -v -w: -x -X -Z -1 --all --almost-all --author --escape --block-size: --ignore-backups --color:: " +
			"--directory --dired --classify:: --file-type --format: --full-time --group-directories-first --no-group " +
			"--human-readable --si --dereference-command-line --dereference-command-line-symlink-to-dir --hide: " +
			"--hyperlink:: --indicator-style: --inode --ignore: --kibibytes --dereference --numeric-uid-gid --literal " +
			"--hide-control-chars --show-control-chars --quote-name --quoting-style: --reverse --recursive --size " +
			"--sort: --time: --time-style: --tabsize: --width: --context --zero"),
		"stat": gnu("! -L -f -c: -t --dereference --file-system --format: --printf: --terse --cached:"),
		"du": gnu("! -0 -a -B: -b -c -D -d: -H -h -k -L -l -m -P -S -s -t: -x -X: --all --apparent-size --block-size: --bytes " +
			"--total --dereference-args --max-depth: --files0-from: --human-readable --inodes --dereference --count-links " +
			"--no-dereference --separate-dirs --si --summarize --threshold: --time:: --time-style: --exclude-from: --exclude: " +
			"--one-file-system --null"),
		"df": gnu("! -a -B: -h -H -i -k -l -P -t: -T -x: --all --block-size: --human-readable --si --inodes --local --output:: " +
			"--portability --print-type --total --type: --exclude-type: --sync --no-sync"),
		"printenv": {spec: newSpec(styleGNU, "-0 --null --help --version"), noFiles: true},
		"cd":       {spec: newSpec(styleGNU, "! -L -P -e -@"), noFiles: true},
		"pushd":    {spec: newSpec(styleGNU, "! # -n"), noFiles: true},
		"popd":     {spec: newSpec(styleGNU, "! # -n"), noFiles: true},
		"dirs":     {spec: newSpec(styleGNU, "! # -c -l -p -v"), noFiles: true},
		"set":      {custom: setReadOnly},
		"exit":     {custom: numericBuiltin},
		"return":   {custom: numericBuiltin},
		"break":    {custom: numericBuiltin},
		"continue": {custom: numericBuiltin},
		"shift":    {custom: numericBuiltin},
		"wait":     {spec: newSpec(styleGNU, "-n -f"), noFiles: true},
		"jobs":     {spec: newSpec(styleGNU, "-l -n -p -r -s"), noFiles: true},
		"read":     {custom: readReadOnly},
		"printf":   {custom: printfReadOnly},
		"sort": gnu("-b -d -f -g -h -i -M -n -R -r -V -c -C -m -s -u -z -k: -t: -S: --ignore-leading-blanks " +
			"--dictionary-order --ignore-case --general-numeric-sort --human-numeric-sort --ignore-nonprinting " +
			"--month-sort --numeric-sort --random-sort --random-source: --reverse --sort: --version-sort --batch-size: " +
			"--check:: --debug --files0-from: --key: --merge --stable --buffer-size: --field-separator: --parallel: " +
			"--unique --zero-terminated"),
		"uniq": {spec: newSpec(styleGNU, "-c -d -D -f: -i -s: -u -w: -z --count --repeated --all-repeated:: --skip-fields: --group:: "+
			"--ignore-case --skip-chars: --unique --zero-terminated --check-chars: --help --version"), maxOperands: 1},
		"tree": gnu("-a -d -l -f -x -L: -P: -I: -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -i -A -S -n -C -X -J " +
			"--gitignore --gitfile: --ignore-case --matchdirs --metafirst --prune --info --noreport --charset: --filelimit: " +
			"--timefmt: --si --du --inodes --device --dirsfirst --filesfirst --sort: --nolinks --fromfile --fflinks " +
			"--hyperlink --scheme: --authority:"),
		"file": gnu("-b -c -d -E -h -i -k -L -l -N -n -p -r -s -S -v -z -Z -0 --mime --mime-type --mime-encoding --brief " +
			"--checking-printout --debug --dereference --no-dereference --keep-going --raw --special-files --uncompress " +
			"--uncompress-noreport --no-buffer --no-sandbox --print0 --preserve-date --apple --extension -e: --exclude: " +
			"--exclude-quiet: -F: --separator: -P: --parameter: -m: --magic-file: -f: --files-from:"),
		"date": {spec: newSpec(styleGNU, "-d: -f: -I:: -R -r: -u --date: --file: --iso-8601:: --rfc-email --rfc-3339: "+
			"--reference: --utc --universal --debug --resolution --help --version"),
			maxOperands: 1, noFiles: true,
			operand: func(w word) string {
				if strings.HasPrefix(w.lead, "+") {
					return ""
				}
				return "date " + w.text + " sets the clock unless it begins with +"
			}},
		"hostname": {spec: newSpec(styleGNU, "-a -A -d -f -i -I -s -v -y --alias --all-fqdns --domain --fqdn --long "+
			"--ip-address --all-ip-addresses --short --verbose --nis --yp --help --version"), noOperands: true},
		"rg": gnu("# -n -N -i -S -s -w -v -l -c -o -F -e: -g: -t: -T: -A: -B: -C: -H -I -u -L -x -U -P -z -a -q -0 -m: -d: -M: -r: " +
			"-f: -j: -E: --hidden --no-hidden --no-ignore --no-ignore-vcs --no-ignore-parent --no-ignore-dot --files --files-with-matches " +
			"--files-without-match --count --count-matches --type: --type-not: --glob: --iglob: --json --vimgrep " +
			"--heading --no-heading --line-number --no-line-number --column --no-column --color: --colors: --max-count: " +
			"--max-depth: --smart-case --ignore-case --case-sensitive --fixed-strings --word-regexp --line-regexp " +
			"--invert-match --only-matching --replace: --context: --after-context: --before-context: --multiline " +
			"--multiline-dotall --pcre2 --sort: --sortr: --stats --trim --type-list --follow --no-messages --null " +
			"--quiet --max-filesize: --max-columns: --max-columns-preview --passthru --binary --text --debug --trace " +
			"--no-config --ignore-file: --pre-glob: --search-zip --unrestricted --with-filename --no-filename " +
			"--regexp: --file: --threads: --encoding: --engine: --path-separator: --field-match-separator: " +
			"--field-context-separator: --byte-offset --crlf --no-unicode --mmap --no-mmap --one-file-system " +
			"--pretty -p --list-file-types? --generate:"),
		"fd":     gnu(fdOpts),
		"fdfind": gnu(fdOpts),
		"yq": gnu("-e -n -P -C -M -N -r -0 -v -j -o: -p: -I: --exit-status --null-input --prettyPrint --colors --no-colors " +
			"--no-doc --unwrapScalar --nul-output --verbose --output-format: --input-format: --indent: --expression: " +
			"--front-matter: --header-preamble --from-file:"),
		"gofmt":   {spec: newSpec(styleGo, "-l -d -s -e -r: -h -help")},
		"sed":     {custom: sedReadOnly},
		"awk":     {custom: awkReadOnly},
		"gawk":    {custom: awkReadOnly},
		"mawk":    {custom: awkReadOnly},
		"nawk":    {custom: awkReadOnly},
		"git":     {custom: gitReadOnly},
		"go":      {custom: goReadOnly},
		"expr":    {custom: anyArgs},
		"tar":     {custom: tarReadOnly},
		"unzip":   {custom: unzipReadOnly},
		"iconv":   gnu("! -f: -t: -c -l -s --from-code: --to-code: --list --silent --verbose"),
		"readelf": gnu(readelfOpts),
		"nm": gnu("-a -A -B -C -D -g -h -j -l -n -o -p -P -r -S -s -u -U -v -V -W -f: -t: -X: --debug-syms --print-file-name " +
			"--demangle:: --no-demangle --dynamic --format: --extern-only --line-numbers --numeric-sort --no-sort " +
			"--portability --reverse-sort --print-size --print-armap --radix: --undefined-only --defined-only " +
			"--size-sort --special-syms --synthetic --target: --with-symbol-versions --without-symbol-versions --quiet"),
		"numfmt": {spec: newSpec(styleGNU, "! -d: -z --debug --delimiter: --field: --format: --from: --from-unit: --grouping "+
			"--header:: --invalid: --padding: --round: --suffix: --to: --to-unit: --zero-terminated --help --version"), noFiles: true},
		"cal": {spec: newSpec(styleGNU, "! -1 -3 -A: -B: -d: -h -H: -j -J -m -M -S -s -w -y -Y -n: -v -c: --one --three --months: "+
			"--span --sunday --monday --julian --reform: --iso --year --twelve --week:: --color:: --vertical --column: --help --version"), noFiles: true},
		"lscpu": {spec: newSpec(styleGNU, "! -a -b -c -e:: -p:: -s: -x -y -B -C:: -J --all --online --offline --bytes --caches:: "+
			"--extended:: --json --parse:: --sysroot: --hex --physical --output-all --raw --help --version"), noOperands: true},
		"ss": {spec: newSpec(styleGNU, "-h -V -H -n -a -l -o -e -m -p -i -s -Z -z -b -4 -6 -0 -t -u -d -w -x -S -M -O -T -f: -A: -F: "+
			"--help --version --no-header --numeric --all --listening --options --extended --memory --processes --threads "+
			"--info --tos --cgroup --tipcinfo --summary --bpf --context --contexts --oneline --family: --query: --socket: "+
			"--filter: --ipv4 --ipv6 --packet --tcp --udp --dccp --raw --unix --sctp --vsock --xdp --mptcp --inet-sockopt"), noFiles: true},
		"lsof":    {custom: lsofReadOnly},
		"top":     {custom: topReadOnly},
		"getconf": {spec: newSpec(styleGNU, "! -a -v:"), noFiles: true},
		"ulimit":  {spec: newSpec(styleGNU, "-S -H -a -b -c -d -e -f -i -k -l -m -n -p -q -r -s -t -u -v -x -P -R -T"), noOperands: true},
		"umask":   {spec: newSpec(styleGNU, "-p -S"), noOperands: true},
		"history": {spec: newSpec(styleGNU, ""), noFiles: true, maxOperands: 1, operand: digitsOperand},
		"node":    {custom: versionOnly("--version", "-v")},
		"nodejs":  {custom: versionOnly("--version", "-v")},
		"python":  {custom: versionOnly("--version", "-V", "-VV")},
		"python3": {custom: versionOnly("--version", "-V", "-VV")},
		"cargo":   {custom: versionOnly("--version", "-V")},
		"rustc":   {custom: versionOnly("--version", "-V", "-vV")},
		"pip":     {custom: pipReadOnly},
		"pip3":    {custom: pipReadOnly},
		"docker":  {custom: dockerReadOnly},
		"objdump": {custom: objdumpReadOnly},
		"env":     {spec: newSpec(styleGNU, "-0 --null -i -u: --ignore-environment --unset:"), noFiles: true},
		"command": {spec: newSpec(styleGNU, "! -p -v -V"), noFiles: true},
		"nice":    {spec: newSpec(styleGNU, "# -n: --adjustment:"), noFiles: true},
		"nohup":   {spec: newSpec(styleGNU, "--help --version"), noOperands: true},
		"timeout": {spec: newSpec(styleGNU, "--help --version"), noOperands: true},
		"stdbuf":  {spec: newSpec(styleGNU, "--help --version"), noOperands: true},
		"ionice":  {spec: newSpec(styleGNU, "-t -c: -n:"), noOperands: true},
		"builtin": {spec: newSpec(styleGNU, ""), noOperands: true},
		"exec":    {spec: newSpec(styleGNU, "-c -l -a:"), noOperands: true},
		"xargs":   {spec: newSpec(styleGNU, "--help --version --show-limits -r --no-run-if-empty"), noOperands: true},
		"time":    {spec: newSpec(styleGNU, "-p --help --version"), noOperands: true},
		"basenc":  gnu("! --base64 --base64url --base32 --base32hex --base16 --base2msbf --base2lsbf --z85 -d -i -w: --decode --ignore-garbage --wrap:"),
	}
})

const (
	sumOpts  = "! -b -c -t -z -w --binary --check --tag --text --zero --ignore-missing --quiet --status --strict --warn"
	grepOpts = "! # -E -F -G -P -e: -f: -i -y -v -w -x -c -L -l -m: -o -q -s -b -H -h -n -T -Z -z -A: -B: -C: -a -D: -d: " +
		"-r -R -U -V --no-ignore-case --color:: --colour:: --label: --null --null-data --binary-files: --exclude: " +
		"--exclude-from: --exclude-dir: --include: --line-buffered --extended-regexp --fixed-strings --basic-regexp " +
		"--perl-regexp --regexp: --file: --ignore-case --invert-match --word-regexp --line-regexp --count " +
		"--files-without-match --files-with-matches --max-count: --only-matching --quiet --silent --no-messages " +
		"--byte-offset --with-filename --no-filename --line-number --initial-tab --after-context: --before-context: " +
		"--context: --text --devices: --directories: --recursive --dereference-recursive --binary"
	fdOpts = "-H -I -u -s -i -g -F -a -l -L -p -0 -q -1 -d: -t: -e: -E: -S: -c: -j: --hidden --no-ignore --no-ignore-vcs " +
		"--unrestricted --case-sensitive --ignore-case --glob --regex --fixed-strings --absolute-path --list-details " +
		"--follow --full-path --print0 --quiet --max-depth: --min-depth: --exact-depth: --type: --extension: " +
		"--exclude: --size: --changed-within: --changed-before: --newer: --older: --owner: --color: --threads: " +
		"--max-results: --base-directory: --search-path: --strip-cwd-prefix:: --one-file-system --prune --show-errors " +
		"--ignore-file: --format: --path-separator:"
	readelfOpts = "! -a -h -l -S -g -t -e -s -n -r -u -d -V -A -I -D -W -z -c -C -H -L -T -x: -p: -R: -w:: --all --file-header " +
		"--program-headers --segments --section-headers --sections --section-groups --section-details --headers " +
		"--symbols --syms --dyn-syms --lto-syms --notes --relocs --unwind --dynamic --version-info --arch-specific " +
		"--histogram --use-dynamic --wide --decompress --archive-index --hex-dump: --string-dump: --relocated-dump: " +
		"--debug-dump:: --dwarf-depth: --dwarf-start: --ctf:: --demangle:: --no-demangle --sym-base: --silent-truncation"
)

// readOnlyCommand judges a command by the read-only table. open marks a
// command that receives more arguments at run time.
func readOnlyCommand(name string, args []word, open bool) roResult {
	p, ok := readOnlyTable()[name]
	if !ok {
		return notRO("%s is not on the read-only list", name)
	}
	return p.judge(name, args, open)
}

// anyArgs is read-only with any arguments: true, false, :, echo, expr.
func anyArgs(string, []word, bool) roResult { return roResult{ok: true} }

func digitsOperand(w word) string {
	if w.lit && isDigits(w.text) {
		return ""
	}
	return "the operand " + w.text + " is not a number"
}

// numericBuiltin judges exit, return, break, continue and shift: at most
// one operand, a literal number or $? (bash may evaluate others).
func numericBuiltin(name string, args []word, open bool) roResult {
	if open || len(args) > 1 {
		return notRO("%s takes one number", name)
	}
	for _, w := range args {
		if !(w.lit && isDigits(strings.TrimPrefix(w.text, "-"))) && w.text != "$?" && w.text != `"$?"` {
			return notRO("%s %s: the operand is not a literal number", name, w.text)
		}
	}
	return roResult{ok: true}
}

// versionOnly allows a program only to print its version.
func versionOnly(flags ...string) func(string, []word, bool) roResult {
	return func(name string, args []word, open bool) roResult {
		if !open && len(args) == 1 && args[0].lit {
			for _, f := range flags {
				if args[0].text == f {
					return roResult{ok: true}
				}
			}
		}
		return notRO("%s is read-only only as %s %s", name, name, flags[0])
	}
}

// testReadOnly judges test and [: read-only, except that -v and -R
// evaluate the subscript of their operand, so a word that may be -v
// followed by one that is not a literal without '[' asks.
func testReadOnly(name string, args []word, open bool) roResult {
	if open {
		return notRO("%s receives more arguments at run time (xargs)", name)
	}
	for i := 0; i+1 < len(args); i++ {
		w, next := args[i], args[i+1]
		mayV := w.lit && (w.text == "-v" || w.text == "-R") || !w.lit && w.flagish()
		if mayV && !(next.lit && !strings.Contains(next.text, "[")) {
			if next.lit {
				return notRO("%s %s %s: bash evaluates the subscript as code", name, w.text, quoteWord(next.text))
			}
			return notRO("%s %s %s: if it is -v, bash evaluates the subscript of a name only known at run time", name, w.text, next.text)
		}
	}
	return roResult{ok: true}
}

// setReadOnly allows set with the options that change error handling and
// tracing, and set -- ARGS (positional parameters). set -k, -o posix and
// the other options change how later lines are read or run.
func setReadOnly(name string, args []word, open bool) roResult {
	if open {
		return notRO("set receives more arguments at run time (xargs)")
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.lit {
			return notRO("set %s: the option is only known at run time", w.text)
		}
		t := w.text
		switch {
		case t == "--" || t == "-":
			return roResult{ok: true}
		case t == "-o" || t == "+o":
			if i+1 == len(args) {
				return roResult{ok: true} // prints the options
			}
			i++
			if !args[i].lit || !harmlessShellOptions()[args[i].text] {
				return notRO("set %s %s is not known to be harmless", t, args[i].text)
			}
		case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
			for _, c := range t[1:] {
				switch {
				case c == 'o' && i+1 < len(args):
					i++
					if !args[i].lit || !harmlessShellOptions()[args[i].text] {
						return notRO("set -o %s is not known to be harmless", args[i].text)
					}
				case !strings.ContainsRune("euxvfCn", c):
					return notRO("set %c%c is not known to be harmless", t[0], c)
				}
			}
		default:
			return notRO("set %s: use set -- to set positional parameters", t)
		}
	}
	return roResult{ok: true}
}

// readSpec is read's allowlist; -a takes an array name.
var readSpec = newSpec(styleGNU, "-r -s -a: -d: -n: -N: -p: -t: -u:")

// readReadOnly judges read: it assigns variables, which is harmless for
// ordinary names (see classifyName); a subscript or a name like PATH is
// not.
func readReadOnly(name string, args []word, open bool) roResult {
	if open {
		return notRO("read receives more arguments at run time (xargs)")
	}
	sc := readSpec.scan(name, args)
	if sc.problem != "" {
		return notRO("%s", sc.problem)
	}
	names := sc.operands
	if v, ok := sc.value("-a"); ok {
		names = append(names, v)
	}
	for _, w := range names {
		if !w.lit || !validName(w.text) {
			return notRO("read %s: only a plain variable name is known to be harmless", w.text)
		}
		if notRO, _ := classifyName(w.text); notRO {
			return roResult{why: "read " + w.text + " assigns a variable that can change which programs run", forever: "it is not a read-only command"}
		}
	}
	if _, ok := sc.value("-u"); ok {
		return roResult{ok: true, forever: "read -u reads a descriptor that may never end"}
	}
	return roResult{ok: true}
}

// printfReadOnly judges printf: -v assigns a variable; a first word only
// known at run time could be -v.
func printfReadOnly(name string, args []word, open bool) roResult {
	if open {
		return notRO("printf receives more arguments at run time (xargs)")
	}
	if len(args) == 0 {
		return roResult{ok: true}
	}
	if args[0].lit && args[0].text == "--" {
		return roResult{ok: true}
	}
	if args[0].isFlag() || !args[0].lit && args[0].flagish() {
		return notRO("printf %s: an option may assign a variable (-v)", args[0].text)
	}
	return roResult{ok: true}
}

// seqReadOnly judges seq: read-only; it ends when its operands are
// literal finite numbers within a billion steps.
func seqReadOnly(name string, args []word, open bool) roResult {
	spec := newSpec(styleGNU, "-f: -s: -w --format: --separator: --equal-width --help --version")
	var nums []word
	var rest []word
	for _, w := range args { // negative numbers are operands, not options
		if w.lit && isNumber(w.text) {
			nums = append(nums, w)
		} else {
			rest = append(rest, w)
		}
	}
	sc := spec.scan(name, rest)
	if sc.problem != "" {
		return notRO("%s", sc.problem)
	}
	if open || len(sc.operands) > 0 || len(nums) == 0 || len(nums) > 3 {
		return roResult{ok: true, forever: "seq may count without end"}
	}
	first, step, last := 1.0, 1.0, 0.0
	vals := make([]float64, len(nums))
	for i, w := range nums {
		vals[i], _ = strconv.ParseFloat(w.text, 64)
	}
	switch len(vals) {
	case 1:
		last = vals[0]
	case 2:
		first, last = vals[0], vals[1]
	case 3:
		first, step, last = vals[0], vals[1], vals[2]
	}
	if step == 0 || (last-first)/step > 1e9 {
		return roResult{ok: true, forever: "seq counts too long to be known to end"}
	}
	return roResult{ok: true}
}

func isNumber(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !strings.ContainsAny(s, "xXpPnNiI_") && f == f
}

// sleepReadOnly judges sleep: read-only; it ends when every operand is a
// literal finite duration and they add up to at most a day.
func sleepReadOnly(name string, args []word, open bool) roResult {
	if open {
		return roResult{ok: true, forever: "sleep receives its duration at run time"}
	}
	total := 0.0
	for _, w := range args {
		if w.lit && (w.text == "--help" || w.text == "--version") {
			continue
		}
		d, ok := durationSeconds(w)
		if !ok {
			return roResult{ok: true, forever: "sleep " + w.text + " is not a duration known to end"}
		}
		total += d
	}
	if total > 24*3600 {
		return roResult{ok: true, forever: "sleep lasts more than a day"}
	}
	return roResult{ok: true}
}

// durationSeconds reads a literal duration as sleep and timeout do
// (NUMBER with an optional s, m, h or d suffix).
func durationSeconds(w word) (float64, bool) {
	if !w.lit || w.text == "" {
		return 0, false
	}
	t, mult := w.text, 1.0
	switch t[len(t)-1] {
	case 's':
		t = t[:len(t)-1]
	case 'm':
		t, mult = t[:len(t)-1], 60
	case 'h':
		t, mult = t[:len(t)-1], 3600
	case 'd':
		t, mult = t[:len(t)-1], 86400
	}
	if t == "" || strings.ContainsAny(t, "xXpPnNiI_eE+-") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return f * mult, true
}

// finiteDuration reports whether a timeout duration is literal and at
// most limit seconds (0 means no timeout at all).
func finiteDuration(w word, limit float64) bool {
	d, ok := durationSeconds(w)
	return ok && d > 0 && d <= limit
}

// xxdReadOnly judges xxd: options are whole words, and a second operand
// is the output file.
func xxdReadOnly(name string, args []word, open bool) roResult {
	p := program{spec: newSpec(styleWhole, "-a -autoskip -b -bits -C -capitalize -E -EBCDIC -e -h -help -i -include "+
		"-p -ps -postscript -plain -r -revert -u -uppercase -v -version -d -c: -cols: -g: -groupsize: -l: -len: "+
		"-n: -name: -o: -offset: -s: -seek: -R:"), maxOperands: 1}
	return p.judge(name, args, open)
}

// tarReadOnly allows tar only to list an archive (-t/--list), without
// options that run programs or reach other hosts (a -f value with a
// colon names a remote archive).
func tarReadOnly(name string, args []word, open bool) roResult {
	if open {
		return notRO("tar receives more arguments at run time (xargs)")
	}
	if len(args) > 0 && args[0].lit && args[0].text != "" && args[0].text[0] != '-' {
		// old style: "tar tzf x.tar" bundles the options in the first word
		args = append([]word{litWord("-" + args[0].text)}, args[1:]...)
	}
	spec := newSpec(styleGNU, "-t -v -z -j -J -a -O -p -s -w -k -m -B -i -S -R -f: -C: -T: -X: -b: -H: -K: -N: "+
		"--list --verbose --gzip --gunzip --bzip2 --xz --lzip --lzma --lzop --zstd --auto-compress --to-stdout "+
		"--file: --directory: --files-from: --exclude: --exclude-from: --exclude-vcs --exclude-caches --wildcards "+
		"--no-wildcards --anchored --no-anchored --ignore-case --numeric-owner --totals:: --full-time --utc "+
		"--blocking-factor: --record-size: --format: --starting-file: --newer: --after-date: --ignore-zeros "+
		"--null --no-null --quoting-style: --show-transformed-names --strip-components: --occurrence:: --force-local "+
		"--help --version --usage --show-defaults")
	sc := spec.scan(name, args)
	switch {
	case sc.problem != "":
		return notRO("%s", sc.problem)
	case !sc.has("-t", "--list", "--help", "--version", "--usage", "--show-defaults"):
		return notRO("tar is read-only only when listing (-t)")
	}
	if f, ok := sc.value("-f", "--file"); ok && (!f.lit || strings.Contains(f.text, ":")) && !sc.has("--force-local") {
		return notRO("tar -f %s may name a remote archive", f.text)
	}
	r := roResult{ok: true}
	if f, ok := sc.value("-f", "--file"); ok && f.lit {
		r.files = []string{f.text}
		if endlessPath(f.text) || f.text == "-" {
			r.forever = "tar reads " + f.text + ", which may never end"
		}
	}
	return r
}

// unzipReadOnly allows unzip only to list, test or print an archive.
func unzipReadOnly(name string, args []word, open bool) roResult {
	spec := newSpec(styleGNU, "-l -v -t -z -Z -q -p -c -C -M -h -s -1 -2 -m -T")
	sc := spec.scan(name, args)
	switch {
	case sc.problem != "":
		return notRO("%s", sc.problem)
	case open:
		return notRO("unzip receives more arguments at run time (xargs)")
	case !sc.has("-l", "-v", "-t", "-z", "-Z", "-p", "-c", "-h"):
		return notRO("unzip extracts files unless it lists (-l), tests (-t) or prints (-p)")
	}
	return roResult{ok: true}
}

// lsofReadOnly judges lsof: its +X options (+D dir) are operands to the
// spec and checked here; -r and +r repeat forever.
func lsofReadOnly(name string, args []word, open bool) roResult {
	spec := newSpec(styleGNU, "-a -b -C -h -l -n -N -O -P -R -t -U -V -w -X -x -Q -c: -d: -g? -i? -p: -s? -u: -F? -L? -T? -k: -E -K? -S? -e:")
	sc := spec.scan(name, args)
	if sc.problem != "" {
		return notRO("%s", sc.problem)
	}
	if open {
		return notRO("lsof receives more arguments at run time (xargs)")
	}
	for _, w := range sc.operands {
		if w.lit && strings.HasPrefix(w.text, "+") {
			switch strings.TrimRight(w.text[1:], "0123456789") {
			case "D", "d", "L", "c", "f", "w", "E", "M":
			default:
				return notRO("lsof %s is not known to be read-only", w.text)
			}
		}
	}
	return roResult{ok: true}
}

// topReadOnly judges top: batch mode ends only with -n.
func topReadOnly(name string, args []word, open bool) roResult {
	spec := newSpec(styleGNU, "-b -c -H -i -O -S -s -1 -h -v -E -e -d: -n: -o: -p: -u: -U: -w::")
	sc := spec.scan(name, args)
	switch {
	case sc.problem != "":
		return notRO("%s", sc.problem)
	case open || len(sc.operands) > 0:
		return notRO("top takes no operands")
	}
	if !sc.has("-n") && !sc.has("-h", "-v") {
		return roResult{ok: true, forever: "top without -n repeats forever"}
	}
	return roResult{ok: true}
}

// subcommands judges a program whose first word is a subcommand: each
// allowed subcommand has its option allowlist.
func subcommands(name string, args []word, open bool, subs map[string]program, versions ...string) roResult {
	if open {
		return notRO("%s receives more arguments at run time (xargs)", name)
	}
	if len(args) == 1 && args[0].lit {
		for _, v := range versions {
			if args[0].text == v {
				return roResult{ok: true}
			}
		}
	}
	if len(args) == 0 || !args[0].lit || args[0].isFlag() {
		return notRO("%s is read-only only for some subcommands", name)
	}
	p, ok := subs[args[0].text]
	if !ok {
		return notRO("%s %s is not on the read-only list", name, args[0].text)
	}
	r := p.judge(name+" "+args[0].text, args[1:], false)
	r.files = nil
	return r
}

var pipSubs = lazyTable(func() map[string]program {
	return map[string]program{
		"list": {spec: newSpec(styleGNU, "-l -e -v -q --local --user --path: --pre --format: --not-required --exclude-editable "+
			"--include-editable --editable --exclude: --verbose --quiet --disable-pip-version-check --no-color --isolated"), noFiles: true},
		"freeze": {spec: newSpec(styleGNU, "-l -v -q --local --user --path: --all --exclude-editable --exclude: --verbose "+
			"--quiet --disable-pip-version-check --no-color --isolated"), noFiles: true},
		"show": {spec: newSpec(styleGNU, "-f -v -q --files --verbose --quiet --disable-pip-version-check --no-color --isolated"), noFiles: true},
	}
})

func pipReadOnly(name string, args []word, open bool) roResult {
	return subcommands(name, args, open, pipSubs(), "--version", "-V")
}

var dockerSubs = lazyTable(func() map[string]program {
	ps := program{spec: newSpec(styleGNU, "-a -l -q -s -f: -n: --all --latest --quiet --size --no-trunc --filter: --format: --last:"), noOperands: true}
	images := program{spec: newSpec(styleGNU, "-a -q -f: --all --quiet --digests --no-trunc --filter: --format: --tree"), maxOperands: 1, noFiles: true}
	format := program{spec: newSpec(styleGNU, "-f: --format:"), noOperands: true}
	return map[string]program{"ps": ps, "images": images, "version": format, "info": format}
})

func dockerReadOnly(name string, args []word, open bool) roResult {
	return subcommands(name, args, open, dockerSubs(), "--version", "-v")
}

// objdumpReadOnly judges objdump like readelf: every listed option
// prints.
func objdumpReadOnly(name string, args []word, open bool) roResult {
	p := gnu("-a -f -p -P: -h -x -d -D -S -s -g -e -G -t -T -r -R -C -l -w -z -H -V -i -W:: -j: -M: -m: -b: " +
		"--archive-headers --file-headers --private-headers --section-headers --headers --all-headers --disassemble:: " +
		"--disassemble-all --source --full-contents --debugging --stabs --syms --dynamic-syms --reloc --dynamic-reloc " +
		"--demangle:: --line-numbers --wide --section: --start-address: --stop-address: --no-show-raw-insn --dwarf:: " +
		"--prefix-addresses --show-raw-insn --insn-width: --target: --architecture: --disassembler-options: " +
		"--visualize-jumps:: --no-addresses")
	return p.judge(name, args, open)
}

// goSubs are go's read-only subcommands with their flags (Go flag
// syntax). go list -m -versions, -u and -retracted reach the network;
// -mod=mod may rewrite go.mod; -toolexec, -exec, -export, -compiled and
// -overlay build or run programs; go doc -http serves.
var goSubs = lazyTable(func() map[string]program {
	return map[string]program{
		"version": {spec: newSpec(styleGo, "-m -v -json")},
		"env":     {spec: newSpec(styleGo, "-json -changed"), noFiles: true},
		"help":    {spec: newSpec(styleGo, ""), noFiles: true},
		"doc":     {spec: newSpec(styleGo, "-all -c -cmd -short -src -u -ex"), noFiles: true},
		"list": {spec: newSpec(styleGo, "-f: -json:: -m -deps -test -e -find -tags: -mod: -modfile: -buildvcs: -reuse: -pgo: -race -trimpath"),
			noFiles: true, check: func(name string, sc *scanned) string {
				if v, ok := sc.value("--mod"); ok && (!v.lit || v.text != "readonly" && v.text != "vendor") {
					return name + " -mod=" + v.text + " may change go.mod"
				}
				return ""
			}},
		"mod": {custom: func(name string, args []word, open bool) roResult {
			return gitGroup(map[string]program{
				"graph": {spec: newSpec(styleGo, "-go: -x"), noOperands: true},
				"why":   {spec: newSpec(styleGo, "-m -vendor"), noFiles: true},
			}, "")(name, args, open)
		}},
	}
})

// goReadOnly judges go: -C DIR, then a subcommand of goSubs.
func goReadOnly(name string, args []word, open bool) roResult {
	for len(args) > 0 && args[0].lit && (args[0].text == "-C" || strings.HasPrefix(args[0].text, "-C=")) {
		n := 1
		if args[0].text == "-C" {
			n = 2
		}
		args = args[min(n, len(args)):]
	}
	return subcommands(name, args, open, goSubs())
}
