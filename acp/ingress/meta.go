package ingress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// metaKey is the member ACP reserves for metadata.
const metaKey = "_meta"

// SetMeta returns params (a JSON object) with one _meta entry set: key to
// value, a JSON value. Every other member is kept, in order and as written;
// the _meta entries the client sent are kept too, except one named key,
// which value replaces. The result has a single _meta member holding what
// encoding/json would have decoded from params' _meta members — it matches
// member names case-insensitively, merges repeated _meta objects into one
// map and resets it on a null — plus key, so a struct field tagged "_meta"
// decodes the result to the client's metadata and key, and a client cannot
// smuggle its own value for key past SetMeta. It fails when params is not a
// JSON object, a _meta member is neither an object nor null, or value is not
// JSON.
func SetMeta(params json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	if !json.Valid(value) {
		return nil, errors.New("ingress: set meta: value is not JSON")
	}
	if !json.Valid(params) {
		return nil, errors.New("ingress: set meta: params is not JSON")
	}
	if out, ok := appendMeta(params, key, value); ok {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("ingress: set meta: params is not a JSON object")
	}
	out := make([]byte, 0, len(params)+len(key)+len(value)+16)
	out = append(out, '{')
	var meta map[string]json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("ingress: set meta: %w", err)
		}
		name, _ := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("ingress: set meta: member %q: %w", name, err)
		}
		if strings.EqualFold(name, metaKey) {
			if meta, err = mergeMeta(meta, v); err != nil {
				return nil, err
			}
			continue
		}
		k, err := json.Marshal(name)
		if err != nil {
			return nil, fmt.Errorf("ingress: set meta: member %q: %w", name, err)
		}
		out = append(append(append(out, k...), ':'), v...)
		out = append(out, ',')
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("ingress: set meta: %w", err)
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[key] = value
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("ingress: set meta: %w", err)
	}
	out = append(append(out, `"_meta":`...), m...)
	return append(out, '}'), nil
}

// appendMeta is SetMeta's fast path, for the common params with no _meta
// member (a prompt as editors send it): the _meta member is appended to
// the object as written. ok is false when params (valid JSON) is not an
// object, or when one of its member names might decode to _meta in any
// case: when it holds "meta" in any case, or an escape "\u00" that could
// spell one of its letters.
func appendMeta(params json.RawMessage, key string, value json.RawMessage) ([]byte, bool) {
	body := bytes.TrimRight(params, " \t\r\n")
	lead := len(params) - len(bytes.TrimLeft(params, " \t\r\n"))
	if len(body) < 2 || lead >= len(body) || body[lead] != '{' || body[len(body)-1] != '}' || mayNameMeta(params) {
		return nil, false
	}
	k, err := json.Marshal(key)
	if err != nil {
		return nil, false
	}
	body = body[:len(body)-1]
	out := make([]byte, 0, len(body)+len(k)+len(value)+16)
	out = append(out, body...)
	if inner := bytes.TrimRight(body[lead+1:], " \t\r\n"); len(inner) > 0 {
		out = append(out, ',')
	}
	out = append(append(out, `"_meta":{`...), k...)
	out = append(append(append(out, ':'), value...), "}}"...)
	return out, true
}

// mayNameMeta reports whether b holds "meta" in any case or "\u00".
func mayNameMeta(b []byte) bool {
	for i := 0; i+3 < len(b); i++ {
		switch c := b[i] | 0x20; {
		case c == 'm' && b[i+1]|0x20 == 'e' && b[i+2]|0x20 == 't' && b[i+3]|0x20 == 'a':
			return true
		case b[i] == '\\' && b[i+1] == 'u' && b[i+2] == '0' && b[i+3] == '0':
			return true
		}
	}
	return false
}

// mergeMeta folds one _meta member into meta as encoding/json decodes a
// repeated member into a map: null resets it, an object's entries are set
// over the existing ones.
func mergeMeta(meta map[string]json.RawMessage, v json.RawMessage) (map[string]json.RawMessage, error) {
	if string(v) == "null" {
		return nil, nil
	}
	if len(v) == 0 || v[0] != '{' {
		return nil, errors.New("ingress: set meta: _meta is not an object")
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(v, &entries); err != nil {
		return nil, fmt.Errorf("ingress: set meta: _meta: %w", err)
	}
	if meta == nil {
		meta = make(map[string]json.RawMessage, len(entries)+1)
	}
	for k, e := range entries {
		meta[k] = e
	}
	return meta, nil
}
