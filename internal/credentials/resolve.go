package credentials

import (
	"errors"
	"fmt"
)

// Source says where the key in force came from.
type Source string

const (
	SourceNone   Source = ""            // no key: prompts that need the model are refused
	SourceEnv    Source = "environment" // DSH_API_KEY or DEEPSEEK_API_KEY
	SourceStored Source = "stored"      // the credential file (dsh-acp login)
)

// Inputs are what the daemon was told outside the credential file. An
// empty BaseURL or Model means neither its flag nor its variable was set.
type Inputs struct {
	EnvKey         string // DSH_API_KEY, else DEEPSEEK_API_KEY ("" when neither)
	BaseURL, Model string // --base-url / DSH_BASE_URL, --model / DSH_MODEL
	DefaultBaseURL string
	DefaultModel   string
}

// Resolved is the credential in force. APIKey is "" when Source is
// SourceNone; BaseURL and Model are always set.
type Resolved struct {
	Credential
	Source Source
	// SetAside says why a stored credential exists but is not used (a load
	// failure, another base URL), "" otherwise. It never holds the key.
	SetAside string
}

// Resolve applies the precedence: a key from the environment wins and load
// is not called; else the stored credential from load is used whole, its
// key with its own base URL, unless in.BaseURL names another endpoint. An
// explicit in.Model overrides the stored model. load returning ErrNotFound
// means no credential; any other error is reported in SetAside.
func Resolve(in Inputs, load func() (Credential, error)) Resolved {
	r := Resolved{Credential: Credential{
		BaseURL: firstSet(in.BaseURL, in.DefaultBaseURL),
		Model:   firstSet(in.Model, in.DefaultModel),
	}}
	if in.EnvKey != "" {
		r.APIKey, r.Source = in.EnvKey, SourceEnv
		return r
	}
	c, err := load()
	switch {
	case errors.Is(err, ErrNotFound):
		return r
	case err != nil:
		r.SetAside = err.Error()
		return r
	case in.BaseURL != "" && !SameBaseURL(in.BaseURL, c.BaseURL):
		r.SetAside = fmt.Sprintf("the stored key is for %s, but --base-url or DSH_BASE_URL names %s: run `dsh-acp login` for that endpoint", c.BaseURL, in.BaseURL)
		return r
	}
	r.APIKey, r.BaseURL, r.Source = c.APIKey, c.BaseURL, SourceStored
	r.Model = firstSet(in.Model, c.Model, in.DefaultModel)
	return r
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
