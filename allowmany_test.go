package ratekit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
)

// Each request of AllowMany gets the error AllowN would return for it,
// whatever else is wrong: a bad key or cost is named as such even when the
// limiter's clock reads a time ratekit cannot compute with, or the
// context has ended.
func TestAllowManyErrorsAsAllowN(t *testing.T) {
	// The clock moves out of range once the limiter is built: New
	// refuses a clock out of range.
	farFuture := fakeclock.New(time.Time{})
	reqs := []core.Request{
		{Key: "ok", N: 1},
		{Key: "", N: 1},
		{Key: strings.Repeat("k", core.MaxKeyLen+1), N: 1},
		{Key: "ok", N: 0},
		{Key: "ok", N: 11},
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name  string
		clock core.Clock
		ctx   context.Context
	}{
		{"clock out of range", farFuture, context.Background()},
		{"context ended", nil, ended},
		{"both", farFuture, ended},
	} {
		t.Run(c.name, func(t *testing.T) {
			farFuture.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			l, err := tokenbucket.New(newStore(t), tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second, Clock: c.clock})
			if err != nil {
				t.Fatal(err)
			}
			farFuture.Set(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
			for i, r := range l.AllowMany(c.ctx, reqs) {
				_, want := l.AllowN(c.ctx, reqs[i].Key, reqs[i].N)
				if want == nil || r.Err == nil || r.Err.Error() != want.Error() {
					t.Errorf("request %d: AllowMany's error %v, AllowN's %v", i, r.Err, want)
				}
			}
			// And the errors are the documented ones.
			res := l.AllowMany(c.ctx, reqs)
			for i, want := range []error{nil, core.ErrInvalidKey, core.ErrInvalidKey, core.ErrInvalidCost, core.ErrInvalidCost} {
				if want != nil && !errors.Is(res[i].Err, want) {
					t.Errorf("request %d: %v, want %v", i, res[i].Err, want)
				}
			}
		})
	}
}
