package conformance_test

import (
	"testing"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/store/memory"
)

// An adapter's whole conformance test. Replace the memory store with your
// own core.ScriptRunner.
func ExampleRun() {
	_ = func(t *testing.T) {
		store, err := memory.New()
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		conformance.Run(t, conformance.Harness{Runner: store})
	}
}
