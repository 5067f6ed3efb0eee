package hotkey_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	"github.com/ratekit/ratekit/store/memory"
)

// BenchmarkProcesses: one key shared by 1 and 3 OS processes (each with
// its own Budget, rueidis client and 2 x GOMAXPROCS goroutines) on a real
// redis-server, b.N decisions in all. "open" is a limit no run reaches
// (every decision allowed, from leases); "over" one the processes exceed
// (100,000/s: most decisions are local denials). decisions/s is the
// total over all processes, from the moment they are told to go until the
// last one is done; processes start before the timer.
//
//	go test -run '^$' -bench Processes -benchtime 5000000x ./hotkey/
func BenchmarkProcesses(b *testing.B) {
	srv := redistest.Start(b)
	for _, scenario := range []string{"open", "over"} {
		for _, processes := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/processes=%d", scenario, processes), func(b *testing.B) {
				b.StopTimer()
				start := spawn(b, run{
					scenario:   scenario,
					addr:       srv.Addr,
					prefix:     fmt.Sprintf("hk:b:%d:", time.Now().UnixNano()),
					processes:  processes,
					goroutines: goroutinesPerProcess(),
					decisions:  int64(b.N),
				})
				b.StartTimer()
				got := start()
				b.StopTimer()
				sum := got.total()
				if sum.Errors != 0 {
					b.Fatalf("%d errors, first: %s", sum.Errors, sum.FirstError)
				}
				elapsed := time.Duration(got.end - got.start)
				b.ReportMetric(float64(sum.Decisions)/elapsed.Seconds(), "decisions/s")
				b.ReportMetric(float64(sum.Allowed)/float64(max(sum.Decisions, 1)), "allowed/op")
				b.ReportMetric(float64(sum.Stats.Leases)/float64(max(sum.Decisions, 1))*1e6, "leases/Mop")
			})
		}
	}
}

// BenchmarkAllow: one process's local decisions on one key, from every
// core (RunParallel), on the memory store; leases are large, so this is
// the cost of the local path: one atomic operation, no allocation.
func BenchmarkAllow(b *testing.B) {
	store, err := memory.New()
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	lim, err := gcra.New(store, gcra.Config{Rate: openRate, Period: time.Second, Burst: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	budget, err := hotkey.New(lim, hotkey.Config{Lease: 1 << 16, TTL: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d, err := budget.Allow(ctx, "hot"); err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if d, err := budget.Allow(ctx, "hot"); err != nil || !d.Allowed {
					b.Error(d, err)
					return
				}
			}
		})
	})
}
