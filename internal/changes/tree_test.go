package changes

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// makeTree writes n small text files under dir, 20 to a directory, ten
// directories to a level, plus an ignored directory (build/, in
// .gitignore) of ignored files that are not counted in n.
func makeTree(tb testing.TB, dir string, n, ignored int) {
	tb.Helper()
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write(".gitignore", "build/\n*.o\n")
	for i := 1; i < n; i++ {
		d := i / 20
		rel := fmt.Sprintf("src/d%d/e%d/f%d.go", d/10, d%10, i)
		write(rel, fmt.Sprintf("package p\n\n// file %d\nfunc F%d() int { return %d }\n", i, i, i))
	}
	for i := 0; i < ignored; i++ {
		write(fmt.Sprintf("build/g%d/x%d.o", i/50, i), "object")
	}
}
