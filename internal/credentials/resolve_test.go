package credentials

import (
	"errors"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	stored := Credential{APIKey: "sk-stored-000000", BaseURL: "https://stored.example/v1", Model: "stored-model"}
	defaults := Inputs{DefaultBaseURL: "https://default.example", DefaultModel: "default-model"}
	with := func(f func(*Inputs)) Inputs { in := defaults; f(&in); return in }
	tests := []struct {
		name     string
		in       Inputs
		load     func() (Credential, error)
		want     Credential
		source   Source
		setAside string // a substring of SetAside, "" for none
		noLoad   bool   // load must not be called
	}{
		{name: "environment key wins and the file is not read",
			in: with(func(in *Inputs) { in.EnvKey = "sk-env-0000000" }), noLoad: true,
			want:   Credential{APIKey: "sk-env-0000000", BaseURL: "https://default.example", Model: "default-model"},
			source: SourceEnv},
		{name: "environment key with explicit endpoint and model",
			in: with(func(in *Inputs) {
				in.EnvKey, in.BaseURL, in.Model = "sk-env-0000000", "https://flag.example", "flag-model"
			}),
			noLoad: true,
			want:   Credential{APIKey: "sk-env-0000000", BaseURL: "https://flag.example", Model: "flag-model"},
			source: SourceEnv},
		{name: "stored credential used whole",
			in: defaults, load: func() (Credential, error) { return stored, nil },
			want: stored, source: SourceStored},
		{name: "explicit model overrides the stored one",
			in:   with(func(in *Inputs) { in.Model = "flag-model" }),
			load: func() (Credential, error) { return stored, nil },
			want: Credential{APIKey: stored.APIKey, BaseURL: stored.BaseURL, Model: "flag-model"}, source: SourceStored},
		{name: "stored credential without a model takes the default",
			in: defaults, load: func() (Credential, error) { c := stored; c.Model = ""; return c, nil },
			want: Credential{APIKey: stored.APIKey, BaseURL: stored.BaseURL, Model: "default-model"}, source: SourceStored},
		{name: "explicit base URL equal to the stored one",
			in:   with(func(in *Inputs) { in.BaseURL = "HTTPS://stored.example/v1/" }),
			load: func() (Credential, error) { return stored, nil },
			want: stored, source: SourceStored},
		{name: "explicit base URL naming another endpoint sets the stored key aside",
			in:       with(func(in *Inputs) { in.BaseURL = "https://other.example" }),
			load:     func() (Credential, error) { return stored, nil },
			want:     Credential{BaseURL: "https://other.example", Model: "default-model"},
			setAside: "the stored key is for https://stored.example/v1"},
		{name: "nothing stored",
			in: defaults, load: func() (Credential, error) { return Credential{}, ErrNotFound },
			want: Credential{BaseURL: "https://default.example", Model: "default-model"}},
		{name: "unreadable store",
			in:       defaults,
			load:     func() (Credential, error) { return Credential{}, errors.New("read credential: boom") },
			want:     Credential{BaseURL: "https://default.example", Model: "default-model"},
			setAside: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loaded := false
			load := func() (Credential, error) {
				loaded = true
				if tt.load == nil {
					return Credential{}, ErrNotFound
				}
				return tt.load()
			}
			r := Resolve(tt.in, load)
			if r.Credential != tt.want || r.Source != tt.source {
				t.Errorf("Resolve = %v from %q, want %v from %q", r.Credential, r.Source, tt.want, tt.source)
			}
			if tt.noLoad && loaded {
				t.Error("the stored credential was read although the environment has a key")
			}
			if (tt.setAside == "") != (r.SetAside == "") || !strings.Contains(r.SetAside, tt.setAside) {
				t.Errorf("SetAside = %q, want one containing %q", r.SetAside, tt.setAside)
			}
			if strings.Contains(r.SetAside, stored.APIKey) {
				t.Error("SetAside shows the key")
			}
		})
	}
}
