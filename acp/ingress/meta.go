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
