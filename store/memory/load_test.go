package memory_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// keysUnderLoad is 100 000 in make test; RATEKIT_MEMORY_KEYS=1000000 in
// make soak.
func keysUnderLoad(tb testing.TB) int {
	if v := os.Getenv("RATEKIT_MEMORY_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			tb.Fatalf("RATEKIT_MEMORY_KEYS=%q", v)
		}
		return n
	}
	return 100_000
}

// TestManyKeysAllExpire fills the store with many distinct keys; after
// their TTL every one is gone, by the background sweep alone, and Close
// stops the sweeper (no goroutine left).
func TestManyKeysAllExpire(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lim, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 10, RefillRate: 10, RefillInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n := keysUnderLoad(t)
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if _, err := lim.Allow(ctx, "user:"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Len(); got != n {
		t.Fatalf("%d keys stored, want %d", got, n)
	}
	clock.Advance(999 * time.Millisecond) // TTL is 1 s (server-time mode: no slack)
	time.Sleep(20 * time.Millisecond)
	if got := s.Len(); got != n {
		t.Fatalf("%d keys left before their TTL, want %d", got, n)
	}
	clock.Advance(time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for s.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys outlived their TTL", s.Len())
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
}

// BenchmarkManyKeys reports the store's bytes per key with many keys (set
// RATEKIT_MEMORY_KEYS=1000000 for a million), then times Allow while a
// sweep of all of them runs over and over in the background: p50 and p99
// in ns, and the time of one full sweep.
func BenchmarkManyKeys(b *testing.B) {
	n := keysUnderLoad(b)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := memory.New(memory.WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	lim, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Hour})
	ctx := context.Background()
	for _, k := range keys {
		lim.Allow(ctx, k)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	bytesPerKey := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)

	start := time.Now()
	s.Sweep() // nothing expired: a full scan
	sweep := time.Since(start)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				s.Sweep()
			}
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		lim.Allow(ctx, keys[i%n])
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	close(stop)
	<-done
	b.ReportMetric(bytesPerKey, "bytes/key")
	b.ReportMetric(float64(sweep.Microseconds()), "µs/sweep")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
