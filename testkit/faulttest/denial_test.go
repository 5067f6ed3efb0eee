package faulttest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// batchLimiter is what every algorithm's *Limiter offers.
type batchLimiter interface {
	core.Limiter
	AllowMany(ctx context.Context, reqs []core.Request) []core.Result
}

// denialLimit is the limit of every limiter below: at one instant, exactly
// this many requests of cost 1 pass.
const denialLimit = 3

// denialLimiter builds a with a limit of denialLimit, every other count 1
// and every duration period(clock), or, in server-time mode, the period of
// serverTimePeriods when a has one.
func denialLimiter(a algorithms.Algorithm, r core.ScriptRunner, prefix string, clock core.Clock) (batchLimiter, error) {
	d := period(clock)
	if p, ok := serverTimePeriods[a.Name]; ok && clock == nil {
		d = p
	}
	l, err := a.New(r, limitParams(a, denialLimit, 1, d), clock, prefix)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// serverTimePeriods are the periods, in server-time mode, of the
// algorithms for which a day is not enough: the sliding counter's windows
// are aligned to the epoch, so its window is about 24 years, which holds
// every time from 2017 to 2041.
var serverTimePeriods = map[string]time.Duration{
	"slidingcounter": time.Duration(params.MaxSpan/denialLimit) * time.Microsecond,
}

// period is every duration of the limiters of TestDenialWritesNothing.
// With a client clock, which only the test moves, a minute. In server-time
// mode (clock nil), long enough that no refill, leak or window boundary
// can come while the test runs, however slowly: a day (but see
// serverTimePeriods).
func period(clock core.Clock) time.Duration {
	if clock == nil {
		return 24 * time.Hour
	}
	return time.Minute
}

// denialStart is the fake clocks' start: mid-minute, so that the sliding
// counter's minute windows (aligned to the epoch) have a current window
// half gone and a step of a second stays inside it.
var denialStart = time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)

// keyState is what a denied request must leave as it was: the key's value
// (DUMP, byte for byte), its TTL (PTTL, which can only fall unless the key
// is rewritten), the number of keys, and the server's count of changes
// since the last save (every write command adds to it; nothing saves here).
type keyState struct {
	dump    string
	pttl    time.Duration
	dbsize  int64
	changes int64
}

func (s keyState) String() string {
	return fmt.Sprintf("DUMP %q, PTTL %v, DBSIZE %d, rdb_changes_since_last_save %d", s.dump, s.pttl, s.dbsize, s.changes)
}

// denialServer is a redis-server, a go-redis client of it, and a store
// over that client.
type denialServer struct {
	rdb   *goredis.Client
	store core.ScriptRunner
}

func startDenialServer(t *testing.T) *denialServer {
	srv := redistest.Start(t)
	// Long timeouts: the machine may be saturated, and no call here is
	// meant to time out.
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { rdb.Close() })
	store, err := goredisstore.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	return &denialServer{rdb: rdb, store: store}
}

// state reads key's keyState; a key that is absent has an empty dump.
func (s *denialServer) state(t *testing.T, key string) keyState {
	t.Helper()
	ctx := context.Background()
	var st keyState
	dump, err := s.rdb.Dump(ctx, key).Result()
	if err != nil && err != goredis.Nil {
		t.Fatalf("DUMP %s: %v", key, err)
	}
	st.dump = dump
	if st.pttl, err = s.rdb.PTTL(ctx, key).Result(); err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	if st.dbsize, err = s.rdb.DBSize(ctx).Result(); err != nil {
		t.Fatalf("DBSIZE: %v", err)
	}
	info, err := s.rdb.Info(ctx, "persistence").Result()
	if err != nil {
		t.Fatalf("INFO persistence: %v", err)
	}
	st.changes = -1
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "rdb_changes_since_last_save:"); ok {
			if st.changes, err = strconv.ParseInt(v, 10, 64); err != nil {
				t.Fatalf("INFO persistence: %q: %v", line, err)
			}
		}
	}
	if st.changes < 0 {
		t.Fatalf("INFO persistence has no rdb_changes_since_last_save: %q", info)
	}
	return st
}

