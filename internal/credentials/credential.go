package credentials

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// Credential is an API key with the endpoint it belongs to and the model to
// ask for. Its String and GoString never show the key.
type Credential struct {
	APIKey  string `json:"apiKey"`
	BaseURL string `json:"baseURL"`
	Model   string `json:"model,omitempty"`
}

// String describes c without its key.
func (c Credential) String() string {
	key := "none"
	if c.APIKey != "" {
		key = "[redacted]"
	}
	return fmt.Sprintf("credential{key: %s, baseURL: %q, model: %q}", key, c.BaseURL, c.Model)
}

// GoString is String, so %#v does not show the key either.
func (c Credential) GoString() string { return c.String() }

// Validate checks that c can be used: a key of printable, non-space
// characters and an absolute http(s) base URL. The model may be empty (the
// daemon's default applies).
func (c Credential) Validate() error {
	var errs []error
	if err := ValidateKey(c.APIKey); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateBaseURL(c.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if strings.ContainsFunc(c.Model, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		errs = append(errs, fmt.Errorf("model %q has spaces or control characters", c.Model))
	}
	return errors.Join(errs...)
}

// ValidateKey checks a key's form; its error never contains the key.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return errors.New("the API key is empty")
	case len(key) > 4096:
		return errors.New("the API key is longer than 4096 bytes")
	case strings.ContainsFunc(key, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsPrint(r) || r == ' ' }):
		return errors.New("the API key has spaces, control or non-ASCII characters")
	}
	return nil
}

// ValidateBaseURL checks that u is an absolute http or https URL with a host
// and no credentials, query or fragment.
func ValidateBaseURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return fmt.Errorf("base URL %q: %w", u, err)
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("base URL %q: want an http:// or https:// URL", u)
	case p.Host == "":
		return fmt.Errorf("base URL %q has no host", u)
	case p.User != nil:
		return fmt.Errorf("base URL %q must not hold a user or password", p.Redacted())
	case p.RawQuery != "" || p.Fragment != "":
		return fmt.Errorf("base URL %q must not have a query or fragment", u)
	}
	return nil
}

// SameBaseURL reports whether a and b name the same endpoint, ignoring a
// trailing slash and the case of scheme and host.
func SameBaseURL(a, b string) bool { return normalizeURL(a) == normalizeURL(b) }

func normalizeURL(u string) string {
	p, err := url.Parse(strings.TrimRight(u, "/"))
	if err != nil {
		return u
	}
	p.Scheme, p.Host = strings.ToLower(p.Scheme), strings.ToLower(p.Host)
	return p.String()
}
