package llm

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ValidateBaseURL checks that raw can be an API root: an http or https URL
// with a host, not already ending in the chat endpoint. It returns nil or an
// *Error of kind ErrBaseURL whose text says what is wrong and, where it can
// guess, what was meant:
//
//	the model provider's base URL is invalid: "api.deepseek.com" has no scheme; write "https://api.deepseek.com"
//	the model provider's base URL is invalid: "htp://x" has the unknown scheme "htp"; use https:// (or http:// for a local server)
func ValidateBaseURL(raw string) error {
	if err := checkBaseURL(raw); err != "" {
		return &Error{Kind: ErrBaseURL, Detail: err}
	}
	return nil
}

// checkBaseURL returns what is wrong with raw, "" when nothing.
func checkBaseURL(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return "it is empty"
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, " \t\r\n") {
		return fmt.Sprintf("%q contains white space", raw)
	}
	if !strings.Contains(raw, "://") {
		return fmt.Sprintf("%q has no scheme; write %q", raw, guessScheme(raw)+raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Sprintf("%q cannot be parsed (%s)", raw, parseProblem(err))
	}
	shown := raw
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" { // never echo credentials
		bare := *u
		bare.RawQuery, bare.Fragment, bare.ForceQuery = "", "", false
		shown = bare.Redacted()
	}
	switch scheme := strings.ToLower(u.Scheme); {
	case scheme != "http" && scheme != "https":
		return fmt.Sprintf("%q has the unknown scheme %q; use https:// (or http:// for a local server)", shown, u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Sprintf("%q has no host", shown)
	case u.Port() != "" && !validPort(u.Port()):
		return fmt.Sprintf("%q has the invalid port %s", shown, u.Port())
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Sprintf("%q has a query or fragment (left out here); the base URL is the API root only", shown)
	case strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/chat/completions"):
		root := *u
		root.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/chat/completions")
		return fmt.Sprintf("%q is the chat endpoint, not the API root; write %q", shown, root.Redacted())
	}
	return ""
}

// guessScheme is the scheme a schemeless address most likely wants: http
// for a local server, https for everything else.
func guessScheme(raw string) string {
	host := raw
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "http://"
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || ip.IsPrivate()) {
		return "http://"
	}
	return "https://"
}

// parseProblem is url.Parse's complaint without its repetition of the URL.
func parseProblem(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}