// unchanged fails t unless after shows that nothing was written since
// before: the same value byte for byte, a TTL that did not grow, as many
// keys, and no write command at all.
func unchanged(t *testing.T, what string, before, after keyState) {
	t.Helper()
	if after.dump != before.dump {
		t.Errorf("%s rewrote the key: DUMP was %q, now %q", what, before.dump, after.dump)
	}
	if before.dump != "" && (after.pttl > before.pttl || after.pttl <= 0) {
		t.Errorf("%s reset the key's TTL: PTTL was %v, now %v", what, before.pttl, after.pttl)
	}
	if after.dbsize != before.dbsize {
		t.Errorf("%s changed the number of keys: DBSIZE was %d, now %d", what, before.dbsize, after.dbsize)
	}
	if after.changes != before.changes {
		t.Errorf("%s wrote: %d write(s) counted by the server (before: %v; after: %v)", what, after.changes-before.changes, before, after)
	}
}

// deniedOps makes denied requests of every kind on key, whose state lets
// no request of cost need or more pass, and checks after each that it
// wrote nothing.
func deniedOps(t *testing.T, s *denialServer, lim batchLimiter, key, storageKey string, need int64) {
	t.Helper()
	ctx := context.Background()
	denied := func(what string, d core.Decision, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if d.Allowed {
			t.Fatalf("%s allowed (%+v); the test needs it denied", what, d)
		}
	}
	check := func(what string, op func()) {
		t.Helper()
		before := s.state(t, storageKey)
		if before.dump == "" {
			t.Fatalf("before %s: no state at %q", what, storageKey)
		}
		op()
		unchanged(t, what, before, s.state(t, storageKey))
	}
	for _, n := range []int64{need, denialLimit} {
		check(fmt.Sprintf("AllowN(%d)", n), func() {
			d, err := lim.AllowN(ctx, key, n)
			denied(fmt.Sprintf("AllowN(%d)", n), d, err)
		})
	}
	check("Peek", func() {
		if _, err := lim.Peek(ctx, key); err != nil {
			t.Fatalf("Peek: %v", err)
		}
	})
	check("AllowMany", func() {
		reqs := []core.Request{{Key: key, N: need}, {Key: key, N: denialLimit}, {Key: key, N: need}}
		for i, r := range lim.AllowMany(ctx, reqs) {
			denied(fmt.Sprintf("AllowMany result %d (N=%d)", i, reqs[i].N), r.Decision, r.Err)
		}
	})
	if g, ok := lim.(*ratekit.Limiter); ok && g.Algorithm() == "gcra" && need == 1 {
		// Nothing fits: AllowAtMost grants nothing, and writes nothing.
		check("AllowAtMost", func() {
			granted, d, err := g.AllowAtMost(ctx, key, denialLimit+2)
			if err != nil || granted != 0 || d.Allowed {
				t.Fatalf("AllowAtMost = %d, %+v, %v; the test needs nothing granted", granted, d, err)
			}
		})
	}
}

