package agent

import (
	"strings"
	"testing"
	"text/template"
)

// The base prompt and the summary prompt are filled by hand exactly as
// text/template filled them.
func TestPromptsFilledAsTextTemplate(t *testing.T) {
	render := func(src string, data any) string {
		var b strings.Builder
		if err := template.Must(template.New("").Option("missingkey=error").Parse(src)).Execute(&b, data); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(b.String())
	}
	for _, cwd := range []string{"/home/u/project", "/tmp/a {{.Cwd}} b", ""} {
		if got, want := renderBase("", cwd), render(baseSystemPrompt, struct{ Cwd string }{cwd}); got != want {
			t.Errorf("renderBase(%q):\n%s\nwant:\n%s", cwd, got, want)
		}
	}
	for _, words := range []int{50, 3072} {
		if got, want := summaryPrompt(words), render(summaryText, struct{ Words int }{words}); got != want {
			t.Errorf("summaryPrompt(%d):\n%s\nwant:\n%s", words, got, want)
		}
	}
	if got := renderBase("  mine \n", "/x"); got != "mine" {
		t.Errorf("custom prompt: %q", got)
	}
}
