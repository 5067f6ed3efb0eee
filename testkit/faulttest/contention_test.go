package faulttest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// requestsPerGoroutine is 1000 (about a minute for everything under -race
// on 2 cores); RATEKIT_CONTENTION changes it.
func requestsPerGoroutine(t *testing.T) int {
	if v := os.Getenv("RATEKIT_CONTENTION"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("RATEKIT_CONTENTION=%q: want a positive integer", v)
		}
		return n
	}
	return 1000
}

// TestContention: for every algorithm on every store, 64 goroutines spread
// over 3 independent clients send their requests at one key with a limit of
// C and no refill: exactly C pass, never C+1.
func TestContention(t *testing.T) {
	const (
		goroutines = 64
		clients    = 3
		limit      = 150
	)
	perG := requestsPerGoroutine(t)
	frozen := core.ClockFunc(func() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) })
	srv := redistest.Start(t)
	for _, a := range append([]adapter{memoryAdapter(t)}, adapters...) {
		for _, alg := range algorithms.All {
			t.Run(a.name+"/"+alg.Name, func(t *testing.T) {
				prefix := fmt.Sprintf("contention:%d:", time.Now().UnixNano())
				lims := make([]core.Limiter, clients)
				for i := range lims {
					// A limit of C and no refill at all within the test
					// (the clock is frozen).
					l, err := alg.New(a.open(t, srv.Addr), limitParams(alg, limit, 1, time.Hour), frozen, prefix)
					if err != nil {
						t.Fatal(err)
					}
					lims[i] = l
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
