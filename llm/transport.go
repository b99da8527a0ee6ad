package llm

import (
	"io"
	"net/http"
	"time"
)

// maxErrorBody caps how much of a failed response's body is read.
const maxErrorBody = 64 << 10

// statusDoer is the HTTP client go-openai calls. It turns a failed HTTP
// status into an *Error right here, where the response headers (Retry-After)
// are still at hand; go-openai returns a Doer's error unchanged.
type statusDoer struct {
	client *http.Client
	now    func() time.Time
}

func (d statusDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	return nil, statusError(resp, body, d.now())
}
