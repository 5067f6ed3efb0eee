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
	type described interface {
		Algorithm() string
		Store() core.ScriptRunner
	}
	for _, a := range algorithms.All {
		lim, err := a.New(store, a.Defaults(), nil, "")
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		d, ok := lim.(described)
		if !ok {
			t.Fatalf("%s: %T has no Algorithm and Store methods", a.Name, lim)
		}
		if got := d.Algorithm(); got != a.Name {
			t.Errorf("%s: Algorithm() = %q, want %q", a.Name, got, a.Name)
		}
		if got := d.Store(); got != core.ScriptRunner(store) {
			t.Errorf("%s: Store() = %v, want the memory store it was built on", a.Name, got)
		}
	}
}
