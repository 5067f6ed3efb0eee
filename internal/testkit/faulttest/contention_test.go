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

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
)

// contention is one algorithm with a limit of c and no refill at all
// within the test (a frozen clock).
type contention struct {
	name  string
	build func(r core.ScriptRunner, prefix string, c int64, clock core.Clock) (core.Limiter, error)
}

var contentions = []contention{
	{"tokenbucket", func(r core.ScriptRunner, p string, c int64, clock core.Clock) (core.Limiter, error) {
		return tokenbucket.New(r, tokenbucket.Config{Capacity: c, RefillRate: 1, RefillInterval: time.Hour, Prefix: p, Clock: clock})
	}},
	{"fixedwindow", func(r core.ScriptRunner, p string, c int64, clock core.Clock) (core.Limiter, error) {
		return fixedwindow.New(r, fixedwindow.Config{Limit: c, Window: time.Hour, Prefix: p, Clock: clock})
	}},
	{"slidinglog", func(r core.ScriptRunner, p string, c int64, clock core.Clock) (core.Limiter, error) {
		return slidinglog.New(r, slidinglog.Config{Limit: c, Window: time.Hour, Prefix: p, Clock: clock})
	}},
	{"slidingcounter", func(r core.ScriptRunner, p string, c int64, clock core.Clock) (core.Limiter, error) {
		return slidingcounter.New(r, slidingcounter.Config{Limit: c, Window: time.Hour, Prefix: p, Clock: clock})
	}},
	{"leakybucket", func(r core.ScriptRunner, p string, c int64, clock core.Clock) (core.Limiter, error) {
		return leakybucket.New(r, leakybucket.Config{Capacity: c, LeakRate: 1, Per: time.Hour, Prefix: p, Clock: clock})
	}},
	{"gcra", func(r core.ScriptRunner, p string, c int64, clock core.Clock) (core.Limiter, error) {
		return gcra.New(r, gcra.Config{Rate: 1, Period: time.Hour, Burst: c, Prefix: p, Clock: clock})
	}},
}

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
		for _, c := range contentions {
			t.Run(a.name+"/"+c.name, func(t *testing.T) {
				prefix := fmt.Sprintf("contention:%d:", time.Now().UnixNano())
				lims := make([]core.Limiter, clients)
				for i := range lims {
					l, err := c.build(a.open(t, srv.Addr), prefix, limit, frozen)
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
