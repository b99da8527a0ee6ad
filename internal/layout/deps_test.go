package layout

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/dsh-acp/dsh-acp"

// layers is docs/architecture.md's package list, top to bottom. A package
// may import the packages of any layer below its own, never one of its own
// layer or above. Keep the two lists alike.
var layers = [][]string{
	{"cmd/dsh-acp", "cmd/dsh-bench", "cmd/dsh-bench/floor", "cmd/dsh-bench/minimal"},
	{"acp"},
	{"internal/approval", "internal/configoption", "internal/journalsink", "internal/sandboxlevel", "internal/slash", "internal/turns"},
	{"internal/chat"},
	{"internal/agent"},
	{"internal/mcp"},
	{"internal/llm/llmtest"},
	{"internal/llm"},
	{"internal/credentials"},
	{"presentation"},
	{"replay"},
	{"tools"},
	{"internal/changes"},
	{"internal/permission"},
	{"executor/ssh"}, // builds its confined levels with executor/sandbox's RemoteWrapper
	{"executor/sandbox"},
	{"executor/local"},
	{"executor/executortest", "executor/executorfake"},
	{"executor/engine"},
	{"executor"},
	{"internal/rpc"},
	{"internal/event", "internal/privdir", "internal/wirejson", "executor/sandbox/ipcguard"},
	// Test helpers and this package import nothing of the project's.
	{"internal/acptest", "internal/eventually", "internal/layout", "internal/registry", "internal/mcp/mcptest", "internal/sshdtest"},
}

func rank() map[string]int {
	r := map[string]int{}
	for i, layer := range layers {
		for _, p := range layer {
			r[p] = i
		}
	}
	return r
}

// TestImportOrder fails when a package imports one at its own layer or
// above, or when a package is missing from the list. It checks the
// non-test imports under every GOOS the project ships for.
func TestImportOrder(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ranks := rank()
	seen := 0
	for _, goos := range []string{"linux", "darwin"} {
		ctx := build.Default
		ctx.GOOS = goos
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			pkg, err := ctx.ImportDir(path, 0)
			if err != nil {
				if _, ok := err.(*build.NoGoError); ok {
					return nil
				}
				t.Errorf("%s: %v", path, err)
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			own, ok := ranks[rel]
			if !ok {
				t.Errorf("package %s is not in the layer list: add it to layers and to docs/architecture.md", rel)
				return nil
			}
			seen++
			for _, imp := range pkg.Imports {
				dep, ok := strings.CutPrefix(imp, module+"/")
				if !ok {
					continue
				}
				if r, ok := ranks[dep]; !ok || r <= own {
					t.Errorf("%s (GOOS=%s) imports %s, which is not below it in the documented order", rel, goos, dep)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen == 0 {
		t.Fatal("no packages found")
	}
}

// TestArchitectureDocListsEveryLayer keeps docs/architecture.md naming
// every listed package that exists.
func TestArchitectureDocListsEveryLayer(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, layer := range layers {
		for _, p := range layer {
			if _, err := os.Stat(filepath.Join("../..", p)); err != nil {
				continue
			}
			if !slices.ContainsFunc(strings.Fields(string(doc)), func(w string) bool {
				return strings.Trim(w, "`/") == p
			}) {
				t.Errorf("docs/architecture.md does not name %s", p)
			}
		}
	}
}
