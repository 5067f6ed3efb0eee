package core_test

import (
	"sync"
	"testing"

	"github.com/ratekit/ratekit/core"
)

// TestSHA1Concurrent calls SHA1 on a fresh script from many goroutines at
// once, as the first calls of a Redis store may: under -race, a hash not
// computed exactly once would show.
func TestSHA1Concurrent(t *testing.T) {
	s := core.NewScript("n", "return 1", nil, false)
	got := make([]string, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = s.SHA1() })
	}
	wg.Wait()
	for i, h := range got {
		// echo -n 'return 1' | sha1sum
		if h != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" {
			t.Errorf("SHA1() in goroutine %d = %q, want e0e1f9fa...", i, h)
		}
	}
}