// TestDenialWritesNothing: a denied request writes nothing, for every
// algorithm on a real redis-server over go-redis, with a client clock and
// in server-time mode. A denial leaves the key's value byte for byte, its
// TTL (which a rewrite would set back up), the number of keys, and the
// server's count of writes as they were.
func TestDenialWritesNothing(t *testing.T) {
	s := startDenialServer(t)
	ctx := context.Background()
	for _, mode := range []string{"client-clock", "server-time"} {
		for _, a := range algorithms.All {
			t.Run(mode+"/"+a.Name, func(t *testing.T) {
				var clock *fakeclock.Clock
				var c core.Clock // nil in server-time mode, not a nil *fakeclock.Clock
				if mode == "client-clock" {
					clock = fakeclock.New(denialStart)
					c = clock
				}
				prefix := fmt.Sprintf("denial:%d:%s:%s:", time.Now().UnixNano(), mode, a.Name)
				lim, err := denialLimiter(a, s.store, prefix, c)
				if err != nil {
					t.Fatal(err)
				}

				// A key driven until a request is denied; that first denial
				// must write nothing either.
				const key = "user:full"
				storageKey := keyspace.Key(prefix, key, "")
				allowed := 0
				for {
					before := s.state(t, storageKey)
					d, err := lim.Allow(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					if !d.Allowed {
						unchanged(t, "the first denied Allow", before, s.state(t, storageKey))
						break
					}
					if allowed++; allowed > denialLimit {
						t.Fatalf("request %d allowed over a limit of %d", allowed, denialLimit)
					}
				}
				if allowed != denialLimit {
					t.Fatalf("%d requests allowed before the first denial, want %d", allowed, denialLimit)
				}
				deniedOps(t, s, lim, key, storageKey, 1)
				if clock != nil {
					// A second later nothing passes yet, but the state a
					// denial would compute now differs from the stored one
					// (a leaky bucket's level, say): writing it would show.
					clock.Advance(time.Second)
					deniedOps(t, s, lim, key, storageKey, 1)
				}

				// A key with room for less than what is asked: 2 of 3 used,
				// a request of cost 2 is denied.
				const partial = "user:partial"
				partialKey := keyspace.Key(prefix, partial, "")
				if d, err := lim.AllowN(ctx, partial, denialLimit-1); err != nil || !d.Allowed {
					t.Fatalf("AllowN(%d) on a fresh key = %+v, %v", denialLimit-1, d, err)
				}
				deniedOps(t, s, lim, partial, partialKey, 2)

				// Peek on a key that does not exist creates nothing.
				const absent = "user:absent"
				absentKey := keyspace.Key(prefix, absent, "")
				before := s.state(t, absentKey)
				if d, err := lim.Peek(ctx, absent); err != nil || !d.Allowed {
					t.Fatalf("Peek on an absent key = %+v, %v", d, err)
				}
				after := s.state(t, absentKey)
				unchanged(t, "Peek on an absent key", before, after)
				if after.dump != "" {
					t.Errorf("Peek on an absent key created it: %v", after)
				}
			})
		}
	}
}

// TestDenialWritesNothingSlidingLogClockBack: the sliding log's denial
// writes nothing even when its log holds an entry that has left the
// window (an allowed request would remove it), and after the client clock
// steps back by part of the window, when the request is decided as at the
// newest entry's time.
func TestDenialWritesNothingSlidingLogClockBack(t *testing.T) {
	s := startDenialServer(t)
	ctx := context.Background()
	clock := fakeclock.New(denialStart)
	prefix := fmt.Sprintf("denial:%d:slidinglog-back:", time.Now().UnixNano())
	lim, err := slidinglog.New(s.store, slidinglog.Config{Limit: 3, Window: 10 * time.Second, Prefix: prefix, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	const key = "user:back"
	storageKey := keyspace.Key(prefix, key, "")
	allow := func(n int64) {
		t.Helper()
		if d, err := lim.AllowN(ctx, key, n); err != nil || !d.Allowed {
			t.Fatalf("AllowN(%d) at %v = %+v, %v", n, clock.Now(), d, err)
		}
	}
	allow(1) // t0
	clock.Advance(8 * time.Second)
	allow(2) // t0+8s: the log is full
	// At t0+11s the entry of t0 has left the window but is still stored:
	// only an allowed request removes entries.
	clock.Advance(3 * time.Second)
	if n, err := s.rdb.ZCard(ctx, storageKey).Result(); err != nil || n != 3+1 {
		t.Fatalf("ZCARD = %d, %v; want 3 entries and the expiry mark", n, err)
	}
	deniedOps(t, s, lim, key, storageKey, 2)

	// Back 5 s, then 3 s more (to t0+3s): the clock is behind the newest
	// entry (t0+8s), the log is decided as at that time, with all three
	// entries in the window: every request is denied.
	for _, back := range []time.Duration{5 * time.Second, 3 * time.Second} {
		clock.Advance(-back)
		deniedOps(t, s, lim, key, storageKey, 1)
	}
	if n, err := s.rdb.ZCard(ctx, storageKey).Result(); err != nil || n != 3+1 {
		t.Fatalf("ZCARD = %d, %v after the denials; want the same 4 members", n, err)
	}
}
