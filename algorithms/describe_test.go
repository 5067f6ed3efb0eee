package algorithms_test

import (
	"testing"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// TestLimitersNameTheirAlgorithm: every limiter the registry builds says
// its algorithm's name, as the registry lists it, and the store it was
// built on; metrics and traces label decisions with both.
func TestLimitersNameTheirAlgorithm(t *testing.T) {
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, a := range algorithms.All {
		d, err := a.New(store, a.Defaults(), nil, "")
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if got := d.Algorithm(); got != a.Name {
			t.Errorf("%s: Algorithm() = %q, want %q", a.Name, got, a.Name)
		}
		if got := d.Store(); got != core.ScriptRunner(store) {
			t.Errorf("%s: Store() = %v, want the memory store it was built on", a.Name, got)
		}
	}
}
