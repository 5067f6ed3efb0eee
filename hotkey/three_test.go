package hotkey_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
)

// TestThreeProcesses: three OS processes, each with its own Budget and
// client, decide one key on a real redis-server as fast as they can.
//
// window: a limit of 20,000 per hour that the processes exhaust. No
// process allows more than its leases took, and the store's count is
// exactly the units allowed plus the units lost (Close gave the rest
// back), so in total at most the limit is allowed.
//
// gcra: 5,000 per second (RATEKIT_HOTKEY_RATE) in bursts of 20 ms of it (100), for 2 s. In total, at most
// Burst + Rate x (the run's length) is allowed; and in every window of
// length L (100 ms, 500 ms) at most Burst + Rate x (L + TTL) + 3 x Lease,
// the package doc's bound, counting only requests asked and answered
// within the window (a request answered later may have been allowed in
// the window or after it).
func TestThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: spawns processes")
	}
	srv := redistest.Start(t)
	const processes = 3

	t.Run("window", func(t *testing.T) {
		prefix := fmt.Sprintf("hk:w:%d:", time.Now().UnixNano())
		got := spawn(t, run{scenario: "window", addr: srv.Addr, prefix: prefix, processes: processes, goroutines: goroutinesPerProcess(), duration: 1500 * time.Millisecond})()
		sum := got.total()
		if sum.Errors != 0 {
			t.Fatalf("%d errors, first: %s", sum.Errors, sum.FirstError)
		}
		st := sum.Stats
		t.Logf("load %s: %d decisions, %d allowed of a limit of %d; %d leases took %d units, %d lost, %d given back by Close, %d decided by the store",
			loadavg(), sum.Decisions, sum.Allowed, windowLimit, st.Leases, st.Granted, st.Lost, st.Refunded, st.Direct)
		if sum.Allowed > windowLimit {
			t.Errorf("%d allowed, more than the limit of %d", sum.Allowed, windowLimit)
		}
		for i, r := range got.results {
			s := r.Stats
			if units := s.Granted - s.Refunded - s.Lost - s.Held + s.Direct; units != r.Allowed || s.Held != 0 {
				t.Errorf("process %d allowed %d, its Stats %+v account for %d", i, r.Allowed, s, units)
			}
		}
		counted := storeCount(t, srv.Addr, prefix)
		if want := st.Granted - st.Refunded + st.Direct; counted != want {
			t.Errorf("the store counts %d, the processes took %d (leases %d - given back %d + direct %d)", counted, want, st.Granted, st.Refunded, st.Direct)
		}
		if counted != sum.Allowed+st.Lost {
			t.Errorf("the store counts %d: not the %d allowed plus the %d lost", counted, sum.Allowed, st.Lost)
		}
		if sum.Allowed == 0 {
			t.Error("nothing was allowed")
		}
	})

	t.Run("gcra", func(t *testing.T) {
		sc := scenarios["gcra"]
		ttl, lease := sc.cfg.TTL, sc.cfg.Lease
		prefix := fmt.Sprintf("hk:g:%d:", time.Now().UnixNano())
		got := spawn(t, run{scenario: "gcra", addr: srv.Addr, prefix: prefix, processes: processes, goroutines: goroutinesPerProcess(), duration: 2 * time.Second, events: true})()
		sum := got.total()
		if sum.Errors != 0 {
			t.Fatalf("%d errors, first: %s", sum.Errors, sum.FirstError)
		}
		if int64(len(got.events)) != sum.Allowed {
			t.Fatalf("%d events for %d allowed", len(got.events), sum.Allowed)
		}
		for i, r := range got.results {
			s := r.Stats
			if units := s.Granted - s.Refunded - s.Lost - s.Held + s.Direct; units != r.Allowed {
				t.Errorf("process %d allowed %d, its Stats %+v account for %d", i, r.Allowed, s, units)
			}
		}
		// B(L) = Burst + Rate x L, in units x 1e9 to stay in integers.
		most := func(l time.Duration) int64 { return gcraBurst()*1e9 + gcraRate()*int64(l) }
		length := time.Duration(got.end - got.start)
		if sum.Allowed*1e9 > most(length) {
			t.Errorf("%d allowed in %v: more than Burst + Rate x %v = %.0f", sum.Allowed, length, length, float64(most(length))/1e9)
		}
		st := sum.Stats
		t.Logf("load %s: %d decisions in %v, %d allowed (the limit allows %.0f); %d leases took %d units, %d lost, %d given back by Close",
			loadavg(), sum.Decisions, length.Round(time.Millisecond), sum.Allowed, float64(most(length))/1e9, st.Leases, st.Granted, st.Lost, st.Refunded)

		slices.SortFunc(got.events, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		for _, l := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond} {
			bound := most(l+ttl) + processes*lease*1e9
			var worst, worstAt int64
			for a := got.start; a+int64(l) <= got.end; a += int64(5 * time.Millisecond) {
				var n int64
				i, _ := slices.BinarySearchFunc(got.events, a, func(e [2]int64, a int64) int { return int(e[0] - a) })
				for _, e := range got.events[i:] {
					if e[0] > a+int64(l) {
						break
					}
					if e[1] <= a+int64(l) {
						n++
					}
				}
				if n > worst {
					worst, worstAt = n, a
				}
				if n*1e9 > bound {
					t.Errorf("%d allowed in the %v from %v: more than B(L + TTL) + 3 x Lease = %.0f", n, l, time.Duration(a-got.start), float64(bound)/1e9)
					break
				}
			}
			t.Logf("windows of %v: at most %d allowed (from +%v); the limit's own B(L) is %.0f, overshoot %+.0f, bound B(L + TTL) + 3 x Lease = %.0f (overshoot at most %.0f)",
				l, worst, time.Duration(worstAt-got.start), float64(most(l))/1e9, float64(worst*1e9-most(l))/1e9, float64(bound)/1e9, float64(bound-most(l))/1e9)
		}
	})
}

// storeCount reads the fixed window's count at key "hot" under prefix.
func storeCount(t *testing.T, addr, prefix string) int64 {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	lim, err := fixedwindow.New(rueidisstore.New(client), fixedwindow.Config{Limit: windowLimit, Window: time.Hour, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	d, err := lim.Peek(ctx, "hot")
	if err != nil {
		t.Fatal(err)
	}
	return d.Limit - d.Remaining
}
