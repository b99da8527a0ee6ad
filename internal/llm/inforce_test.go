package llm

import (
	"context"
	"errors"
	"testing"
)

type stubStreamer struct{ text string }

func (s stubStreamer) Stream(context.Context, Request, func(Delta)) (Response, error) {
	return Response{Text: s.text}, nil
}

// The client in force follows the lookup: a login is picked up on the next
// Refresh, a logout ends later requests with ErrNoModel, and why there is
// no client is kept.
func TestInForceFollowsTheCredential(t *testing.T) {
	var current Streamer
	var why error
	m := NewInForce(nil, func() (Streamer, error) { return current, why }, nil)
	if m.Refresh() != nil {
		t.Fatal("a client before any login")
	}
	if _, err := m.Stream(t.Context(), Request{}, nil); !errors.Is(err, ErrNoModel) {
		t.Fatalf("Stream with no client: %v", err)
	}
	current = stubStreamer{"hi"}
	if m.Refresh() == nil {
		t.Fatal("the login was not picked up")
	}
	if r, err := m.Stream(t.Context(), Request{}, nil); err != nil || r.Text != "hi" {
		t.Fatalf("Stream = %+v, %v", r, err)
	}
	current, why = nil, errors.New("stored key unreadable")
	m.Refresh()
	if m.Current() != nil || m.Why() == nil {
		t.Errorf("after logout: current %v, why %v", m.Current(), m.Why())
	}
	var typedNil *Client
	if NewInForce(typedNil, nil, nil).Current() != nil {
		t.Error("a typed nil client counts as one")
	}
}
