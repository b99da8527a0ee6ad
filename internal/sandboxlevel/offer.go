package sandboxlevel

import (
	"fmt"
	"slices"

	"github.com/dsh-acp/dsh-acp/executor"
)

// ConfigID is the config option that chooses the sandbox level.
const ConfigID = "sandbox"

// StateKey is the journal state key of an explicitly chosen level.
const StateKey = "sandbox.level"

// Offer is what the executor can build and the level sessions start at.
// It is a value: copies share the executor.
type Offer struct {
	confiner executor.Confiner // nil: the executor does not confine
	warm     Warmer            // nil: the confiner answers at once
	asked    executor.Level    // the level asked for explicitly
	explicit bool              // asked is set
}

// Warmer is an executor that builds itself (and probes its sandbox) in the
// background, guessing meanwhile.
type Warmer interface {
	Warm()                                        // starts the build, once
	Ready() <-chan struct{}                       // closed once the build and the probe ended
	Expected() ([]executor.Level, executor.Level) // the levels offered and the default, guessed without waiting
}

// errNotConfining is why confined levels are unavailable with an executor
// that is not an executor.Confiner.
var errNotConfining = fmt.Errorf("%w: this executor does not confine commands", executor.ErrSandbox)

// New reads ex's levels; explicit is the level asked for (the daemon's
// --sandbox), "" for the executor's default.
func New(ex executor.Executor, explicit executor.Level) Offer {
	c, _ := ex.(executor.Confiner)
	w, _ := ex.(Warmer)
	return Offer{confiner: c, warm: w, asked: explicit, explicit: explicit != ""}
}

// Explicit reports whether sessions start at a level asked for.
func (o Offer) Explicit() bool { return o.explicit }

// Ready reports whether the executor's levels are known without waiting.
func (o Offer) Ready() bool {
	if o.warm == nil {
		return true
	}
	select {
	case <-o.warm.Ready():
		return true
	default:
		return false
	}
}

// WaitReady starts the executor's build, when it builds itself, and waits
// until its levels are known.
func (o Offer) WaitReady() {
	if o.warm != nil {
		o.warm.Warm()
		<-o.warm.Ready()
	}
}

// Start is a new session's level: the one asked for, else the executor's
// default (guessed until it is ready).
func (o Offer) Start() executor.Level {
	switch {
	case o.explicit:
		return o.asked
	case o.confiner == nil:
		return executor.LevelOff
	case !o.Ready():
		_, def := o.warm.Expected()
		return def
	}
	return o.confiner.DefaultLevel()
}

// Levels are the levels offered now, in executor.AllLevels order.
func (o Offer) Levels() []executor.Level {
	if o.confiner == nil {
		return []executor.Level{executor.LevelOff}
	}
	var offered []executor.Level
	if o.Ready() {
		offered = o.confiner.Levels()
	} else {
		offered, _ = o.warm.Expected()
	}
	return slices.DeleteFunc(executor.AllLevels(), func(l executor.Level) bool { return !slices.Contains(offered, l) })
}

// Unavailable says why confined levels cannot be built (wrapping
// executor.ErrSandbox), or nil — also while the executor is not ready:
// sessions settle once it is.
func (o Offer) Unavailable() error {
	if o.confiner == nil {
		return errNotConfining
	}
	if !o.Ready() {
		return nil
	}
	return o.confiner.Unavailable()
}
