package tools

import (
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

//go:embed texts/*.tmpl
var textFS embed.FS

// texts are the rendered model-facing texts of a Set.
type texts struct {
	bash, bashOutput, bashKill string
	// prompts is the prompt section for each sandbox level.
	prompts map[executor.Level]string
}

// textData is what the templates may state.
type textData struct {
	DefaultTimeout, MaxTimeout     string // "2 minutes"
	DefaultTimeoutMs, MaxTimeoutMs int64
	OutputLimit                    int
	// Level is the session's sandbox level (prompt.tmpl only); Confined,
	// Writable and Network are what it allows.
	Level                       executor.Level
	Confined, Writable, Network bool
	// Where says where commands run when that is another machine
	// (executor.Remote's Describe), else "".
	Where string
}

// renderTexts renders the embedded templates with cfg's limits. The
// templates are part of the binary, so a failure is a programming error
// that every test run catches.
func renderTexts(cfg Config, where string) texts {
	data := textData{
		Where:            where,
		DefaultTimeout:   humanDuration(cfg.DefaultTimeout),
		MaxTimeout:       humanDuration(cfg.MaxTimeout),
		DefaultTimeoutMs: cfg.DefaultTimeout.Milliseconds(),
		MaxTimeoutMs:     cfg.MaxTimeout.Milliseconds(),
		OutputLimit:      cfg.OutputLimit,
	}
	t := texts{
		bash:       render("bash.tmpl", data),
		bashOutput: render("bash_output.tmpl", data),
		bashKill:   render("bash_kill.tmpl", data),
		prompts:    map[executor.Level]string{},
	}
	for _, l := range executor.AllLevels() {
		d := data
		d.Level, d.Confined, d.Writable, d.Network = l, l.Confined(), l.Writable(), l.Network()
		t.prompts[l] = render("prompt.tmpl", d)
	}
	return t
}

func render(name string, data textData) string {
	tmpl, err := textFS.ReadFile("texts/" + name)
	if err != nil {
		panic(fmt.Sprintf("tools: render %s: %v", name, err))
	}
	s, err := fill(string(tmpl), data.field)
	if err != nil {
		panic(fmt.Sprintf("tools: render %s: %v", name, err))
	}
	return strings.TrimSpace(s)
}

// humanDuration writes d for a reader: "2 minutes", "90 seconds", "1500 ms".
func humanDuration(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return plural(int64(d/time.Minute), "minute")
	case d%time.Second == 0:
		return plural(int64(d/time.Second), "second")
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}
