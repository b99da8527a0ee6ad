package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// errArgs is wrapped by every argument decoding error.
var errArgs = errors.New("invalid arguments")

// fields is a call's arguments as a JSON object. Tools read it field by
// field, by name, so keys a tool does not define (env, stdin, …) are never
// read, and a wrong type is reported with the field's name.
type fields map[string]json.RawMessage

// parseFields decodes args as a JSON object. Empty args and null are an
// empty object (so a required field is reported missing).
func parseFields(args json.RawMessage) (fields, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return fields{}, nil
	}
	var f fields
	err := json.Unmarshal(trimmed, &f)
	if err == nil {
		return f, nil
	}
	// Unmarshal validates the whole input first: a syntax error means it
	// is not JSON at all, anything else that it is not an object.
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return nil, fmt.Errorf("%w: not valid JSON (%w)", errArgs, err)
	}
	return nil, fmt.Errorf("%w: expected a JSON object, got %s", errArgs, jsonType(trimmed))
}

// raw returns the field's value; absent and null are both absent.
func (f fields) raw(name string) (json.RawMessage, bool) {
	v, ok := f[name]
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, false
	}
	return v, true
}

func (f fields) typeError(name, want string) error {
	v, _ := f.raw(name)
	return fmt.Errorf("%w: %q must be %s, got %s", errArgs, name, want, jsonType(v))
}

// str reads a string field. A missing required field is an error.
func (f fields) str(name string, required bool) (string, error) {
	v, ok := f.raw(name)
	if !ok {
		if required {
			return "", fmt.Errorf("%w: missing required field %q", errArgs, name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", f.typeError(name, "a string")
	}
	return s, nil
}

// number reads an optional number field; ok is false when it is absent.
func (f fields) number(name string) (n float64, ok bool, err error) {
	v, ok := f.raw(name)
	if !ok {
		return 0, false, nil
	}
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, false, f.typeError(name, "a number")
	}
	return n, true, nil
}

// boolean reads an optional boolean field (absent is false).
func (f fields) boolean(name string) (bool, error) {
	v, ok := f.raw(name)
	if !ok {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, f.typeError(name, "a boolean")
	}
	return b, nil
}

// jsonType names the JSON type of a valid JSON value, for error texts.
func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// bashArgs are the bash tool's arguments. It is also the card's rawInput,
// so it shows exactly the fields the tool uses.
type bashArgs struct {
	Command         string `json:"command"`
	Description     string `json:"description,omitempty"`
	TimeoutMs       int64  `json:"timeoutMs,omitempty"`
	Workdir         string `json:"workdir,omitempty"`
	RunInBackground bool   `json:"run_in_background,omitempty"`
}

// maxTimeoutMs keeps a timeout in milliseconds convertible to a Duration.
const maxTimeoutMs = math.MaxInt64 / int64(time.Millisecond)

// decodeBashArgs reads bash's named fields. A missing description is
// accepted (it only labels the card); a wrong type of any field is not.
func decodeBashArgs(args json.RawMessage) (bashArgs, error) {
	f, err := parseFields(args)
	if err != nil {
		return bashArgs{}, err
	}
	var a bashArgs
	if a.Command, err = f.str("command", true); err != nil {
		return bashArgs{}, err
	}
	if strings.TrimSpace(a.Command) == "" {
		return bashArgs{}, fmt.Errorf("%w: %q must not be empty", errArgs, "command")
	}
	if a.Description, err = f.str("description", false); err != nil {
		return bashArgs{}, err
	}
	if a.Workdir, err = f.str("workdir", false); err != nil {
		return bashArgs{}, err
	}
	if a.RunInBackground, err = f.boolean("run_in_background"); err != nil {
		return bashArgs{}, err
	}
	ms, ok, err := f.number("timeoutMs")
	if err != nil {
		return bashArgs{}, err
	}
	if ok {
		if ms < 0 {
			return bashArgs{}, fmt.Errorf("%w: %q must not be negative", errArgs, "timeoutMs")
		}
		a.TimeoutMs = int64(math.Min(math.Floor(ms), float64(maxTimeoutMs)))
	}
	return a, nil
}

// timeout is the requested timeout; zero means the executor's default.
func (a bashArgs) timeout() time.Duration {
	return time.Duration(a.TimeoutMs) * time.Millisecond
}

// decodeTaskID reads the task_id argument of bash_output and bash_kill.
func decodeTaskID(args json.RawMessage) (string, error) {
	f, err := parseFields(args)
	if err != nil {
		return "", err
	}
	id, err := f.str("task_id", true)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("%w: %q must not be empty", errArgs, "task_id")
	}
	return id, nil
}
