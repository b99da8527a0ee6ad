package llm_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// DeepSeek's error answers, through the client, each get a sentence that
// says what happened and the fix.
func TestAdviceForDeepSeekErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		resp llmtest.Response
		want []string // parts of the sentence
	}{
		{"401", llmtest.Error(http.StatusUnauthorized, "Authentication Fails, Your api key: ****abcd is invalid"),
			[]string{"HTTP 401", "DSH_API_KEY", "dsh-acp login"}},
		{"403", llmtest.Error(http.StatusForbidden, "forbidden"), []string{"HTTP 403", "another key"}},
		{"402", llmtest.Error(http.StatusPaymentRequired, "Insufficient Balance"), []string{"HTTP 402", "Top it up"}},
		{"400 model", llmtest.ModelNotExist(), []string{`the model "deepseek-flash"`, "HTTP 400", "/model", "DSH_MODEL"}},
		{"404 model", llmtest.Error(http.StatusNotFound, "The model `deepseek-flash` does not exist"), []string{`the model "deepseek-flash"`, "HTTP 404"}},
		{"404 path", llmtest.Error(http.StatusNotFound, "page not found"), []string{"HTTP 404", "DSH_BASE_URL", llm.DefaultBaseURL}},
		{"422", llmtest.Error(http.StatusUnprocessableEntity, "Invalid max_tokens value"), []string{"HTTP 422", "parameter"}},
		{"lost reasoning", llmtest.Error(http.StatusBadRequest, llmtest.MissingReasoningMessage), []string{"reasoning", "new session", "thinking off"}},
		{"tool_choice", llmtest.Error(http.StatusBadRequest, llmtest.ToolChoiceMessage), []string{"tool_choice", "thinking off"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.resp)
			_, err := deepseekClient(srv, "").Stream(t.Context(), simpleRequest(), nil)
			if err == nil {
				t.Fatal("no error")
			}
			advice := llm.Advice(err)
			for _, w := range tt.want {
				if !strings.Contains(advice, w) {
					t.Errorf("advice %q lacks %q (error: %v)", advice, w, err)
				}
			}
		})
	}
}

// The DeepSeek pages are named only when the request went to DeepSeek.
func TestAdviceNamesDeepSeekPagesForDeepSeek(t *testing.T) {
	e := &llm.Error{Kind: llm.ErrBalance, Status: 402, URL: "POST https://api.deepseek.com/chat/completions"}
	if a := llm.Advice(e); !strings.Contains(a, "https://platform.deepseek.com/top_up") {
		t.Errorf("DeepSeek 402: %q", a)
	}
	e.URL = "POST https://example.test/v1/chat/completions"
	if a := llm.Advice(e); strings.Contains(a, "deepseek") || !strings.Contains(a, "Top it up") {
		t.Errorf("other provider's 402: %q", a)
	}
	e = &llm.Error{Kind: llm.ErrAuth, Status: 401, URL: "POST https://api.deepseek.com/chat/completions"}
	if a := llm.Advice(e); !strings.Contains(a, "https://platform.deepseek.com/api_keys") {
		t.Errorf("DeepSeek 401: %q", a)
	}
	if a := llm.Advice(errors.New("plain")); a != "" {
		t.Errorf("advice for a non-llm error: %q", a)
	}
	if a := llm.Advice(&llm.Error{Kind: llm.ErrServer, Status: 503}); a != "" {
		t.Errorf("advice for a kind the caller words itself: %q", a)
	}
}

func TestCheckModel(t *testing.T) {
	list := []llm.Model{{ID: "deepseek-flash"}, {ID: "deepseek-v4-pro"}, {ID: "deepseek-flash"}, {ID: ""}}
	c := llm.CheckModel(list, "deepseek-v4-pro")
	if !c.Served || !c.Listed || c.Problem() != "" || strings.Join(c.Models, ",") != "deepseek-flash,deepseek-v4-pro" {
		t.Errorf("served model: %+v, problem %q", c, c.Problem())
	}
	c = llm.CheckModel(list, "deepseek-chat")
	p := c.Problem()
	if c.Served || c.Suggest != "" || !strings.Contains(p, `"deepseek-chat"`) || !strings.Contains(p, "deepseek-flash, deepseek-v4-pro") ||
		!strings.Contains(p, "/model") || !strings.Contains(p, "DSH_MODEL") {
		t.Errorf("unlisted model: %+v, problem %q", c, p)
	}
	c = llm.CheckModel(list, " DeepSeek-Flash")
	if c.Served || c.Suggest != "deepseek-flash" || !strings.Contains(c.Problem(), `Did you mean "deepseek-flash"?`) {
		t.Errorf("model in another case: %+v, problem %q", c, c.Problem())
	}
	c = llm.CheckModel(nil, "anything")
	if !c.Served || c.Listed || c.Problem() != "" {
		t.Errorf("no list: %+v", c)
	}
}

// The check reads the list ListModels fetched (the one the model option
// is built from): one request, however often it is checked.
func TestCheckModelAgainstTheProvidersList(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetModels("deepseek-flash", "deepseek-v4-pro")
	c := newClient(t, srv, &sleeps{})
	for _, model := range []string{"deepseek-flash", "deepseek-reasoner"} {
		models, err := c.ListModels(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := llm.CheckModel(models, model); got.Served != (model == "deepseek-flash") {
			t.Errorf("%s: served %v", model, got.Served)
		}
	}
	if n := srv.ModelsRequests(); n != 1 {
		t.Errorf("%d models requests, want 1", n)
	}
}

// CheckModel's contract for any list: served exactly when listed (or when
// there is no list), a problem exactly when not served, each id once.
func FuzzCheckModel(f *testing.F) {
	f.Add("deepseek-flash,deepseek-v4-pro", "deepseek-flash")
	f.Add("a,A,,a", "a ")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, ids, model string) {
		var list []llm.Model
		for _, id := range strings.Split(ids, ",") {
			list = append(list, llm.Model{ID: id})
		}
		c := llm.CheckModel(list, model)
		listed := false
		for _, m := range list {
			listed = listed || (m.ID == model && m.ID != "")
		}
		if c.Served != (listed || !c.Listed) || (c.Problem() == "") != c.Served {
			t.Fatalf("%q in %q: %+v, problem %q", model, ids, c, c.Problem())
		}
		seen := map[string]bool{}
		for _, id := range c.Models {
			if seen[id] || id == "" {
				t.Fatalf("models %q", c.Models)
			}
			seen[id] = true
		}
	})
}
