package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/credentials"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// login and logout are found first or after the daemon's flags (a client
// appends the terminal method's args to the agent's own command), and the
// flags around them apply; an endpoint or model is explicit only when a
// flag or variable set it.
func TestConfigLoginLogout(t *testing.T) {
	tests := []struct {
		args                  []string
		env                   map[string]string
		command, base, model  string
		baseSet, modelSet, ok bool
	}{
		{args: []string{"login"}, command: "login", base: defaultBaseURL, model: defaultModel, ok: true},
		{args: []string{"--mode", "auto", "login"}, command: "login", base: defaultBaseURL, model: defaultModel, ok: true},
		{args: []string{"login", "--base-url", "https://x.example"}, command: "login", base: "https://x.example", model: defaultModel, baseSet: true, ok: true},
		{args: []string{"--model", "m", "logout"}, command: "logout", base: defaultBaseURL, model: "m", modelSet: true, ok: true},
		{args: nil, env: map[string]string{"DSH_BASE_URL": "https://e.example"}, base: "https://e.example", model: defaultModel, baseSet: true, ok: true},
		{args: []string{"login", "extra"}},
		{args: []string{"login", "logout"}},
	}
	for _, tt := range tests {
		lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
		var usage bytes.Buffer
		c, err := parseConfig("dsh-acp", tt.args, lookup, &usage)
		if (err == nil) != tt.ok {
			t.Errorf("%v: err %v", tt.args, err)
			continue
		}
		if !tt.ok {
			continue
		}
		if c.Command != tt.command || c.BaseURL != tt.base || c.Model != tt.model || c.BaseURLSet != tt.baseSet || c.ModelSet != tt.modelSet {
			t.Errorf("%v: %+v", tt.args, c)
		}
	}
}

// The model source builds a client only when the credential changes, and
// none when there is no key.
func TestModelSource(t *testing.T) {
	store := credentials.NewStore(filepath.Join(t.TempDir(), "dsh-acp"))
	builds := 0
	m := &modelSource{in: credentials.Inputs{DefaultBaseURL: defaultBaseURL, DefaultModel: defaultModel}, store: store,
		build: func(c credentials.Credential) agent.ModelClient { builds++; return fakeModel{c} }}
	if c, err := m.Model(); c != nil || err != nil {
		t.Fatalf("no key: %v, %v", c, err)
	}
	cred := credentials.Credential{APIKey: "sk-one-000000000", BaseURL: "https://p.example", Model: "m"}
	if err := store.Save(cred); err != nil {
		t.Fatal(err)
	}
	c1, _ := m.Model()
	c2, _ := m.Model()
	if c1 == nil || c1 != c2 || builds != 1 || c1.(fakeModel).c != cred {
		t.Errorf("after login: %v %v, %d builds", c1, c2, builds)
	}
	cred.APIKey = "sk-two-000000000"
	if err := store.Save(cred); err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Model(); c == nil || c.(fakeModel).c.APIKey != cred.APIKey || builds != 2 {
		t.Errorf("after a new login: %v, %d builds", c, builds)
	}
	if err := m.Logout(); err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Model(); c != nil {
		t.Errorf("after logout: %v", c)
	}
	if err := m.Logout(); err != nil {
		t.Errorf("a second logout: %v", err)
	}
	if err := os.Chmod(store.Dir(), 0o777); err != nil {
		t.Fatal(err)
	}
	if c, err := m.Model(); c != nil || err == nil || !strings.Contains(err.Error(), "writable") {
		t.Errorf("a hostile store: %v, %v", c, err)
	}
}

type fakeModel struct{ c credentials.Credential }

func (fakeModel) Stream(context.Context, llm.Request, func(llm.Delta)) (llm.Response, error) {
	return llm.Response{}, nil
}

func TestBuildVersion(t *testing.T) {
	info := func(main string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Version: main}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	tests := []struct {
		name           string
		stampV, stampC string
		info           *debug.BuildInfo
		wantV, wantC   string
	}{
		{"stamped by the release build", "1.2.3", "abc", info("v9.9.9", "vcs.revision", "def"), "1.2.3", "abc"},
		{"go install pkg@v1.4.0", "", "", info("v1.4.0"), "1.4.0", "unknown"},
		{"go build in a checkout", "", "", info("(devel)", "vcs.revision", "0123abc", "vcs.modified", "false"), devVersion, "0123abc"},
		{"go build with changes", "", "", info("(devel)", "vcs.revision", "0123abc", "vcs.modified", "true"), devVersion, "0123abc-dirty"},
		{"no build info", "", "", nil, devVersion, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version, commit = tt.stampV, tt.stampC
			t.Cleanup(func() { version, commit = "", "" })
			v, c := buildVersion(tt.info, tt.info != nil)
			if v != tt.wantV || c != tt.wantC {
				t.Errorf("buildVersion = %q, %q; want %q, %q", v, c, tt.wantV, tt.wantC)
			}
		})
	}
}

// The release's ldflags (read from .goreleaser.yaml) stamp what --version
// prints and what initialize reports.
func TestReleaseLdflagsStampTheVersion(t *testing.T) {
	y, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*ldflags:\s*\n\s*-\s*(.+)$`).FindSubmatch(y)
	if m == nil {
		t.Fatal(".goreleaser.yaml has no ldflags")
	}
	ldflags := strings.NewReplacer("{{.Version}}", "9.8.7", "{{.Commit}}", "c0ffee").Replace(string(m[1]))
	root, err := acptest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "dsh-acp")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, "./cmd/dsh-acp")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || string(out) != "dsh-acp 9.8.7 (commit c0ffee)\n" {
		t.Errorf("--version: %q, %v", out, err)
	}
	a := acptest.Start(t, bin, nil, []string{"DSH_STATE_DIR=" + t.TempDir()})
	var res struct {
		AgentInfo struct{ Name, Version string } `json:"agentInfo"`
	}
	if err := a.Call(t.Context(), "initialize", acptest.InitializeParams(acptest.PlainCapabilities()), &res); err != nil {
		t.Fatal(err)
	}
	if res.AgentInfo.Version != "9.8.7" {
		t.Errorf("agentInfo %+v", res.AgentInfo)
	}
}
