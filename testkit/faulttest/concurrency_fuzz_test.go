package faulttest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
)

// FuzzConcurrencyConfig: any Limit, TTL and prefix either build a
// concurrency limiter that then acquires, peeks and releases without
// error, or fail with core.ErrInvalidConfig; a zero or negative Limit or
// TTL always fails. Never a panic.
func FuzzConcurrencyConfig(f *testing.F) {
	for _, c := range []struct {
		limit, ttl int64
		prefix     string
	}{
		{10, int64(time.Second), ""}, {0, int64(time.Second), "p:"}, {1, 0, ""}, {-1, -1, "{"},
		{1<<63 - 1, 1<<63 - 1, "}"}, {-1 << 63, -1 << 63, "\xff\x00"}, {1, 1, "ns"}, {1, 1500, "µs"},
		{concurrency.MaxLimit, int64(time.Microsecond), ""}, {concurrency.MaxLimit + 1, int64(time.Hour), ""},
	} {
		f.Add(c.limit, c.ttl, c.prefix)
	}
	f.Fuzz(func(t *testing.T, limit, ttl int64, prefix string) {
		// A frozen clock: even a lease of 1 µs is live until released.
		frozen := core.ClockFunc(func() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) })
		l, err := concurrency.New(fuzzStore(t), concurrency.Config{Limit: limit, TTL: time.Duration(ttl), Prefix: prefix, Clock: frozen})
		if err != nil {
			if !errors.Is(err, core.ErrInvalidConfig) {
				t.Fatalf("New: %v; want ErrInvalidConfig", err)
			}
			return
		}
		if limit <= 0 || ttl <= 0 {
			t.Fatalf("New accepted Limit %d, TTL %d", limit, ttl)
		}
		ctx := context.Background()
		lease, d, err := l.Acquire(ctx, "k")
		if err != nil || !d.Allowed || d.Remaining != limit-1 {
			t.Fatalf("Acquire on a valid limiter: %+v, %v", d, err)
		}
		if _, err := l.Peek(ctx, "k"); err != nil {
			t.Fatalf("Peek on a valid limiter: %v", err)
		}
		if ok, err := l.Release(ctx, lease); !ok || err != nil {
			t.Fatalf("Release on a valid limiter: %v, %v", ok, err)
		}
	})
}

// FuzzConcurrencyLease: any lease a caller makes up (key, cost, id) either
// is refused with core.ErrInvalidLease or core.ErrInvalidKey, or frees
// nothing and says so, unless it is the lease the limiter granted; and
// any key and cost either acquire as the limit says, or fail with
// core.ErrInvalidKey or core.ErrInvalidCost. Never a panic.
func FuzzConcurrencyLease(f *testing.F) {
	f.Add("k", int64(2), "0123456789abcdef0123456789abcdef", int64(1))
	f.Add("k", int64(2), "", int64(0))
	f.Add("", int64(1), "ffffffffffffffffffffffffffffffff", int64(-1))
	f.Add("k", int64(-1<<63), "0123456789ABCDEF0123456789ABCDEF", int64(6))
	f.Add("{k}", int64(1<<63-1), "00000000000000000000000000000000", int64(1<<63-1))
	f.Add("k", int64(concurrency.MaxLimit+1), strings.Repeat("0", 31)+"g", int64(5))
	f.Add(strings.Repeat("k", core.MaxKeyLen+1), int64(2), strings.Repeat("a", 33), int64(2))
	const limit = 5
	f.Fuzz(func(t *testing.T, key string, n int64, id string, cost int64) {
		l, err := concurrency.New(fuzzStore(t), concurrency.Config{Limit: limit, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		held, d, err := l.AcquireN(ctx, "k", 2)
		if err != nil || !d.Allowed {
			t.Fatalf("AcquireN: %+v, %v", d, err)
		}
		// The fuzzer's id may be the held lease's only by chance; aim it
		// there now and then.
		if id == "held" {
			id = held.ID
		}
		forged := concurrency.Lease{Key: key, N: n, ID: id}
		for _, call := range []func(context.Context, concurrency.Lease) (bool, error){l.Extend, l.Release} {
			ok, err := call(ctx, forged)
			switch {
			case forged == held:
				if !ok || err != nil {
					t.Fatalf("the held lease: %v, %v", ok, err)
				}
			case err != nil:
				if !errors.Is(err, core.ErrInvalidLease) && !errors.Is(err, core.ErrInvalidKey) {
					t.Fatalf("a made-up lease %+v: %v; want ErrInvalidLease or ErrInvalidKey", forged, err)
				}
			case ok:
				t.Fatalf("a made-up lease %+v was live", forged)
			}
		}
		if forged != held {
			if d, err := l.Peek(ctx, "k"); err != nil || d.Remaining != limit-2 {
				t.Fatalf("after a made-up lease %+v: %+v, %v", forged, d, err)
			}
		}
		_, d, err = l.AcquireN(ctx, key, cost)
		switch {
		case key == "" || len(key) > core.MaxKeyLen:
			if !errors.Is(err, core.ErrInvalidKey) {
				t.Fatalf("AcquireN(%d-byte key) = %v; want ErrInvalidKey", len(key), err)
			}
		case cost < 1 || cost > limit:
			if !errors.Is(err, core.ErrInvalidCost) {
				t.Fatalf("AcquireN(key, %d) = %v; want ErrInvalidCost", cost, err)
			}
		case err != nil:
			t.Fatalf("AcquireN(%q, %d) = %v", key, cost, err)
		default:
			inFlight := int64(0)
			if key == "k" && forged != held {
				inFlight = 2
			}
			if d.Allowed != (inFlight+cost <= limit) {
				t.Fatalf("AcquireN(%q, %d) with %d in flight: %+v", key, cost, inFlight, d)
			}
		}
	})
}
