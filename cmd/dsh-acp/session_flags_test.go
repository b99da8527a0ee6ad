package main

import (
	"bytes"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
)

func TestSessionFlags(t *testing.T) {
	env := map[string]string{"DSH_CONTEXT_WINDOW": "m1=8k,m2=200_000", "DSH_PRICE": "input=0.28,output=0.42,cached=0.028"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var usage bytes.Buffer
	c, err := parseConfig("dsh-acp", []string{"--compact-threshold", "70"}, lookup, &usage)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Session
	if w := s.ContextWindow; w("m1") != 8000 || w("m2") != 200_000 || w("deepseek-chat") != 1_000_000 || w("other") != agent.DefaultContextWindow {
		t.Errorf("windows %d %d %d %d", w("m1"), w("m2"), w("deepseek-chat"), w("other"))
	}
	if s.CompactThreshold != 0.7 {
		t.Errorf("threshold %v", s.CompactThreshold)
	}
	if p := s.Price; p == nil || p.Input != 0.28 || p.Output != 0.42 || p.CachedInput != 0.028 || p.Currency != "USD" {
		t.Errorf("price %+v", p)
	}
	c, err = parseConfig("dsh-acp", []string{"--context-window", "128k", "--price", ""}, lookup, &usage)
	if err != nil || c.Session.ContextWindow("anything") != 128_000 || c.Session.Price != nil || c.Session.CompactThreshold != 0.8 {
		t.Errorf("one window for all: %v %+v", err, c.Session)
	}
	for _, bad := range [][]string{
		{"--context-window", "lots"}, {"--context-window", "100"}, {"--context-window", "m1=,m2=5"},
		{"--compact-threshold", "99"}, {"--compact-threshold", "5"},
		{"--price", "input=1"}, {"--price", "input=1,output=x"}, {"--price", "input=1,output=2,currency=dollars"}, {"--price", "in=1,output=2"},
	} {
		if _, err := parseConfig("dsh-acp", bad, lookup, &usage); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
