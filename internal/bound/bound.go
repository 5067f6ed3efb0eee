// Package bound runs calls to a store within a deadline of its own,
// whatever the client does with its context: failsafe, httplimit and
// grpclimit bound every decision with it, so that a store that hangs (a
// paused server, a client that ignores deadlines, as go-redis without
// ContextTimeoutEnabled does) costs a caller at most the timeout.
package bound

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
)

// ErrBusy is Calls.Busy when it is nil.
var ErrBusy = errors.New("ratekit: too many store calls in flight")

// Calls runs calls with a timeout, at most Max at once. Its zero value
// runs no call (Max is 0): set Max.
type Calls struct {
	// Timeout bounds every call; 0 means no timeout of its own (the
	// caller's context still bounds the call).
	Timeout time.Duration
	// Max is the most calls that may run at once, counting calls abandoned
	// at their deadline that have not finished. A call beyond it is not
	// sent: its error wraps core.ErrStore and Busy.
	Max int64
	// Busy is the error of a call not sent for Max; nil means ErrBusy.
	Busy error
	// Done, if set (by tests), runs when a call run in its own goroutine
	// has finished, just before that goroutine ends.
	Done func()

	inFlight atomic.Int64
}

// InFlight returns the calls running, abandoned ones included.
func (c *Calls) InFlight() int64 { return c.inFlight.Load() }

// The states of a call run in its own goroutine.
const (
	running   int32 = iota
	finished        // the result is (being) sent to the waiting caller
	abandoned       // the caller stopped waiting; the result is dropped
)

// result is the outcome of a call run in its own goroutine.
type result struct {
	d        core.Decision
	err      error
	panicked bool
	panicVal any
}

// Do runs op and returns no later than Timeout after it starts, or when
// ctx ends, whatever op does with its context: op runs in its own
// goroutine, which is abandoned at the deadline and finishes in the
// background; its late result is dropped. Without a deadline (no Timeout,
// and a ctx that never ends) op runs in the caller's goroutine. A call
// that panics panics in the caller's goroutine, as it would without Do;
// once the caller has stopped waiting, it crashes the program, as any
// goroutine's panic does.
func (c *Calls) Do(ctx context.Context, op func(context.Context) (core.Decision, error)) (core.Decision, error) {
	if c.inFlight.Add(1) > c.Max {
		c.inFlight.Add(-1)
		busy := c.Busy
		if busy == nil {
			busy = ErrBusy
		}
		return core.Decision{}, fmt.Errorf("%w: %w: %d calls already running", core.ErrStore, busy, c.Max)
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	defer cancel()
	if cctx.Done() == nil {
		defer c.inFlight.Add(-1)
		return op(cctx)
	}

	var state atomic.Int32
	done := make(chan result, 1) // buffered: the goroutine never blocks on it
	go func() {
		r := result{panicked: true}
		defer func() {
			if r.panicked {
				r.panicVal = recover()
			}
			c.inFlight.Add(-1)
			if state.CompareAndSwap(running, finished) {
				done <- r
			} else if r.panicked {
				// Nobody waits for this call any more: crash, as any
				// goroutine's panic would, rather than hide it.
				panic(fmt.Sprintf("ratekit: store call panicked after its caller stopped waiting: %v\n%s", r.panicVal, debug.Stack()))
			}
			if c.Done != nil {
				c.Done()
			}
		}()
		r.d, r.err = op(cctx)
		r.panicked = false
	}()

	select {
	case r := <-done:
		return r.get()
	case <-cctx.Done():
	}
	if !state.CompareAndSwap(running, abandoned) {
		// The answer came with the deadline: use it.
		r := <-done
		return r.get()
	}
	if err := ctx.Err(); err != nil {
		return core.Decision{}, fmt.Errorf("%w: gave up waiting for the store: %w", core.ErrStore, err)
	}
	return core.Decision{}, fmt.Errorf("%w: no answer from the store within %v: %w", core.ErrStore, c.Timeout, context.DeadlineExceeded)
}

// get returns the call's outcome in the caller's goroutine, panicking
// there if the call panicked.
func (r result) get() (core.Decision, error) {
	if r.panicked {
		panic(r.panicVal)
	}
	return r.d, r.err
}
