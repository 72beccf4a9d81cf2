package chat

import (
	"sync/atomic"

	"github.com/nexo-im/nexo/configs"
)

// Mode holds the three pipeline switches. They change at run time (SIGHUP);
// each send reads them once, so a message finishes under the path it was
// accepted on (its route travels with its stream entry).
type Mode struct {
	v atomic.Pointer[configs.TwoPhase]
}

// NewMode returns the switches set to cfg.
func NewMode(cfg configs.TwoPhase) *Mode {
	m := &Mode{}
	m.Set(cfg)
	return m
}

// Get returns the current switches.
func (m *Mode) Get() configs.TwoPhase { return *m.v.Load() }

// Set replaces the switches.
func (m *Mode) Set(cfg configs.TwoPhase) { m.v.Store(&cfg) }
