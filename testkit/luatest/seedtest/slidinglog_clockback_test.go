package seedtest_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
	"github.com/ratekit/ratekit/testkit/luatest/seedtest"
)

// Client clocks of several application servers disagree: a request can
// come "from the past". The script and its twin must still agree, and
// every unit of cost must stay a distinct member.
func TestSlidingLogClockGoingBack(t *testing.T) {
	rdb := seedtest.Client(t)
	clock := fakeclock.New(time.UnixMicro(1_700_000_000_000_000))
	mem, _ := memory.New(memory.WithClock(clock))
	defer mem.Close()
	cfg := slidinglog.Config{Limit: 6, Window: 10 * time.Second, Clock: clock}
	want, _ := slidinglog.New(mem, cfg)
	got, _ := slidinglog.New(seedtest.Store(t, rdb), cfg)
	ctx := context.Background()
	steps := []struct {
		d time.Duration
		n int64
	}{{0, 2}, {-5 * time.Second, 1}, {5 * time.Second, 2}, {-time.Second, 1}, {time.Second, 1}, {11 * time.Second, 3}, {-12 * time.Second, 2}}
	for i, s := range steps {
		clock.Advance(s.d)
		dw, ew := want.AllowN(ctx, "k", s.n)
		dg, eg := got.AllowN(ctx, "k", s.n)
		if ew != nil || eg != nil || !reflect.DeepEqual(dw, dg) {
			t.Fatalf("step %d: memory %+v %v, redis %+v %v", i, dw, ew, dg, eg)
		}
		pw, _ := want.Peek(ctx, "k")
		pg, _ := got.Peek(ctx, "k")
		if !reflect.DeepEqual(pw, pg) {
			t.Fatalf("step %d peek: memory %+v, redis %+v", i, pw, pg)
		}
	}
	members, err := rdb.ZRange(ctx, "ratekit:sl:{k}", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m] {
			t.Fatalf("member %q twice", m)
		}
		seen[m] = true
	}
	t.Logf("%d members", len(members))
}
