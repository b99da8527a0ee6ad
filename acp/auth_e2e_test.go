//go:build linux

package acp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// provider is a fake model provider: GET /models answers the one good key
// (401 for any other, as real providers do) and everything else goes to a
// scripted llmtest server.
type provider struct {
	URL string
	llm *llmtest.Server
	key string
}

func newProvider(t *testing.T, script ...llmtest.Response) *provider {
	t.Helper()
	p := &provider{llm: llmtest.New(t, script...), key: llmNewKey()}
	target, err := url.Parse(p.llm.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/models" {
			if r.Header.Get("Authorization") != "Bearer "+p.key {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"error":{"message":"Authentication Fails (no such user)","type":"authentication_error"}}`))
				return
			}
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"deepseek-flash","object":"model"}]}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// initialize starts the daemon and returns its initialize result.
func initialize(t *testing.T, caps map[string]any, env ...string) map[string]any {
	t.Helper()
	a := acptest.Start(t, acptest.BuildBinary(t), nil, append([]string{"DSH_STATE_DIR=" + t.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY="}, env...))
	var res map[string]any
	if err := a.Call(ctxT(t), "initialize", acptest.InitializeParams(caps), &res); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return res
}

func TestTerminalAuthIsAdvertisedToClientsThatOptIn(t *testing.T) {
	withAuth := acptest.PlainCapabilities()
	withAuth["auth"] = map[string]any{"terminal": true}
	tests := []struct {
		name   string
		caps   map[string]any
		want   bool // a terminal method
		legacy bool // with Zed's older _meta["terminal-auth"] descriptor
	}{
		{"clientCapabilities.auth.terminal", withAuth, true, false},
		{"Zed's older _meta terminal-auth flag", acptest.ZedCapabilities(), true, true},
		{"a client without terminal auth", acptest.PlainCapabilities(), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := initialize(t, tt.caps)
			var r struct {
				AuthMethods []struct {
					ID   string   `json:"id"`
					Type string   `json:"type"`
					Args []string `json:"args"`
					Meta map[string]struct {
						Command string   `json:"command"`
						Args    []string `json:"args"`
					} `json:"_meta"`
				} `json:"authMethods"`
				AgentCapabilities struct {
					Auth struct {
						Logout *struct{} `json:"logout"`
					} `json:"auth"`
				} `json:"agentCapabilities"`
				AgentInfo struct {
					Version string `json:"version"`
				} `json:"agentInfo"`
			}
			b, _ := json.Marshal(res)
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if (r.AgentCapabilities.Auth.Logout != nil) != tt.want {
				t.Errorf("logout advertised %v, want it only with an auth method (%v): %s", r.AgentCapabilities.Auth.Logout != nil, tt.want, b)
			}
			if r.AgentInfo.Version == "" {
				t.Errorf("agentInfo has no version: %s", b)
			}
			if !tt.want {
				if len(r.AuthMethods) != 0 {
					t.Errorf("authMethods %s for a client that did not opt in", b)
				}
				return
			}
			if len(r.AuthMethods) != 1 {
				t.Fatalf("authMethods: %s", b)
			}
			m := r.AuthMethods[0]
			if m.Type != "terminal" || m.ID != "dsh-acp-login" || !slices.Contains(m.Args, "login") {
				t.Errorf("method %+v", m)
			}
			ta, ok := m.Meta["terminal-auth"]
			if ok != tt.legacy {
				t.Errorf("_meta terminal-auth present %v, want %v: %s", ok, tt.legacy, b)
			}
			if tt.legacy && (!filepath.IsAbs(ta.Command) || !slices.Equal(ta.Args, []string{"login"})) {
				t.Errorf("_meta terminal-auth %+v", ta)
			}
			if tt.legacy {
				if _, err := os.Stat(ta.Command); err != nil {
					t.Errorf("the descriptor's command: %v", err)
				}
			}
		})
	}
}

// No key: a prompt that needs the model gets auth-required, `!` commands
// still run.
func TestNoKeyPromptIsAuthRequired(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	assertAuthRequired(t, d, sid)
	if got := d.prompt(sid, "!echo ok"); got != "end_turn" {
		t.Fatalf("!echo ok: stopReason %q", got)
	}
	c := onlyCard(t, decodeUpdates(t, d.Updates(sid)))
	if strings.Join(c.outputs, "") != "ok\n" {
		t.Errorf("card output %q", c.outputs)
	}
}

func assertAuthRequired(t *testing.T, d *daemon, sid string) {
	t.Helper()
	err := d.Call(ctxT(t), "session/prompt", promptParams(sid, "hello"), nil)
	var re *jsonrpc2.Error
	if !errors.As(err, &re) || re.Code != -32000 || !strings.HasPrefix(re.Message, "Authentication required") {
		t.Fatalf("prompt with no key: %v, want the auth-required error -32000", err)
	}
	var data struct {
		Message string `json:"message"`
	}
	if re.Data != nil {
		_ = json.Unmarshal(*re.Data, &data)
	}
	for _, want := range []string{"dsh-acp login", "DSH_API_KEY"} {
		if !strings.Contains(data.Message, want) {
			t.Errorf("the auth-required error's message does not mention %s: %q", want, data.Message)
		}
	}
}

// loginInTerminal runs `dsh-acp login` on a pseudo-terminal, answering its
// questions, and returns its exit code and everything the terminal showed.
func loginInTerminal(t *testing.T, cfgHome, baseURL, key string) (int, string) {
	t.Helper()
	p := acptest.StartPTY(t, acptest.BuildBinary(t), []string{"login"},
		[]string{"XDG_CONFIG_HOME=" + cfgHome, "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "DSH_BASE_URL=", "DSH_MODEL="})
	ctx := ctxT(t)
	for _, step := range []struct{ prompt, answer string }{
		{"Base URL [https://api.deepseek.com]: ", baseURL + "\n"},
		{"Model [deepseek-flash]: ", "\n"},
		{"API key (typing is hidden): ", key + "\n"},
	} {
		if err := p.Expect(ctx, step.prompt); err != nil {
			t.Fatalf("login: %v\n%s", err, p.Output())
		}
		p.Type(step.answer)
	}
	code, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.WaitClosed()
	return code, p.Output()
}

// `dsh-acp login` in a terminal checks the key with the provider and stores
// it 0600 without ever showing it; a new daemon then answers model prompts
// with it, and neither its stderr nor its log holds the key.
func TestLoginInATerminalThenTheDaemonAnswers(t *testing.T) {
	prov := newProvider(t, llmtest.Reply("logged in and answering"))
	cfgHome := t.TempDir()
	code, shown := loginInTerminal(t, cfgHome, prov.URL, prov.key)
	if code != 0 || !strings.Contains(shown, "Logged in") {
		t.Fatalf("login exited %d:\n%s", code, shown)
	}
	if strings.Contains(shown, prov.key) {
		t.Errorf("the terminal showed the key:\n%s", shown)
	}
	dir := filepath.Join(cfgHome, "dsh-acp")
	assertPerm(t, dir, 0o700)
	assertPerm(t, filepath.Join(dir, "credentials"), 0o600)

	logFile := filepath.Join(t.TempDir(), "daemon.log")
	d := startDaemon(t, acptest.ZedCapabilities(), nil, "XDG_CONFIG_HOME="+cfgHome, "DSH_LOG_FILE="+logFile, "DSH_BASE_URL=", "DSH_MODEL=")
	sid := d.newSession(t.TempDir())
	if got := d.prompt(sid, "hello"); got != "end_turn" {
		t.Fatalf("prompt: stopReason %q", got)
	}
	if d.count(sid, "agent_message_chunk", "logged in and answering") == 0 {
		t.Errorf("no answer from the model; updates: %s", d.Updates(sid))
	}
	if got := prov.llm.Last().Header.Get("Authorization"); got != "Bearer "+prov.key {
		t.Errorf("the model request's Authorization is %q", got)
	}
	d.closeAndWait()
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), `"keySource":"stored"`) {
		t.Errorf("the log does not say the key came from the store:\n%s", logged)
	}
	if strings.Contains(string(logged), prov.key) || strings.Contains(d.Stderr(), prov.key) {
		t.Error("the key is in the daemon's log or stderr")
	}
}

func assertPerm(t *testing.T, p string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %04o, want %04o", p, fi.Mode().Perm(), want)
	}
}

func TestLoginRejectsAWrongKey(t *testing.T) {
	prov := newProvider(t)
	cfgHome := t.TempDir()
	wrong := llmNewKey()
	code, shown := loginInTerminal(t, cfgHome, prov.URL, wrong)
	if code == 0 {
		t.Fatalf("login with a wrong key exited 0:\n%s", shown)
	}
	if !strings.Contains(shown, "the provider refused the key (HTTP 401)") {
		t.Errorf("no clear refusal:\n%s", shown)
	}
	if strings.Contains(shown, wrong) {
		t.Errorf("the terminal showed the key:\n%s", shown)
	}
	if _, err := os.Lstat(filepath.Join(cfgHome, "dsh-acp", "credentials")); !os.IsNotExist(err) {
		t.Errorf("a refused key was stored (%v)", err)
	}
}

// runCLI runs the daemon binary with args and stdin, in cfgHome.
func runCLI(t *testing.T, cfgHome, stdin string, args []string, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(acptest.BuildBinary(t), args...)
	cmd.Env = append(os.Environ(), append([]string{"XDG_CONFIG_HOME=" + cfgHome, "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "DSH_MODEL="}, env...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// A running daemon follows login and logout without a restart: the key
// stored by `dsh-acp login` is used by the next prompt (and authenticate
// with the terminal method confirms it), ACP logout removes it, and
// `dsh-acp logout` does the same from a terminal.
func TestRunningDaemonFollowsLoginAndLogout(t *testing.T) {
	prov := newProvider(t, llmtest.Reply("first answer"))
	cfgHome := t.TempDir()
	caps := acptest.ZedCapabilities()
	caps["auth"] = map[string]any{"terminal": true}
	d := startDaemon(t, caps, nil, "XDG_CONFIG_HOME="+cfgHome, "DSH_BASE_URL=", "DSH_MODEL=")
	sid := d.newSession(t.TempDir())
	assertAuthRequired(t, d, sid)
	if err := d.Call(ctxT(t), "authenticate", map[string]any{"methodId": "dsh-acp-login"}, nil); rpcCode(err) != -32000 {
		t.Errorf("authenticate before login: %v, want auth-required", err)
	}

	// The key on stdin (not a terminal), the endpoint from the environment.
	if code, out := runCLI(t, cfgHome, prov.key+"\n", []string{"--base-url", prov.URL, "login"}); code != 0 {
		t.Fatalf("login exited %d: %s", code, out)
	} else if strings.Contains(out, prov.key) {
		t.Errorf("login printed the key: %s", out)
	}
	if err := d.Call(ctxT(t), "authenticate", map[string]any{"methodId": "dsh-acp-login"}, nil); err != nil {
		t.Fatalf("authenticate after login: %v", err)
	}
	if got := d.prompt(sid, "hello"); got != "end_turn" || d.count(sid, "agent_message_chunk", "first answer") == 0 {
		t.Fatalf("prompt after login: %q", got)
	}

	if err := d.Call(ctxT(t), "logout", map[string]any{}, nil); err != nil {
		t.Fatalf("ACP logout: %v", err)
	}
	cred := filepath.Join(cfgHome, "dsh-acp", "credentials")
	if _, err := os.Lstat(cred); !os.IsNotExist(err) {
		t.Errorf("ACP logout left the credential (%v)", err)
	}
	assertAuthRequired(t, d, sid)

	if code, out := runCLI(t, cfgHome, prov.key+"\n", []string{"login", "--base-url", prov.URL}); code != 0 {
		t.Fatalf("second login exited %d: %s", code, out)
	}
	if code, out := runCLI(t, cfgHome, "", []string{"logout"}); code != 0 || !strings.Contains(out, "Logged out") {
		t.Fatalf("dsh-acp logout exited %d: %s", code, out)
	}
	if _, err := os.Lstat(cred); !os.IsNotExist(err) {
		t.Errorf("dsh-acp logout left the credential (%v)", err)
	}
	assertAuthRequired(t, d, sid)
	if code, out := runCLI(t, cfgHome, "", []string{"logout"}); code != 0 || !strings.Contains(out, "Not logged in") {
		t.Errorf("logout with nothing stored exited %d: %s", code, out)
	}
}

// An explicit endpoint other than the stored one sets the stored key aside:
// it is never sent to another host.
func TestStoredKeyIsNotSentToAnotherEndpoint(t *testing.T) {
	prov := newProvider(t)
	other := newProvider(t)
	cfgHome := t.TempDir()
	if code, out := runCLI(t, cfgHome, prov.key+"\n", []string{"login", "--base-url", prov.URL}); code != 0 {
		t.Fatalf("login exited %d: %s", code, out)
	}
	d := startDaemon(t, acptest.ZedCapabilities(), nil, "XDG_CONFIG_HOME="+cfgHome, "DSH_BASE_URL="+other.URL)
	sid := d.newSession(t.TempDir())
	assertAuthRequired(t, d, sid)
	if n := len(other.llm.Requests()); n != 0 {
		t.Errorf("%d requests reached the other endpoint", n)
	}
}
