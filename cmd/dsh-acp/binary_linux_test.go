package main

import (
	"debug/elf"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// The daemon looks up no method by reflection (text/template does, and
// reflect.Value.Method/MethodByName make the linker keep every exported
// method of every type in the binary: 3 MB more to map and fault in at
// each start).
func TestBinaryLetsTheLinkerDropUnusedMethods(t *testing.T) {
	f, err := elf.Open(acptest.BuildBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	banned := map[string]bool{"reflect.Value.Method": true, "reflect.Value.MethodByName": true}
	for _, s := range syms {
		if banned[s.Name] {
			t.Errorf("the daemon links %s: something looks methods up by reflection (text/template?)", s.Name)
		}
	}
	if len(syms) < 1000 {
		t.Fatalf("only %d symbols: a stripped binary cannot be checked", len(syms))
	}
}
