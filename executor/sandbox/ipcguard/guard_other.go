//go:build !linux

package ipcguard

import (
	"errors"

	"go.uber.org/zap"
)

// Config configures New.
type Config struct {
	Logger    *zap.Logger
	LinksOnly bool
}

// Guard is a stub outside Linux: there is no seccomp.
type Guard struct{}

// New returns a Guard whose Install fails.
func New(Config) *Guard { return &Guard{} }

// Install fails: the guard needs Linux's seccomp user notification.
func (*Guard) Install() error { return errors.New("ipcguard: needs Linux") }

// Close does nothing.
func (*Guard) Close() error { return nil }

// Answered is 0: there is no supervisor.
func (*Guard) Answered() uint64 { return 0 }
