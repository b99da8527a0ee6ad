package presentation_test

import (
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestCapsFrom(t *testing.T) {
	tests := []struct {
		name string
		meta map[string]any
		want bool
	}{
		{"true", map[string]any{"terminal_output": true}, true},
		{"false", map[string]any{"terminal_output": false}, false},
		{"string is not a boolean", map[string]any{"terminal_output": "true"}, false},
		{"number is not a boolean", map[string]any{"terminal_output": 1}, false},
		{"absent", map[string]any{"terminal-auth": true}, false},
		{"no meta", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := presentation.CapsFrom(acp.ClientCapabilities{Meta: tt.meta}); got.Terminal != tt.want {
				t.Errorf("Terminal = %v, want %v", got.Terminal, tt.want)
			}
		})
	}
	// As decoded from Zed's initialize request.
	var init acp.InitializeRequest
	raw := `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true},"terminal":true,"_meta":{"terminal_output":true,"terminal-auth":true}}}`
	if err := json.Unmarshal([]byte(raw), &init); err != nil {
		t.Fatal(err)
	}
	if !presentation.CapsFrom(init.ClientCapabilities).Terminal {
		t.Error("Zed's initialize request does not enable terminal cards")
	}
}

// wireOf marshals an update as the client receives it, decoded generically.
func wireOf(t *testing.T, u acp.SessionUpdate) map[string]any {
	t.Helper()
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func metaOf(t *testing.T, u acp.SessionUpdate, key string) map[string]any {
	t.Helper()
	meta, _ := wireOf(t, u)["_meta"].(map[string]any)
	v, _ := meta[key].(map[string]any)
	return v
}

func TestOpenCardTerminalCwd(t *testing.T) {
	tests := []struct {
		name, cwd, sessionCwd, want string
	}{
		{"absolute as is", "/opt/app/", "/home/u/p", "/opt/app"},
		{"relative against the session", "src/../pkg", "/home/u/p", "/home/u/p/pkg"},
		{"empty is the session cwd", "", "/home/u/p", "/home/u/p"},
		{"relative without a session cwd stays relative", "src", "", "src"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tools.CallIntent{Card: tools.CardTerminal, Title: "ls", Kind: "execute", Cwd: tt.cwd}
			info := metaOf(t, presentation.OpenCard("c1", in, tt.sessionCwd, presentation.Caps{Terminal: true}), "terminal_info")
			if info["cwd"] != tt.want || info["terminal_id"] != "c1" {
				t.Errorf("terminal_info = %v, want cwd %q", info, tt.want)
			}
		})
	}
}

func TestLocateCard(t *testing.T) {
	loc := func(dir string) string { return "build1:" + dir }
	in := tools.CallIntent{Card: tools.CardTerminal, Title: "ls", Kind: "execute", Cwd: "sub"}
	open := presentation.OpenCard("c1", in, "/srv/p", presentation.Caps{Terminal: true})
	located := presentation.LocateCard(open, loc)
	if info := metaOf(t, located, "terminal_info"); info["cwd"] != "build1:/srv/p/sub" || info["terminal_id"] != "c1" {
		t.Errorf("located terminal_info = %v", info)
	}
	if info := metaOf(t, open, "terminal_info"); info["cwd"] != "/srv/p/sub" {
		t.Errorf("LocateCard changed its argument: %v", info)
	}
	plain := presentation.OpenCard("c1", in, "/srv/p", presentation.Caps{})
	if got := wireOf(t, presentation.LocateCard(plain, loc)); got["_meta"] != nil {
		t.Errorf("a card without a terminal got a location: %v", got)
	}
	if got := presentation.LocateCard(open, nil); metaOf(t, got, "terminal_info")["cwd"] != "/srv/p/sub" {
		t.Error("a nil location changed the card")
	}
}

