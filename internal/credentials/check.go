package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// HTTPError is a non-2xx answer to GET /models. Detail is the provider's
// message, shortened and scrubbed of the key.
type HTTPError struct {
	Status int
	Detail string
}

func (e *HTTPError) Error() string {
	var msg string
	switch {
	case e.Refused():
		msg = fmt.Sprintf("the provider refused the key (HTTP %d)", e.Status)
	case e.NoEndpoint():
		msg = fmt.Sprintf("the provider has no GET /models endpoint (HTTP %d), so the key cannot be checked", e.Status)
	default:
		msg = fmt.Sprintf("the provider answered HTTP %d to GET /models", e.Status)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Refused reports that the provider turned the key down (401 or 403).
func (e *HTTPError) Refused() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
}

// NoEndpoint reports that the provider does not serve GET /models.
func (e *HTTPError) NoEndpoint() bool {
	return e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed
}

// CheckTimeout bounds Check when ctx has no earlier deadline.
const CheckTimeout = 30 * time.Second

// Check asks the provider at c.BaseURL for its models with c.APIKey: the
// model ids on success, an *HTTPError for a non-2xx answer, another error
// when the provider cannot be reached. No error holds the key. client nil
// means http.DefaultClient.
func Check(ctx context.Context, client *http.Client, c Credential) ([]string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+"/models", nil)
	if err != nil {
		return nil, scrub(fmt.Errorf("check the key: %w", err), c.APIKey)
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, scrub(fmt.Errorf("check the key: %w", err), c.APIKey)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, scrub(fmt.Errorf("check the key: reading the answer: %w", err), c.APIKey)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &HTTPError{Status: resp.StatusCode, Detail: detail(body, c.APIKey)}
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("check the key: the provider's GET /models answer is not a model list: %w", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// detail is the provider's error message: the OpenAI-style error.message
// when there is one, else the body's start, on one line, without the key.
func detail(body []byte, key string) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	text := string(body)
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		text = e.Error.Message
	}
	text = strings.Join(strings.Fields(Redact(text, key)), " ")
	if r := []rune(text); len(r) > 200 {
		text = string(r[:200]) + "…"
	}
	return text
}

// Redact replaces every occurrence of key in s (and of its longer
// prefixes, which providers print as "sk-abc…") with [redacted].
func Redact(s, key string) string {
	if key == "" {
		return s
	}
	s = strings.ReplaceAll(s, key, "[redacted]")
	// A provider may echo a shortened key; hide any run of 8 or more of its
	// leading characters.
	for n := len(key) - 1; n >= 8; n-- {
		s = strings.ReplaceAll(s, key[:n], "[redacted]")
	}
	return s
}

// scrubbed is an error whose text had the key removed. It does not unwrap
// (the wrapped error's text holds the key) but still answers errors.Is, so
// a cancelled context stays recognisable.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string        { return e.msg }
func (e *scrubbed) Is(target error) bool { return errors.Is(e.err, target) }

func scrub(err error, key string) error {
	if err == nil || key == "" || !strings.Contains(err.Error(), key[:min(len(key), 8)]) {
		return err
	}
	return &scrubbed{msg: Redact(err.Error(), key), err: err}
}
