package credentials

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeProvider serves GET /v1/models to the key good, and 401 (echoing the
// key, as some providers do) to any other.
func fakeProvider(t *testing.T, good string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key != good {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + key + ` (also ` + key[:10] + `…)","type":"invalid_request_error"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m1","object":"model"},{"id":"m2","object":"model"}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCheck(t *testing.T) {
	srv := fakeProvider(t, testKey)
	ctx := context.Background()

	models, err := Check(ctx, srv.Client(), Credential{APIKey: testKey, BaseURL: srv.URL + "/v1/"})
	if err != nil || strings.Join(models, ",") != "m1,m2" {
		t.Fatalf("Check = %v, %v", models, err)
	}

	wrong := "sk-wrong-key-1234567890"
	_, err = Check(ctx, srv.Client(), Credential{APIKey: wrong, BaseURL: srv.URL + "/v1"})
	var he *HTTPError
	if !errors.As(err, &he) || !he.Refused() {
		t.Fatalf("Check with a wrong key = %v, want a refusal", err)
	}
	if !strings.HasPrefix(err.Error(), "the provider refused the key (HTTP 401)") {
		t.Errorf("message %q", err)
	}
	if strings.Contains(err.Error(), wrong[:10]) || !strings.Contains(err.Error(), "Incorrect API key provided") {
		t.Errorf("message %q: want the provider's words without the key", err)
	}

	_, err = Check(ctx, srv.Client(), Credential{APIKey: testKey, BaseURL: srv.URL + "/other"})
	if !errors.As(err, &he) || !he.NoEndpoint() || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("Check without a models endpoint = %v", err)
	}

	srv.Close()
	_, err = Check(ctx, nil, Credential{APIKey: testKey, BaseURL: srv.URL + "/v1"})
	if err == nil || errors.As(err, &he) || strings.Contains(err.Error(), testKey) {
		t.Errorf("Check of a closed server = %v", err)
	}
}

func TestCheckCancelled(t *testing.T) {
	srv := fakeProvider(t, testKey)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Check(ctx, srv.Client(), Credential{APIKey: testKey, BaseURL: srv.URL + "/v1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Check on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, key, want string }{
		{"key sk-abcdefghijkl here", "sk-abcdefghijkl", "key [redacted] here"},
		{"shortened sk-abcdefgh… here", "sk-abcdefghijkl", "shortened [redacted]… here"},
		{"short prefix sk-abc stays", "sk-abcdefghijkl", "short prefix sk-abc stays"},
		{"no key", "", "no key"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in, tt.key); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestScrubbedErrorHidesTheKey(t *testing.T) {
	base := errors.New("dial https://user:" + testKey + "@host failed")
	err := scrub(base, testKey)
	if strings.Contains(err.Error(), testKey) || errors.Unwrap(err) != nil {
		t.Errorf("scrubbed error %q (unwraps to %v)", err, errors.Unwrap(err))
	}
	if !errors.Is(err, base) {
		t.Error("the scrubbed error lost its identity for errors.Is")
	}
}