func TestOpenCardShape(t *testing.T) {
	term := tools.CallIntent{Card: tools.CardTerminal, Title: "make", Kind: "execute", Description: "Build"}
	u := wireOf(t, presentation.OpenCard("c1", term, "/p", presentation.Caps{Terminal: true}))
	if u["sessionUpdate"] != "tool_call" || u["status"] != "in_progress" || u["title"] != "make" || u["kind"] != "execute" {
		t.Errorf("tool_call header: %v", u)
	}
	content, _ := json.Marshal(u["content"])
	want := `[{"content":{"text":"Build","type":"text"},"type":"content"},{"terminalId":"c1","type":"terminal"}]`
	if string(content) != want {
		t.Errorf("content %s\nwant    %s", content, want)
	}
	plain := wireOf(t, presentation.OpenCard("c1", term, "/p", presentation.Caps{}))
	if _, ok := plain["_meta"]; ok {
		t.Errorf("terminal _meta sent to a client without the capability: %v", plain)
	}
	odd := wireOf(t, presentation.OpenCard("c1", tools.CallIntent{Kind: "shell"}, "", presentation.Caps{}))
	if odd["kind"] != "other" || odd["title"] != "tool call" {
		t.Errorf("an unknown kind and an empty title must map to other / a default title: %v", odd)
	}
}

func TestCardOutput(t *testing.T) {
	if _, ok := presentation.CardOutput("c1", "x", presentation.Caps{}); ok {
		t.Error("live output without the terminal capability")
	}
	if _, ok := presentation.CardOutput("c1", "", presentation.Caps{Terminal: true}); ok {
		t.Error("an update for empty output")
	}
	u, ok := presentation.CardOutput("c1", "a\xffb", presentation.Caps{Terminal: true})
	out := metaOf(t, u, "terminal_output")
	if !ok || out["data"] != "a\uFFFDb" || out["terminal_id"] != "c1" {
		t.Errorf("terminal_output = %v", out)
	}
	if w := wireOf(t, u); w["sessionUpdate"] != "tool_call_update" || w["status"] != nil || w["content"] != nil {
		t.Errorf("a live chunk must only append output: %v", w)
	}
}

