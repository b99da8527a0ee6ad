package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// zedAgentServer is an `agent_servers` entry of Zed's settings.json for a
// local command ("type": "custom"), with the fields Zed reads.
type zedAgentServer struct {
	Type                 string            `json:"type"`
	Command              string            `json:"command"`
	Args                 []string          `json:"args"`
	Env                  map[string]string `json:"env"`
	DefaultMode          string            `json:"default_mode,omitempty"`
	DefaultModel         string            `json:"default_model,omitempty"`
	DefaultConfigOptions map[string]string `json:"default_config_options,omitempty"`
}

var jsonBlockRE = regexp.MustCompile("(?s)```json\n(.*?)```")

// The settings snippets of README.md and docs/zed.md are what a user
// pastes into Zed: each must parse as the shape Zed expects (a tagged
// custom entry with command, args and env; no unknown field), with args the
// daemon accepts and config options (and values) a new session offers.
func TestZedSettingsSnippets(t *testing.T) {
	root, err := acptest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	offered := offeredConfigOptions(t)
	for _, doc := range []string{"README.md", "docs/zed.md"} {
		t.Run(doc, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join(root, doc))
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			for _, m := range jsonBlockRE.FindAllSubmatch(text, -1) {
				if !bytes.Contains(m[1], []byte(`"agent_servers"`)) {
					continue
				}
				found++
				checkZedSnippet(t, m[1], offered)
			}
			if found == 0 {
				t.Errorf("%s has no agent_servers snippet", doc)
			}
		})
	}
}

func checkZedSnippet(t *testing.T, snippet []byte, offered map[string][]string) {
	t.Helper()
	var settings struct {
		AgentServers map[string]json.RawMessage `json:"agent_servers"`
	}
	if err := json.Unmarshal(snippet, &settings); err != nil {
		t.Fatalf("the snippet is not JSON: %v\n%s", err, snippet)
	}
	entry, ok := settings.AgentServers["dsh-acp"]
	if !ok {
		t.Fatalf("no agent_servers.dsh-acp entry:\n%s", snippet)
	}
	dec := json.NewDecoder(bytes.NewReader(entry))
	dec.DisallowUnknownFields()
	var s zedAgentServer
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("agent_servers.dsh-acp is not a Zed agent server entry: %v\n%s", err, entry)
	}
	var shape map[string]json.RawMessage
	_ = json.Unmarshal(entry, &shape)
	for _, field := range []string{"type", "command", "args", "env"} {
		if _, ok := shape[field]; !ok {
			t.Errorf("the entry has no %q:\n%s", field, entry)
		}
	}
	if s.Type != "custom" {
		t.Errorf(`"type" is %q, want "custom" (Zed ignores an untagged entry)`, s.Type)
	}
	if !filepath.IsAbs(s.Command) || filepath.Base(s.Command) != "dsh-acp" {
		t.Errorf(`"command" %q is not an absolute path to dsh-acp`, s.Command)
	}
	if _, err := parseConfig("dsh-acp", s.Args, func(string) (string, bool) { return "", false }, io.Discard); err != nil {
		t.Errorf(`"args" %q are not daemon flags: %v`, s.Args, err)
	}
	for k := range s.Env {
		if strings.TrimSpace(k) == "" {
			t.Errorf(`"env" has an empty name`)
		}
	}
	if s.DefaultMode != "" {
		t.Errorf(`"default_mode" is ignored for an agent with config options; use "default_config_options"`)
	}
	for id, v := range s.DefaultConfigOptions {
		values, ok := offered[id]
		if !ok {
			t.Errorf("default_config_options names %q, an option dsh-acp does not offer (it offers %v)", id, offered)
			continue
		}
		if !slices.Contains(values, v) {
			t.Errorf("default_config_options.%s is %q, not one of %q", id, v, values)
		}
	}
}

// offeredConfigOptions asks the real daemon which config options a new
// session has, and their values.
func offeredConfigOptions(t *testing.T) map[string][]string {
	t.Helper()
	bin := acptest.BuildBinary(t)
	a := acptest.Start(t, bin, nil, []string{"DSH_STATE_DIR=" + t.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "DSH_MODE="})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Call(ctx, "initialize", acptest.InitializeParams(acptest.ZedCapabilities()), nil); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		ConfigOptions []struct {
			ID      string `json:"id"`
			Options []struct {
				Value string `json:"value"`
			} `json:"options"`
		} `json:"configOptions"`
	}
	if err := a.Call(ctx, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}}, &resp); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, o := range resp.ConfigOptions {
		for _, v := range o.Options {
			out[o.ID] = append(out[o.ID], v.Value)
		}
	}
	return out
}
