package tools

import (
	"io/fs"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// fill renders every embedded text exactly as text/template does, for
// every sandbox level, with and without a remote host.
func TestFillMatchesTextTemplate(t *testing.T) {
	names, err := fs.Glob(textFS, "texts/*.tmpl")
	if err != nil || len(names) < 4 {
		t.Fatalf("templates: %v %v", names, err)
	}
	var datas []textData
	for _, where := range []string{"", "on the remote host build1, over SSH"} {
		for _, l := range executor.AllLevels() {
			datas = append(datas, textData{
				Where: where, DefaultTimeout: humanDuration(2 * time.Minute), MaxTimeout: humanDuration(10 * time.Minute),
				DefaultTimeoutMs: 120000, MaxTimeoutMs: 600000, OutputLimit: 30000,
				Level: l, Confined: l.Confined(), Writable: l.Writable(), Network: l.Network(),
			})
		}
	}
	datas = append(datas, textData{}) // every field zero
	for _, name := range names {
		src, err := fs.ReadFile(textFS, name)
		if err != nil {
			t.Fatal(err)
		}
		ref := template.Must(template.New(name).Option("missingkey=error").Parse(string(src)))
		for _, d := range datas {
			var want strings.Builder
			if err := ref.Execute(&want, d); err != nil {
				t.Fatal(err)
			}
			got, err := fill(string(src), d.field)
			if err != nil || got != want.String() {
				t.Errorf("%s with %+v: fill = %q, %v\ntext/template = %q", name, d, got, err, want.String())
			}
		}
	}
}

func TestFill(t *testing.T) {
	field := func(name string) (string, bool, bool) {
		switch name {
		case "Yes":
			return "true", true, true
		case "No":
			return "", false, true
		case "N":
			return "7", true, true
		}
		return "", false, false
	}
	tests := []struct{ in, want, err string }{
		{in: "plain", want: "plain"},
		{in: "n={{.N}}.", want: "n=7."},
		{in: "{{if .Yes}}a{{else}}b{{end}}|{{if .No}}a{{else}}b{{end}}", want: "a|b"},
		{in: "{{if .Yes}}{{if .No}}x{{else}}y{{end}}{{end}}{{if .No}}{{if .Yes}}z{{end}}{{end}}", want: "y"},
		{in: "a \n\t{{- .N -}} \n b", want: "a7b"},
		{in: "{{.Missing}}", err: `no field "Missing"`},
		{in: "{{len .N}}", err: "unsupported action"},
		{in: "{{if .Yes}}open", err: "without {{end}}"},
		{in: "{{end}}", err: "without {{if}}"},
		{in: "{{else}}", err: "without {{if}}"},
		{in: "{{if .Yes}}{{else}}{{else}}{{end}}", err: "without {{if}}"},
		{in: "{{.N", err: "unclosed action"},
	}
	for _, tt := range tests {
		got, err := fill(tt.in, field)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("fill(%q) error %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("fill(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
