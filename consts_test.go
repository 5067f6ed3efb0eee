package ratekit

import (
	"testing"

	"github.com/ratekit/ratekit/internal/engine"
)

// MaxPolicyLimits is written as a number so that go doc shows it; the
// engine's own bound must be the same.
func TestMaxPolicyLimits(t *testing.T) {
	if MaxPolicyLimits != engine.MaxLimits {
		t.Fatalf("MaxPolicyLimits = %d, engine.MaxLimits = %d", MaxPolicyLimits, engine.MaxLimits)
	}
}
