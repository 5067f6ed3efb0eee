package memory_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// scriptsOnly is the store seen only as a core.ScriptRunner, as any
// wrapper makes it: limiters on it send every decision through the
// composed script's Go twin (RunScript), never the in-process path.
type scriptsOnly struct{ core.ScriptRunner }

// paths runs check on the store as limiters use it (one key's decisions
// in process, Store.Lock) and through scriptsOnly (every decision a
// script). The suite's reference is a memory store used in process, so
// the second run holds the scripts' twins to the in-process path.
func paths(t *testing.T, s *memory.Store, check func(*testing.T, core.ScriptRunner)) {
	t.Run("inprocess", func(t *testing.T) { check(t, s) })
	t.Run("scripts", func(t *testing.T) { check(t, scriptsOnly{s}) })
}

// The memory store against itself in client-clock mode: this checks the
// algorithms' bounds, that a shared store gives the same decisions as a
// fresh one, and that scripts and the in-process path decide alike.
func TestConformance(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	paths(t, s, func(t *testing.T, r core.ScriptRunner) {
		conformance.Run(t, conformance.Harness{Runner: r})
	})
}

// Server-time mode: limiters read the store's own clock. No sweep: it would
// drop state that expired on the suite's clock, which the reference keeps,
// and a later step back of the clock would revive it there only (with a
// sweep every millisecond the suite fails at once; with the default 10 s,
// now and then).
func TestConformanceServerTime(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	paths(t, s, func(t *testing.T, r core.ScriptRunner) {
		conformance.Run(t, conformance.Harness{Runner: r, SetTime: clock.Set})
	})
}

// On the store's own clock (time.Now), as a real server decides: bounds
// checked from the store's readings of its time.
func TestConformanceServerClock(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	paths(t, s, func(t *testing.T, r core.ScriptRunner) {
		conformance.RunServerClock(t, r, 3)
	})
}
