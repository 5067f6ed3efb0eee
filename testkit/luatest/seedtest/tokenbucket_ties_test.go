package seedtest_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/luatest/seedtest"
)

// The two differences from the guide's token bucket that appear only when
// the guide is given times in float seconds, as redis-py sends a Python
// float (its shortest decimal form), with a RefillInterval that is not a
// multiple of 1/64 s: here 0.1 s, at 1 700 000 000 s, where doubles are
// 2^-22 s (about 0.24 µs) apart and 0.1 s is 419430.4 of those steps.
// docs/design.md ("Differences from the guide") states them.

const (
	tieStart    = 1_700_000_000_000_000 // µs; 1700000000 s is exact in a double
	tieInterval = 100_000               // µs
)

// guideTB runs the guide's token bucket, verbatim, with capacity 2, refill
// rate 1, refill_interval 0.1 and now in float seconds.
type guideTB struct {
	t   *testing.T
	rdb *redis.Client
	s   *redis.Script
	key string
}

func (g guideTB) allow(us int64) bool {
	g.t.Helper()
	now := strconv.FormatFloat(float64(us)/1e6, 'f', -1, 64)
	return seedtest.Int(g.t, g.rdb, g.s, []string{g.key}, "2", "1", "0.1", now) == 1
}

// lastRefill is the guide's stored last_refill, in seconds.
func (g guideTB) lastRefill() float64 {
	g.t.Helper()
	v, err := g.rdb.HGet(context.Background(), g.key, "last_refill").Result()
	if err != nil {
		g.t.Fatalf("HGET last_refill: %v", err)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		g.t.Fatalf("last_refill %q: %v", v, err)
	}
	return f
}

func newTieLimiter(t *testing.T, rdb *redis.Client, prefix string) (*ratekit.Limiter, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(time.UnixMicro(tieStart))
	lim, err := tokenbucket.New(seedtest.Store(t, rdb), tokenbucket.Config{
		Capacity: 2, RefillRate: 1, RefillInterval: tieInterval * time.Microsecond,
		Prefix: prefix, Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	return lim, clock
}

func ours(t *testing.T, lim *ratekit.Limiter, clock *fakeclock.Clock, us int64) bool {
	t.Helper()
	clock.Set(time.UnixMicro(us))
	d, err := lim.Allow(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	return d.Allowed
}

// TestSeedTokenBucketFloatTie: a bucket drained at 1700000000 s refills exactly
// 0.1 s later. The guide computes 1700000000.1 - 1700000000 as
// 0.09999990463256836 (1700000000.1 rounds down to a double), so
// math.floor(0.9999990463256836) refills nothing and it denies; ratekit's
// (1700000000100000 - 1700000000000000) / 100000 is exactly 1 and it
// allows. One microsecond later the guide refills too.
func TestSeedTokenBucketFloatTie(t *testing.T) {
	rdb := seedtest.Client(t)
	g := guideTB{t, rdb, redis.NewScript(seedTokenBucket), "guide:tie"}
	lim, clock := newTieLimiter(t, rdb, "ours:tie:")

	for i := 0; i < 2; i++ {
		if gd, od := g.allow(tieStart), ours(t, lim, clock, tieStart); !gd || !od {
			t.Fatalf("draining request %d: guide %v, ratekit %v", i, gd, od)
		}
	}
	tie := int64(tieStart + tieInterval)
	if gd, od := g.allow(tie), ours(t, lim, clock, tie); gd || !od {
		t.Fatalf("at the exact refill 1700000000.1 s: guide allowed=%v (want false: its float refill count is 0.99999905), ratekit allowed=%v (want true: exactly 1 refill)", gd, od)
	}
	if !g.allow(tie + 1) {
		t.Fatal("the guide still denies 1 µs after the refill: the difference is no longer a tie")
	}
}

// TestSeedTokenBucketLastRefillDrift: each refill adds 0.1 to the guide's float
// last_refill, and the sum rounds to 0.1 s minus 0.4 steps of 2^-22 s:
// 0.0954 µs early per refill. The string Redis stores reads back as the
// same double, so the drift is the additions' alone. After 21 single
// refills its last_refill is 1700000002.0999979973, 2.0027 µs before the
// exact 1700000002.1 that ratekit stores; the guide then refills 1 µs
// early: it allows at 1700000002.199999 s, where ratekit, 1 µs before its
// refill, denies (and it denies at 1700000002.199998 s).
func TestSeedTokenBucketLastRefillDrift(t *testing.T) {
	rdb := seedtest.Client(t)
	g := guideTB{t, rdb, redis.NewScript(seedTokenBucket), "guide:drift"}
	lim, clock := newTieLimiter(t, rdb, "ours:drift:")

	for i := 0; i < 2; i++ {
		if gd, od := g.allow(tieStart), ours(t, lim, clock, tieStart); !gd || !od {
			t.Fatalf("draining request %d: guide %v, ratekit %v", i, gd, od)
		}
	}
	// One request mid-interval after each refill: one token in, one out,
	// so ratekit's bucket never fills and keeps its phase, as the guide's.
	const refills = 21
	sum := float64(tieStart) / 1e6
	for k := int64(1); k <= refills; k++ {
		at := tieStart + k*tieInterval + tieInterval/2
		if gd, od := g.allow(at), ours(t, lim, clock, at); !gd || !od {
			t.Fatalf("refill %d: guide %v, ratekit %v", k, gd, od)
		}
		sum += 0.1
	}

	exact := int64(tieStart + refills*tieInterval)
	st := seedtest.State(t, rdb, "ours:drift:{k}")
	// The state is tokens, last_refill, the moment it is full again, and
	// the capacity that wrote it (tokenbucket.lua).
	if len(st) != 4 || st[0] != 0 || st[1] != exact {
		t.Fatalf("ratekit's state %v, want tokens 0 and last_refill %d", st, exact)
	}
	last := g.lastRefill()
	if last != sum {
		t.Fatalf("the guide's last_refill reads back as %.17g, not its float sum %.17g", last, sum)
	}
	drift := (last-float64(tieStart)/1e6)*1e6 - refills*tieInterval // µs; the subtraction is exact
	if want := -8.4 * 0x1p-22 * 1e6; math.Abs(drift-want) > 1e-6 {
		t.Fatalf("the guide's last_refill %.17g is %.4f µs from the exact %d µs, want %.4f µs", last, drift, exact, want)
	}

	next := exact + tieInterval
	if g.allow(next - 2) {
		t.Fatal("the guide refills 2 µs before the exact refill: the drift grew")
	}
	gd, od := g.allow(next-1), ours(t, lim, clock, next-1)
	if !gd || od {
		t.Fatalf("1 µs before the exact refill: guide allowed=%v (want true: its drifted phase refills early), ratekit allowed=%v (want false)", gd, od)
	}
}
