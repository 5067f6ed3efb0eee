package logpace_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/internal/logpace"
)

func TestAllow(t *testing.T) {
	var p logpace.Pacer
	t0 := time.Unix(1000, 0)
	for i, tt := range []struct {
		at         time.Duration
		ok         bool
		suppressed int64
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{logpace.Every - 1, false, 0},
		{logpace.Every, true, 2},
		{logpace.Every, false, 0},
		{3 * logpace.Every, true, 1},
	} {
		ok, n := p.Allow(t0.Add(tt.at))
		if ok != tt.ok || n != tt.suppressed {
			t.Fatalf("line %d at +%v: Allow = %v, %d; want %v, %d", i, tt.at, ok, n, tt.ok, tt.suppressed)
		}
	}
}
