package concurrency

import (
	"testing"

	"github.com/ratekit/ratekit/internal/engine"
)

// The step's own modes must not be one the engine gives another meaning.
func TestModesAreTheirOwn(t *testing.T) {
	for _, m := range []engine.Mode{engine.ModeAllow, engine.ModePeek, engine.ModeAtMost} {
		if m == modeRelease || m == modeExtend {
			t.Errorf("engine mode %d is also the step's release or extend", m)
		}
	}
	if modeRelease == modeExtend {
		t.Error("release and extend share a mode")
	}
}
