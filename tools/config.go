package tools

import (
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Default limits, used for any Config field left zero.
const (
	DefaultOutputLimit     = 30_000              // characters of tool text the model reads
	DefaultCardOutputLimit = event.MaxCardOutput // bytes of live output a card shows
	DefaultTimeout         = 120 * time.Second
	DefaultMaxTimeout      = 600 * time.Second
)

// Config sets the limits the tools apply and state in their descriptions.
// The zero value of every field means its default.
type Config struct {
	// OutputLimit caps the text the model reads from one call, in
	// characters (runes). The tail is kept.
	OutputLimit int
	// CardOutputLimit caps the output sent to one call's card, in bytes;
	// at most event.MaxCardOutput (what the journal keeps) less 4 KiB for
	// the card's notices, so a reloaded card shows exactly what the live
	// one did.
	CardOutputLimit int
	// DefaultTimeout and MaxTimeout are the executor's foreground timeout
	// default and cap, as the tool descriptions state them. cmd/dsh-acp
	// resolves them once and gives the same values to the executor.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
}

// withDefaults returns c with every zero or negative field set to its default.
func (c Config) withDefaults() Config {
	if c.OutputLimit <= 0 {
		c.OutputLimit = DefaultOutputLimit
	}
	if c.CardOutputLimit <= 0 || c.CardOutputLimit > event.MaxCardOutput {
		c.CardOutputLimit = DefaultCardOutputLimit
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.MaxTimeout < c.DefaultTimeout {
		c.MaxTimeout = c.DefaultTimeout
	}
	return c
}
