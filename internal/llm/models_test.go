package llm_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

func modelIDs(ms []llm.Model) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// The list is fetched once and cached; a caller changing its copy does not
// change the cache.
func TestListModelsCached(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetModels("deepseek-v4-flash", "deepseek-v4-pro")
	c := newClient(t, srv, &sleeps{})
	for range 3 {
		ms, err := c.ListModels(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := modelIDs(ms); !reflect.DeepEqual(got, []string{"deepseek-v4-flash", "deepseek-v4-pro"}) {
			t.Fatalf("models %v", got)
		}
		if ms[0].OwnedBy != "llmtest" {
			t.Errorf("owned by %q", ms[0].OwnedBy)
		}
		ms[0].ID = "changed"
	}
	if n := srv.ModelsRequests(); n != 1 {
		t.Errorf("%d models requests, want 1", n)
	}
}

// Concurrent first calls share one request.
func TestListModelsConcurrent(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetModels("m")
	c := newClient(t, srv, &sleeps{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if ms, err := c.ListModels(t.Context()); err != nil || len(ms) != 1 {
				t.Errorf("%v %v", ms, err)
			}
		})
	}
	wg.Wait()
	if n := srv.ModelsRequests(); n != 1 {
		t.Errorf("%d models requests, want 1", n)
	}
}

// A failure is returned, classified, and not cached: the next call asks
// again.
func TestListModelsFailures(t *testing.T) {
	tests := []struct {
		name     string
		fail     *llmtest.Response // nil: SetModels never called (404)
		wantKind error
		wantText string
	}{
		{"no models endpoint", nil, llm.ErrEndpoint,
			"the base URL does not point at an OpenAI-compatible API (HTTP 404): llmtest: no models configured (GET SRV/models)"},
		{"server error", &llmtest.Response{Status: 500}, llm.ErrServer, "(HTTP 500)"},
		{"bad key", &llmtest.Response{Status: 401}, llm.ErrAuth, "(HTTP 401)"},
		{"not JSON", &llmtest.Response{Body: "<html>welcome</html>"}, llm.ErrEndpoint, "the answer is not a models list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			if tt.fail != nil {
				srv.FailModels(*tt.fail)
			}
			c := newClient(t, srv, &sleeps{})
			_, err := c.ListModels(t.Context())
			want := strings.ReplaceAll(tt.wantText, "SRV", srv.URL())
			if !errors.Is(err, tt.wantKind) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant kind %v containing %s", err, tt.wantKind, want)
			}
			srv.SetModels("after")
			ms, err := c.ListModels(t.Context())
			if err != nil || !reflect.DeepEqual(modelIDs(ms), []string{"after"}) {
				t.Errorf("after the failure: %v %v", ms, err)
			}
			if n := srv.ModelsRequests(); n != 2 {
				t.Errorf("%d models requests, want 2", n)
			}
		})
	}
}

// A provider that never answers the models request is given up on after
// the bound.
func TestListModelsTimeout(t *testing.T) {
	srv := llmtest.New(t)
	srv.FailModels(llmtest.Response{Delay: time.Hour})
	c := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: testKey, ModelsTimeout: 50 * time.Millisecond})
	_, err := c.ListModels(t.Context())
	if !errors.Is(err, llm.ErrConnection) || !strings.Contains(err.Error(), "no models list within 50ms (GET "+srv.URL()+"/models)") {
		t.Fatalf("err = %v", err)
	}
}

// The caller's own cancel is reported as such.
func TestListModelsCanceled(t *testing.T) {
	srv := llmtest.New(t)
	srv.FailModels(llmtest.Response{Delay: time.Hour})
	c := newClient(t, srv, &sleeps{})
	ctx, cancel := context.WithCancel(t.Context())
	arrived := srv.Arrived()
	go func() {
		<-arrived
		cancel()
	}()
	if _, err := c.ListModels(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