func TestCloseCard(t *testing.T) {
	term := tools.CallIntent{Card: tools.CardTerminal, Title: "make", Kind: "execute"}
	caps := presentation.Caps{Terminal: true}
	tests := []struct {
		name        string
		res         tools.ResultIntent
		streamed    bool
		updates     int
		wholeOutput bool
		status      string
		exit        string // terminal_exit JSON
	}{
		{
			name:     "streamed output is not resent",
			res:      tools.ResultIntent{Card: tools.CardTerminal, Output: "x", ExitCode: intp(0)},
			streamed: true, updates: 1, status: "completed",
			exit: `{"exit_code":0,"signal":null,"terminal_id":"c1"}`,
		},
		{
			name:    "unstreamed output rides on the final update",
			res:     tools.ResultIntent{Card: tools.CardTerminal, Output: "x", ExitCode: intp(3), Failed: true},
			updates: 1, status: "failed", wholeOutput: true,
			exit: `{"exit_code":3,"signal":null,"terminal_id":"c1"}`,
		},
		{
			name:    "a negative exit code is unknown",
			res:     tools.ResultIntent{Card: tools.CardTerminal, ExitCode: intp(-1), Signal: "SIGKILL", Failed: true},
			updates: 1, status: "failed",
			exit: `{"exit_code":null,"signal":"SIGKILL","terminal_id":"c1"}`,
		},
		{
			name:    "an error closes the terminal with no exit",
			res:     tools.ResultIntent{Card: tools.CardGeneric, Content: []string{"spawn failed"}, Failed: true},
			updates: 1, status: "failed",
			exit: `{"exit_code":null,"signal":null,"terminal_id":"c1"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ups := presentation.CloseCard("c1", term, tt.res, caps, tt.streamed)
			if len(ups) != tt.updates {
				t.Fatalf("%d updates, want %d", len(ups), tt.updates)
			}
			last := ups[len(ups)-1]
			if out := metaOf(t, last, "terminal_output"); tt.wholeOutput != (out != nil) || (out != nil && out["data"] != tt.res.Output) {
				t.Errorf("final update %v: terminal_output should carry the whole output: %v", wireOf(t, last), tt.wholeOutput)
			}
			if got := wireOf(t, last)["status"]; got != tt.status {
				t.Errorf("status %v, want %s", got, tt.status)
			}
			exit, _ := json.Marshal(metaOf(t, last, "terminal_exit"))
			if string(exit) != tt.exit {
				t.Errorf("terminal_exit %s, want %s", exit, tt.exit)
			}
		})
	}
}

func TestCloseCardReplacesTitle(t *testing.T) {
	in := tools.CallIntent{Card: tools.CardGeneric, Title: "Kill background task", Kind: "execute"}
	ups := presentation.CloseCard("c1", in, tools.ResultIntent{Card: tools.CardGeneric, Title: "Kill background task bash-9"}, presentation.Caps{}, false)
	if got := wireOf(t, ups[0])["title"]; got != "Kill background task bash-9" {
		t.Errorf("title %v", got)
	}
	ups = presentation.CloseCard("c1", in, tools.ResultIntent{Card: tools.CardGeneric}, presentation.Caps{}, false)
	if _, ok := wireOf(t, ups[0])["title"]; ok {
		t.Error("title sent without a replacement")
	}
}

func TestPermissionToolCall(t *testing.T) {
	in := tools.CallIntent{Card: tools.CardTerminal, Title: "rm -rf build", Kind: "execute", Description: "Clean",
		RawInput: map[string]any{"command": "rm -rf build"}}
	for _, tt := range []struct {
		caps presentation.Caps
		want string
	}{
		{presentation.Caps{Terminal: true}, `{"content":[{"content":{"text":"Clean","type":"text"},"type":"content"},{"terminalId":"c1","type":"terminal"}],"kind":"execute","rawInput":{"command":"rm -rf build"},"status":"pending","title":"rm -rf build","toolCallId":"c1"}`},
		{presentation.Caps{}, `{"content":[{"content":{"text":"Clean","type":"text"},"type":"content"}],"kind":"execute","rawInput":{"command":"rm -rf build"},"status":"pending","title":"rm -rf build","toolCallId":"c1"}`},
	} {
		b, err := json.Marshal(presentation.PermissionToolCall("c1", in, tt.caps))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("permission tool call %s\nwant %s", b, tt.want)
		}
	}
}

func intp(n int) *int { return &n }

// A call the user is about to be asked about opens pending, and the
// question's tool call sends nothing itself: the card never claims to run
// before the answer.
func TestPresenterOpensAskedCallPending(t *testing.T) {
	var sent []acp.SessionUpdate
	p := presentation.NewPresenter(presentation.PresenterOptions{
		Send:  func(u acp.SessionUpdate) { sent = append(sent, u) },
		Cards: tools.NewBash(nil, tools.Config{}),
		Caps:  presentation.Caps{Terminal: true},
		Cwd:   "/w",
	})
	p.Emit(event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"rm x","description":"Remove x"}`), Pending: true})
	q := p.Asking("c1")
	if len(sent) != 1 || sent[0].ToolCall == nil || sent[0].ToolCall.Status != acp.ToolCallStatusPending {
		t.Fatalf("sent %+v, want one tool_call opening pending", sent)
	}
	if q.Status == nil || *q.Status != acp.ToolCallStatusPending || q.Title == nil || *q.Title != "rm x" {
		t.Errorf("question's tool call %+v", q)
	}
	p.Allowed("c1")
	if len(sent) != 2 || sent[1].ToolCallUpdate == nil || *sent[1].ToolCallUpdate.Status != acp.ToolCallStatusInProgress {
		t.Errorf("allowed: %+v", sent)
	}
	p.Emit(event.ToolCall{ID: "c2", Name: "bash", Args: json.RawMessage(`{"command":"ls","description":"List"}`)})
	if st := sent[len(sent)-1].ToolCall.Status; st != acp.ToolCallStatusInProgress {
		t.Errorf("an unasked call opens %q", st)
	}
}
