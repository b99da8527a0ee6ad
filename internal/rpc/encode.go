package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/wirejson"
)

// appendReply appends the reply line to a request with id: its error when
// err is not nil, else its result. This is the one encoder of replies.
func appendReply(b []byte, id json.RawMessage, result any, err error) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if id == nil {
		id = json.RawMessage("null")
	}
	b = append(append(b, id...), ',')
	if err == nil {
		var merr error
		start := len(b)
		b = append(b, `"result":`...)
		if b, merr = appendValue(b, result); merr == nil {
			return append(b, "}\n"...)
		}
		b, err = b[:start], fmt.Errorf("encode result: %w", merr)
	}
	b = append(b, `"error":`...)
	enc, merr := json.Marshal(EncodeError(err))
	if merr != nil { // unreachable: an error's data is JSON-able or replaced
		enc = []byte(`{"code":-32603,"message":"Internal error"}`)
	}
	return append(append(b, enc...), "}\n"...)
}

// appendValue appends v's JSON: raw JSON as it is, an Appender's own
// encoding, anything else through encoding/json.
func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if len(x) == 0 {
			return append(b, "null"...), nil
		}
		return append(b, x...), nil
	case wirejson.Appender:
		return x.AppendJSON(b), nil
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, enc...), nil
}

// EncodeError is the error object a reply carries for err: a
// *sdk.RequestError as it is; context.Canceled as -32800 (request
// cancelled); anything else as -32603 with its text as data.error.
func EncodeError(err error) *sdk.RequestError {
	var re *sdk.RequestError
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, context.Canceled):
		return sdk.NewRequestCancelled(map[string]any{"error": err.Error()})
	}
	return sdk.NewInternalError(map[string]any{"error": err.Error()})
}

// MethodNotFound is -32601 for method.
func MethodNotFound(method string) error { return sdk.NewMethodNotFound(method) }

// InternalError is -32603 for a request whose handler failed without an
// answer of its own.
func InternalError(method string) error {
	return sdk.NewInternalError(map[string]any{"error": fmt.Sprintf("internal error in %s", method)})
}
