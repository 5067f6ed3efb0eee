package faulttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// coalesce returns the coalescing form of a limiter of the registry.
func coalesce(t *testing.T, l *ratekit.Limiter) core.Limiter {
	c, err := ratekit.Coalesce(l)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestContentionCoalesced is TestContention through coalescing limiters
// (ratekit.Coalesce): 64 goroutines over 3 clients, each client gathering
// its goroutines' calls into batches, at one key with a limit of C and no
// refill: exactly C pass, never C+1.
func TestContentionCoalesced(t *testing.T) {
	const (
		goroutines = 64
		clients    = 3
		limit      = 150
	)
	perG := max(requestsPerGoroutine(t)/4, 1)
	frozen := core.ClockFunc(func() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) })
	srv := redistest.Start(t)
	for _, a := range append([]adapter{memoryAdapter(t)}, adapters...) {
		for _, alg := range algorithms.All {
			t.Run(a.name+"/"+alg.Name, func(t *testing.T) {
				prefix := fmt.Sprintf("coalesced:%d:", time.Now().UnixNano())
				lims := make([]core.Limiter, clients)
				for i := range lims {
					l, err := alg.New(a.open(t, srv.Addr), limitParams(alg, limit, 1, time.Hour), frozen, prefix)
					if err != nil {
						t.Fatal(err)
					}
					lims[i] = coalesce(t, l)
				}
				var allowed, errs atomic.Int64
				var firstErr atomic.Value
				var wg sync.WaitGroup
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						lim := lims[g%clients]
						for i := 0; i < perG; i++ {
							d, err := lim.Allow(context.Background(), "hot")
							if err != nil {
								errs.Add(1)
								firstErr.CompareAndSwap(nil, err)
								continue
							}
							if d.Allowed {
								allowed.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				if errs.Load() != 0 {
					t.Fatalf("%d errors, first: %v", errs.Load(), firstErr.Load())
				}
				if got := allowed.Load(); got != limit {
					t.Fatalf("%d of %d requests allowed with a limit of %d", got, goroutines*perG, limit)
				}
			})
		}
	}
}

// TestCoalescedCallersLeaving: 64 goroutines over 3 coalescing clients
// at one key whose limit is never reached, a quarter of the calls with a
// deadline of up to a millisecond. Every caller that stays gets its
// decision, and the key counts each allowed request once, plus at most
// one per caller that left after its batch went out.
//
// Except on the clients that share one connection between concurrent
// calls (rueidis, valkey-go): there a call whose deadline passes while
// the connection is in the client's one-call-at-a-time mode can take the
// connection down, and calls on it that had no deadline of their own
// fail with a timeout (context.DeadlineExceeded, or the redial's i/o
// timeout). The plain limiter shows the same, more often: in this test
// without Coalesce, on a loaded machine, up to 15 callers of 4,000 per
// client. A coalescing group has two calls in flight, so it meets that
// too. Such a call may or may not have counted: it is collateral, bounded
// like a caller that left.
func TestCoalescedCallersLeaving(t *testing.T) {
	const (
		goroutines = 64
		clients    = 3
	)
	perG := max(requestsPerGoroutine(t)/4, 1)
	limit := int64(goroutines * perG * 2)
	srv := redistest.Start(t)
	for _, a := range append([]adapter{memoryAdapter(t)}, adapters...) {
		t.Run(a.name, func(t *testing.T) {
			alg, _ := algorithms.Lookup("tokenbucket")
			prefix := fmt.Sprintf("leaving:%d:", time.Now().UnixNano())
			lims := make([]core.Limiter, clients)
			var peek core.Limiter
			for i := range lims {
				l, err := alg.New(a.open(t, srv.Addr), limitParams(alg, limit, 1, time.Hour), nil, prefix)
				if err != nil {
					t.Fatal(err)
				}
				lims[i], peek = coalesce(t, l), l
			}
			sharedConn := a.name == "rueidis" || a.name == "valkey"
			var allowed, left, collateral, errs atomic.Int64
			var firstErr atomic.Value
			var wg sync.WaitGroup
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					lim := lims[g%clients]
					for i := 0; i < perG; i++ {
						ctx, cancel := context.Background(), context.CancelFunc(func() {})
						if (g+i)%4 == 0 {
							ctx, cancel = context.WithTimeout(ctx, time.Duration((g*7+i)%1000)*time.Microsecond)
						}
						d, err := lim.Allow(ctx, "hot")
						dl, ok := ctx.Deadline()
						expired := ok && !time.Now().Before(dl)
						cancel()
						switch {
						case err != nil && expired && errors.Is(err, core.ErrStore):
							// Its deadline passed: a context error, or the
							// client's own timeout (go-redis' i/o timeout).
							left.Add(1)
						case err != nil && sharedConn && isTimeout(err):
							collateral.Add(1)
						case err != nil:
							errs.Add(1)
							firstErr.CompareAndSwap(nil, err)
						case d.Allowed:
							allowed.Add(1)
						default:
							errs.Add(1)
							firstErr.CompareAndSwap(nil, fmt.Errorf("denied below the limit: %+v", d))
						}
					}
				}()
			}
			wg.Wait()
			if errs.Load() != 0 {
				t.Fatalf("%d callers that stayed got no decision, first: %v", errs.Load(), firstErr.Load())
			}
			d, err := peek.Peek(context.Background(), "hot")
			if err != nil {
				t.Fatal(err)
			}
			counted, a := limit-d.Remaining, allowed.Load()
			t.Logf("allowed %d, counted %d, left %d, collateral timeouts %d", a, counted, left.Load(), collateral.Load())
			if counted < a || counted > a+left.Load()+collateral.Load() {
				t.Fatalf("the key counted %d with %d allowed, %d callers that left and %d collateral timeouts", counted, a, left.Load(), collateral.Load())
			}
		})
	}
}

// isTimeout reports whether err is a deadline's: the context's, or the
// network's (a redial's i/o timeout).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
