package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// header holds the members of a message. It is the line's one decode: the
// params are kept raw for the handler, which decodes them once.
type header struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  presence        `json:"result"`
	Error   presence        `json:"error"`
}

// presence records that a member was present without keeping its value.
type presence bool

// UnmarshalJSON implements json.Unmarshaler.
func (p *presence) UnmarshalJSON([]byte) error {
	*p = true
	return nil
}

// message is one valid inbound JSON-RPC message. A request has Method and
// ID; a notification has Method and a nil ID (an explicit "id":null counts
// as a notification); a response to one of the daemon's own requests has
// an empty Method and its ID.
type message struct {
	Method string
	ID     json.RawMessage // a JSON string (valid UTF-8) or number as on the wire
	Params json.RawMessage // as on the wire; nil when absent
}

func (m message) isResponse() bool     { return m.Method == "" }
func (m message) isNotification() bool { return m.Method != "" && m.ID == nil }

// classified is a valid line: a message to take, or a response dropped
// without a reply.
type classified struct {
	message
	dropped string // non-empty: the response is dropped, for this reason
}

// rejection is an invalid line and the error reply it gets.
type rejection struct {
	code   int
	reason string
	id     json.RawMessage // echoed id; nil means null
	limit  int             // the line cap, for an over-long line
}

// idKind classifies an id member.
type idKind int

const (
	idAbsent idKind = iota
	idNull
	idValid // a string or a number
	idInvalid
)

func kindOfID(raw json.RawMessage) idKind {
	switch {
	case raw == nil:
		return idAbsent
	case string(raw) == "null":
		return idNull
	case raw[0] == '"', raw[0] == '-', raw[0] >= '0' && raw[0] <= '9':
		return idValid
	default:
		return idInvalid
	}
}

// classify checks one non-blank line. Exactly one of the results is non-nil
// in meaning: a rejection, or a classified message.
func classify(line []byte) (classified, *rejection) {
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			return classified{}, &rejection{code: CodeParseError, reason: "invalid JSON"}
		case bytes.TrimSpace(line)[0] == '[':
			return classified{}, invalid("batch requests are not supported", nil)
		default:
			return classified{}, invalid("message must be a JSON object", nil)
		}
	}
	if bytes.TrimSpace(line)[0] != '{' { // valid JSON, but null
		return classified{}, invalid("message must be a JSON object", nil)
	}
	kind := kindOfID(h.ID)
	if kind == idInvalid {
		return classified{}, invalid("id must be a string, a number or null", nil)
	}
	// A string id with invalid UTF-8 cannot be echoed: the reply would not
	// be JSON text (RFC 8259 §8.1).
	badText := kind == idValid && !utf8.Valid(h.ID)
	var echo json.RawMessage
	if kind == idValid && !badText {
		echo = h.ID
	}
	switch {
	case h.Method != nil && badText:
		return classified{}, invalid("id must be valid UTF-8", nil)
	case h.Method != nil:
		return classifyRequest(&h, echo)
	case bool(h.Result || h.Error) && badText:
		return classified{dropped: "response id is not valid UTF-8"}, nil
	case bool(h.Result || h.Error):
		return classifyResponse(&h, kind), nil
	default:
		return classified{}, invalid("missing method", echo)
	}
}

// classifyRequest checks a request or notification; echo is its valid id.
func classifyRequest(h *header, echo json.RawMessage) (classified, *rejection) {
	if !isVersion2(h.JSONRPC) {
		return classified{}, invalid(`jsonrpc must be "2.0"`, echo)
	}
	var method string
	if err := json.Unmarshal(h.Method, &method); err != nil || method == "" {
		return classified{}, invalid("method must be a non-empty string", echo)
	}
	if p := h.Params; p != nil && p[0] != '{' && p[0] != '[' && string(p) != "null" {
		return classified{}, invalid("params must be an object or an array", echo)
	}
	return classified{message: message{Method: method, ID: echo, Params: h.Params}}, nil
}

// classifyResponse checks a response to one of the daemon's requests. An
// invalid response is never answered (a reply to a reply could loop between
// peers); it is dropped and logged.
func classifyResponse(h *header, kind idKind) classified {
	c := classified{message: message{ID: h.ID}}
	switch {
	case !isVersion2(h.JSONRPC):
		c.dropped = `jsonrpc is not "2.0"`
	case kind != idValid:
		c.dropped = "response without an id"
	case bool(h.Result && h.Error):
		c.dropped = "response with both result and error"
	}
	return c
}

func isVersion2(raw json.RawMessage) bool {
	var v string
	return raw != nil && json.Unmarshal(raw, &v) == nil && v == "2.0"
}

func invalid(reason string, id json.RawMessage) *rejection {
	return &rejection{code: CodeInvalidRequest, reason: reason, id: id}
}

// isBlank reports whether line is empty or only white space; the SDK skips
// such lines the same way.
func isBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// errorReply is the wire shape of the Guard's replies.
type errorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   errorObject     `json:"error"`
}

type errorObject struct {
	Code    int       `json:"code"`
	Message string    `json:"message"`
	Data    errorData `json:"data"`
}

type errorData struct {
	Error string `json:"error"`
	Limit int    `json:"limit,omitempty"`
}

// marshal renders the reply as one line ending in '\n'. Messages match the
// SDK's own ("Parse error", "Invalid request").
func (r *rejection) marshal() []byte {
	msg := "Invalid request"
	if r.code == CodeParseError {
		msg = "Parse error"
	}
	id := r.id
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(errorReply{
		JSONRPC: "2.0",
		ID:      id,
		Error:   errorObject{Code: r.code, Message: msg, Data: errorData{Error: r.reason, Limit: r.limit}},
	})
	if err != nil { // unreachable: id came from the JSON decoder
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	return append(b, '\n')
}

// recoverID finds the id of an over-long request in the first bytes of its
// line, reading members up to the first composite value (params). It returns
// nil unless a string or number id was read whole and the members seen show
// a request (method or params) rather than a response.
func recoverID(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	request, idUnconfirmed := false, false
	for {
		key, err := dec.Token()
		if err != nil {
			break // truncated prefix, or the end of the object
		}
		// A number ends only where the next token begins: the prefix may
		// have cut it short until then.
		idUnconfirmed = false
		name, _ := key.(string)
		switch name {
		case "result", "error":
			return nil
		case "method", "params":
			request = true
		}
		val, err := dec.Token()
		if err != nil {
			break
		}
		if _, composite := val.(json.Delim); composite {
			break // cannot be skipped cheaply
		}
		if name == "id" {
			id, idUnconfirmed = scalarID(val)
		}
	}
	if !request || idUnconfirmed {
		return nil
	}
	return id
}

// scalarID renders a decoded id token; unconfirmed is true for a number,
// which may have been cut short by the end of the prefix.
func scalarID(tok json.Token) (id json.RawMessage, unconfirmed bool) {
	switch v := tok.(type) {
	case string:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		return b, false
	case json.Number:
		return json.RawMessage(v), true
	default:
		return nil, false
	}
}
