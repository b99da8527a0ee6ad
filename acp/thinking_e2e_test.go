package acp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

func findConfigOption(opts []configOption, id string) (configOption, bool) {
	if o := optionByID(opts, id); o != nil {
		return *o, true
	}
	return configOption{}, false
}

// thinkingSent is what a request asked of the model's thinking: "-" for
// nothing, else the thinking type and the effort.
func thinkingSent(r llmtest.Request) string {
	if r.Thinking == nil && r.ReasoningEffort == nil {
		return "-"
	}
	s := ""
	if r.Thinking != nil {
		s = r.Thinking.Type
	}
	if r.ReasoningEffort != nil {
		s += "/" + *r.ReasoningEffort
	}
	return s
}

// The thinking option (category thought_level, Zed's thinking selector)
// changes exactly the request's thinking parameters, from the flag's
// value on; /thinking is the same switch; the value is journaled and
// restored by session/load in another daemon.
func TestE2EThinkingOption(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetModels("deepseek-flash", "deepseek-v4-pro")
	srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Reply("ok") })
	env := []string{"DSH_BASE_URL=" + srv.URL(), "DSH_API_KEY=" + llmNewKey(), "DSH_MODEL=deepseek-flash", "DSH_THINKING=high"}
	cwd := t.TempDir()
	d1 := startDaemon(t, acptest.ZedCapabilities(), nil, env...)
	var opened struct {
		SessionID     string         `json:"sessionId"`
		ConfigOptions []configOption `json:"configOptions"`
	}
	if err := d1.Call(ctxT(t), "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &opened); err != nil {
		t.Fatal(err)
	}
	sid := opened.SessionID
	o, ok := findConfigOption(opened.ConfigOptions, "thinking")
	if !ok || o.Category != "thought_level" || o.CurrentValue != "high" || len(o.Options) != 5 {
		t.Fatalf("thinking option %+v (offered %v)", o, ok)
	}
	d1.prompt(sid, "one")
	var set struct {
		ConfigOptions []configOption `json:"configOptions"`
	}
	if err := d1.Call(ctxT(t), "session/set_config_option", map[string]any{"sessionId": sid, "configId": "thinking", "value": "off"}, &set); err != nil {
		t.Fatal(err)
	}
	if o, _ := findConfigOption(set.ConfigOptions, "thinking"); o.CurrentValue != "off" {
		t.Errorf("after set_config_option: %+v", o)
	}
	d1.prompt(sid, "two")
	d1.prompt(sid, "/thinking max")
	d1.prompt(sid, "three")
	if err := d1.Call(ctxT(t), "session/set_config_option", map[string]any{"sessionId": sid, "configId": "thinking", "value": "lots"}, nil); rpcCode(err) != -32602 || !strings.Contains(rpcErrorText(err), "default, off, low, high or max") {
		t.Errorf("an unknown value: %v", err)
	}
	llmCheckExit(t, d1)

	d2 := startDaemonIn(t, d1.stateDir, acptest.ZedCapabilities(), nil, env...)
	t.Cleanup(func() { llmCheckExit(t, d2) })
	var loaded struct {
		ConfigOptions []configOption `json:"configOptions"`
	}
	if err := d2.Call(ctxT(t), "session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, &loaded); err != nil {
		t.Fatal(err)
	}
	if o, _ := findConfigOption(loaded.ConfigOptions, "thinking"); o.CurrentValue != "max" {
		t.Errorf("restored thinking option %+v, want max", o)
	}
	d2.prompt(sid, "four")
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, thinkingSent(r))
	}
	if strings.Join(got, " ") != "enabled/high disabled enabled/max enabled/max" {
		t.Errorf("thinking per request: %q, want high, off, max, then max after the reload", got)
	}
}

// A provider that refuses the thinking parameters: the turn goes on
// without them, the user is told once, and the option is no longer offered.
func TestE2EThinkingRefused(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetModels("other-model")
	srv.Respond(func(r llmtest.Request) llmtest.Response {
		if r.Thinking != nil || r.ReasoningEffort != nil {
			return llmtest.Error(http.StatusBadRequest, "Unrecognized request argument supplied: thinking")
		}
		return llmtest.Reply("fine")
	})
	env := []string{"DSH_BASE_URL=" + srv.URL(), "DSH_API_KEY=" + llmNewKey(), "DSH_MODEL=other-model", "DSH_THINKING=max"}
	d := startDaemon(t, acptest.ZedCapabilities(), nil, env...)
	t.Cleanup(func() { llmCheckExit(t, d) })
	sid := d.newSession(t.TempDir())
	from := len(d.Inbound())
	if stop := d.prompt(sid, "hello"); stop != "end_turn" {
		t.Fatalf("stop %s", stop)
	}
	told, offered := 0, true
	for _, raw := range d.Inbound()[from:] {
		var m struct {
			Params struct {
				Update struct {
					Kind    string `json:"sessionUpdate"`
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
					ConfigOptions []configOption `json:"configOptions"`
				} `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		u := m.Params.Update
		if strings.Contains(u.Content.Text, "does not take the thinking setting") {
			told++
		}
		if u.Kind == "config_option_update" {
			_, offered = findConfigOption(u.ConfigOptions, "thinking")
		}
	}
	if told != 1 || offered {
		t.Errorf("told %d times; option still offered: %v", told, offered)
	}
	d.prompt(sid, "again")
	reqs := srv.Requests()
	if n := len(reqs); n != 3 || thinkingSent(reqs[2]) != "-" {
		t.Errorf("%d requests; the last sent thinking %q", n, thinkingSent(reqs[len(reqs)-1]))
	}
}

// A configured model the provider does not list is reported right after
// session/new, before any prompt, naming the models the provider lists.
func TestE2EUnlistedModelReported(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetModels("deepseek-flash", "deepseek-v4-pro")
	env := []string{"DSH_BASE_URL=" + srv.URL(), "DSH_API_KEY=" + llmNewKey(), "DSH_MODEL=deepseek-chatty"}
	d := startDaemon(t, acptest.ZedCapabilities(), nil, env...)
	t.Cleanup(func() { llmCheckExit(t, d) })
	sid := d.newSession(t.TempDir())
	u, err := d.WaitUpdate(ctxT(t), sid, func(u json.RawMessage) bool {
		return strings.Contains(string(u), "is not among the models the provider lists")
	})
	if err != nil {
		t.Fatalf("no report of the unlisted model: %v", err)
	}
	if !strings.Contains(string(u), "deepseek-flash, deepseek-v4-pro") || !strings.Contains(string(u), `\"deepseek-chatty\"`) {
		t.Errorf("report %s", u)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d chat requests before any prompt", n)
	}
}
