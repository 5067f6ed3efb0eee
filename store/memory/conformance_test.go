package memory_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// The memory store against itself in client-clock mode: this checks the
// algorithms' bounds, and that a shared store gives the same decisions as a
// fresh one.
func TestConformance(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conformance.Run(t, conformance.Harness{Runner: s})
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
	conformance.Run(t, conformance.Harness{Runner: s, SetTime: clock.Set})
}

// On the store's own clock (time.Now), as a real server decides: bounds
// checked from the store's readings of its time.
func TestConformanceServerClock(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conformance.RunServerClock(t, s, 3)
}
