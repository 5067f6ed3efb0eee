package core

import (
	"context"
	"fmt"
	"time"
)

// Wait blocks until a request of cost n on key is allowed by l and returns
// that decision, or returns early with an error when ctx ends (wrapping
// ErrStore and ctx's error, as a limiter reports it) or l fails. It
// sleeps for the RetryAfter each denial reports, so it asks the store once
// per wait, never in a busy loop. It is Waiter{}.Wait.
func Wait(ctx context.Context, l Limiter, key string, n int64) (Decision, error) {
	return Waiter{}.Wait(ctx, l, key, n)
}

// Waiter waits like Wait, with an injectable sleep for tests and
// simulations.
type Waiter struct {
	// Sleep waits for d, or until ctx ends and then returns ctx.Err().
	// When nil, a timer is used.
	Sleep func(ctx context.Context, d time.Duration) error
}

// minWait is the shortest sleep between two attempts, in case a denial
// reports no wait (it should not).
const minWait = time.Millisecond

// Wait is like the package function Wait.
func (w Waiter) Wait(ctx context.Context, l Limiter, key string, n int64) (Decision, error) {
	sleep := w.Sleep
	if sleep == nil {
		sleep = timerSleep
	}
	for {
		d, err := l.AllowN(ctx, key, n)
		if err != nil || d.Allowed {
			return d, err
		}
		if err := sleep(ctx, max(d.RetryAfter, minWait)); err != nil {
			return d, fmt.Errorf("%w: wait for %q ended: %w", ErrStore, key, err)
		}
	}
}

func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
