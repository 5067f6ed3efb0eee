package concurrency_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

const s = time.Second

// store is one store the walks run on: the memory store, whose Go twin
// is the reference, and miniredis, which runs the Lua step.
type store struct {
	name string
	new  func(t *testing.T) core.ScriptRunner
}

var stores = []store{
	{"memory", func(t *testing.T) core.ScriptRunner { return limitertest.New(t).Store }},
	{"miniredis", func(t *testing.T) core.ScriptRunner {
		m := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		st, err := goredisstore.New(c, scriptproto.WithoutReadOnlyCommands())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

// env is a limiter factory on one store, with a fake clock every limiter
// shares.
type env struct {
	t      *testing.T
	runner core.ScriptRunner
	clock  *limitertest.Env
}

func (e *env) limiter(cfg concurrency.Config) *concurrency.Limiter {
	e.t.Helper()
	cfg.Clock = e.clock.Clock
	l, err := concurrency.New(e.runner, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func each(t *testing.T, f func(t *testing.T, e *env)) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			f(t, &env{t: t, runner: st.new(t), clock: limitertest.New(t)})
		})
	}
}

var ctx = context.Background()

// acquire and peek check every field of the decision; want's Window is
// the limiter's TTL, which every decision of a concurrency limiter carries.
func acquire(t *testing.T, l *concurrency.Limiter, key string, n int64, want core.Decision) concurrency.Lease {
	t.Helper()
	lease, d, err := l.AcquireN(ctx, key, n)
	if err != nil {
		t.Fatalf("AcquireN(%q, %d): %v", key, n, err)
	}
	want.Window = l.TTL()
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("AcquireN(%q, %d):\n got  %+v\n want %+v", key, n, d, want)
	}
	if d.Allowed != (lease != concurrency.Lease{}) {
		t.Fatalf("AcquireN(%q, %d) allowed %v with lease %+v", key, n, d.Allowed, lease)
	}
	return lease
}

func peek(t *testing.T, l *concurrency.Limiter, key string, want core.Decision) {
	t.Helper()
	want.Window = l.TTL()
	d, err := l.Peek(ctx, key)
	if err != nil || !reflect.DeepEqual(d, want) {
		t.Fatalf("Peek(%q):\n got  %+v, %v\n want %+v", key, d, err, want)
	}
}

func release(t *testing.T, l *concurrency.Limiter, lease concurrency.Lease, want bool) {
	t.Helper()
	if got, err := l.Release(ctx, lease); err != nil || got != want {
		t.Fatalf("Release(%+v) = %v, %v; want %v", lease, got, err, want)
	}
}

func extend(t *testing.T, l *concurrency.Limiter, lease concurrency.Lease, want bool) {
	t.Helper()
	if got, err := l.Extend(ctx, lease); err != nil || got != want {
		t.Fatalf("Extend(%+v) = %v, %v; want %v", lease, got, err, want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	env := limitertest.New(t)
	ok := concurrency.Config{Limit: 10, TTL: time.Minute}
	for _, c := range []struct {
		name, field string
		edit        func(*concurrency.Config)
	}{
		{"zero limit", "Limit", func(c *concurrency.Config) { c.Limit = 0 }},
		{"negative limit", "Limit", func(c *concurrency.Config) { c.Limit = -1 }},
		{"limit above MaxLimit", "MaxLimit", func(c *concurrency.Config) { c.Limit = concurrency.MaxLimit + 1 }},
		{"zero TTL", "TTL", func(c *concurrency.Config) { c.TTL = 0 }},
		{"negative TTL", "TTL", func(c *concurrency.Config) { c.TTL = -time.Second }},
		{"sub-microsecond TTL", "TTL", func(c *concurrency.Config) { c.TTL = s + 1 }},
		{"prefix with brace", "Prefix", func(c *concurrency.Config) { c.Prefix = "a{" }},
	} {
		cfg := ok
		c.edit(&cfg)
		limitertest.BadConfig(t, c.name, c.field, func() error { _, err := concurrency.New(env.Store, cfg); return err })
	}
	if _, err := concurrency.New(nil, ok); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("nil store: %v", err)
	}
	if _, err := concurrency.New(env.Store, concurrency.Config{Limit: concurrency.MaxLimit, TTL: s}); err != nil {
		t.Errorf("Limit = MaxLimit: %v", err)
	}
}

// A walk through every call, on the twin and on the Lua step.
func TestLeases(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		l := e.limiter(concurrency.Config{Limit: 3, TTL: 10 * s})
		if l.Limit() != 3 || l.TTL() != 10*s {
			t.Fatalf("Limit, TTL = %d, %v", l.Limit(), l.TTL())
		}
		first := acquire(t, l, "k", 1, core.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 10 * s})
		e.clock.Clock.Advance(s)
		second := acquire(t, l, "k", 2, core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 10 * s})
		if first.Key != "k" || first.N != 1 || second.N != 2 || len(first.ID) != 32 || first.ID == second.ID {
			t.Fatalf("leases %+v, %+v", first, second)
		}
		e.clock.Clock.Advance(s) // 2 s: first expires at 10 s, second at 11 s
		acquire(t, l, "k", 1, core.Decision{Limit: 3, RetryAfter: 8 * s, ResetAfter: 9 * s})
		acquire(t, l, "k", 3, core.Decision{Limit: 3, RetryAfter: 9 * s, ResetAfter: 9 * s})
		peek(t, l, "k", core.Decision{Limit: 3, RetryAfter: 8 * s, ResetAfter: 9 * s})
		acquire(t, l, "other", 3, core.Decision{Allowed: true, Limit: 3, ResetAfter: 10 * s})

		release(t, l, first, true)
		peek(t, l, "k", core.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 9 * s})
		release(t, l, first, false) // already released
		extend(t, l, first, false)

		// Nothing frees a slot but the lease itself.
		forged := second
		forged.ID = "0123456789abcdef0123456789abcdef"
		otherKey := second
		otherKey.Key = "other"
		cheaper := second
		cheaper.N = 1
		for _, bad := range []concurrency.Lease{forged, otherKey, cheaper} {
			release(t, l, bad, false)
			extend(t, l, bad, false)
		}
		peek(t, l, "k", core.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 9 * s})
		peek(t, l, "other", core.Decision{Limit: 3, RetryAfter: 10 * s, ResetAfter: 10 * s})

		// Extended at 2 s, second lives until 12 s.
		extend(t, l, second, true)
		peek(t, l, "k", core.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 10 * s})
		e.clock.Clock.Advance(10*s - time.Microsecond)
		peek(t, l, "k", core.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: time.Microsecond})
		e.clock.Clock.Advance(time.Microsecond) // 12 s: expired
		peek(t, l, "k", core.Decision{Allowed: true, Limit: 3, Remaining: 3})
		extend(t, l, second, false)
		release(t, l, second, false)

		third := acquire(t, l, "k", 3, core.Decision{Allowed: true, Limit: 3, ResetAfter: 10 * s})
		if err := l.Reset(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		peek(t, l, "k", core.Decision{Allowed: true, Limit: 3, Remaining: 3})
		release(t, l, third, false)
	})
}

// A holder that never releases (it crashed) holds its slots for exactly
// TTL: not a microsecond less, not a microsecond more.
func TestCrashedHolder(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		l := e.limiter(concurrency.Config{Limit: 2, TTL: 5 * s})
		acquire(t, l, "k", 2, core.Decision{Allowed: true, Limit: 2, ResetAfter: 5 * s})
		e.clock.Clock.Advance(5*s - time.Microsecond)
		acquire(t, l, "k", 1, core.Decision{Limit: 2, RetryAfter: time.Microsecond, ResetAfter: time.Microsecond})
		e.clock.Clock.Advance(time.Microsecond)
		acquire(t, l, "k", 2, core.Decision{Allowed: true, Limit: 2, ResetAfter: 5 * s})
	})
}

// Costs: RetryAfter is the wait until enough units have expired for n.
func TestCosts(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		l := e.limiter(concurrency.Config{Limit: 10, TTL: 10 * s})
		a := acquire(t, l, "k", 4, core.Decision{Allowed: true, Limit: 10, Remaining: 6, ResetAfter: 10 * s})
		e.clock.Clock.Advance(s)
		acquire(t, l, "k", 5, core.Decision{Allowed: true, Limit: 10, Remaining: 1, ResetAfter: 10 * s})
		e.clock.Clock.Advance(s)
		// 2 more need a's 4 units gone (at 10 s); 6 more need b's too (at 11 s).
		acquire(t, l, "k", 2, core.Decision{Limit: 10, Remaining: 1, RetryAfter: 8 * s, ResetAfter: 9 * s})
		acquire(t, l, "k", 5, core.Decision{Limit: 10, Remaining: 1, RetryAfter: 8 * s, ResetAfter: 9 * s})
		acquire(t, l, "k", 6, core.Decision{Limit: 10, Remaining: 1, RetryAfter: 9 * s, ResetAfter: 9 * s})
		release(t, l, a, true)
		acquire(t, l, "k", 5, core.Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 10 * s})
	})
}

// A lowered Limit bites at once; leases keep the expiry they were written
// with, and Extend never shortens one.
func TestReconfigure(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		wide := e.limiter(concurrency.Config{Limit: 5, TTL: 10 * s, Prefix: "rc:"})
		var leases []concurrency.Lease
		for i := range 5 {
			leases = append(leases, acquire(t, wide, "k", 1, core.Decision{Allowed: true, Limit: 5, Remaining: int64(4 - i), ResetAfter: 10 * s}))
			e.clock.Clock.Advance(s)
		}
		// At 5 s, expiries 10..14 s. Limit 2: one more needs 4 of them gone.
		narrow := e.limiter(concurrency.Config{Limit: 2, TTL: time.Second, Prefix: "rc:"})
		acquire(t, narrow, "k", 1, core.Decision{Limit: 2, RetryAfter: 8 * s, ResetAfter: 9 * s})
		extend(t, narrow, leases[0], true) // would be 6 s: stays at 10 s
		peek(t, narrow, "k", core.Decision{Limit: 2, RetryAfter: 8 * s, ResetAfter: 9 * s})
		release(t, narrow, leases[4], true)
		peek(t, narrow, "k", core.Decision{Limit: 2, RetryAfter: 7 * s, ResetAfter: 8 * s})
		e.clock.Clock.Advance(7 * s) // 12 s: only leases[3] is live
		peek(t, narrow, "k", core.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: s})
	})
}

// A clock behind the leases' writes only makes them look longer-lived.
func TestClockBehind(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		l := e.limiter(concurrency.Config{Limit: 2, TTL: 10 * s})
		e.clock.Clock.Advance(20 * s)
		a := acquire(t, l, "k", 1, core.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 10 * s})
		e.clock.Clock.Advance(-15 * s) // 5 s; a expires at 30 s
		acquire(t, l, "k", 1, core.Decision{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: 25 * s})
		acquire(t, l, "k", 1, core.Decision{Limit: 2, RetryAfter: 10 * s, ResetAfter: 25 * s})
		release(t, l, a, true)
		peek(t, l, "k", core.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 10 * s})
	})
}

func TestBadCalls(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		l := e.limiter(concurrency.Config{Limit: 3, TTL: 10 * s})
		held := acquire(t, l, "k", 1, core.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 10 * s})
		secondErr := func(_ concurrency.Lease, _ core.Decision, err error) error { return err }
		badID := func(id string) concurrency.Lease { return concurrency.Lease{Key: "k", N: 1, ID: id} }
		hugeKey := strings.Repeat("x", core.MaxKeyLen+1)
		for _, c := range []struct {
			name string
			err  error
			want error
		}{
			{"empty key", secondErr(l.Acquire(ctx, "")), core.ErrInvalidKey},
			{"huge key", secondErr(l.Acquire(ctx, hugeKey)), core.ErrInvalidKey},
			{"zero cost", secondErr(l.AcquireN(ctx, "k", 0)), core.ErrInvalidCost},
			{"negative cost", secondErr(l.AcquireN(ctx, "k", -1)), core.ErrInvalidCost},
			{"cost above limit", secondErr(l.AcquireN(ctx, "k", 4)), core.ErrInvalidCost},
			{"peek empty key", func() error { _, err := l.Peek(ctx, ""); return err }(), core.ErrInvalidKey},
			{"reset empty key", l.Reset(ctx, ""), core.ErrInvalidKey},
		} {
			if !errors.Is(c.err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
			}
		}
		for _, c := range []struct {
			name  string
			lease concurrency.Lease
			want  error
		}{
			{"zero lease", concurrency.Lease{}, core.ErrInvalidLease},
			{"empty ID", badID(""), core.ErrInvalidLease},
			{"short ID", badID(held.ID[:31]), core.ErrInvalidLease},
			{"long ID", badID(held.ID + "0"), core.ErrInvalidLease},
			{"upper-case ID", badID("0123456789ABCDEF0123456789ABCDEF"), core.ErrInvalidLease},
			{"not hex", badID(strings.Repeat("g", 32)), core.ErrInvalidLease},
			{"zero N", concurrency.Lease{Key: "k", N: 0, ID: held.ID}, core.ErrInvalidLease},
			{"negative N", concurrency.Lease{Key: "k", N: -1, ID: held.ID}, core.ErrInvalidLease},
			{"N above MaxLimit", concurrency.Lease{Key: "k", N: concurrency.MaxLimit + 1, ID: held.ID}, core.ErrInvalidLease},
			{"empty key", concurrency.Lease{Key: "", N: 1, ID: held.ID}, core.ErrInvalidKey},
			{"huge key", concurrency.Lease{Key: hugeKey, N: 1, ID: held.ID}, core.ErrInvalidKey},
		} {
			ok, err := l.Release(ctx, c.lease)
			if ok || !errors.Is(err, c.want) || !errors.Is(err, core.ErrInvalidLease) {
				t.Errorf("Release(%s) = %v, %v; want %v and ErrInvalidLease", c.name, ok, err, c.want)
			}
			// The ID is a secret: errors reach logs and traces.
			if err != nil && len(held.ID) > 0 && strings.Contains(err.Error(), held.ID[:16]) {
				t.Errorf("Release(%s): the error shows the ID: %v", c.name, err)
			}
			if ok, err := l.Extend(ctx, c.lease); ok || !errors.Is(err, c.want) {
				t.Errorf("Extend(%s) = %v, %v; want %v", c.name, ok, err, c.want)
			}
		}
		// None of them changed anything.
		peek(t, l, "k", core.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 10 * s})
		release(t, l, held, true)

		// Times the limiter cannot compute with.
		for _, at := range []time.Time{time.Unix(-1, 0), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)} {
			e.clock.Clock.Set(at)
			if _, _, err := l.Acquire(ctx, "k"); !errors.Is(err, core.ErrInvalidTime) {
				t.Errorf("Acquire at %v: %v", at, err)
			}
			if _, err := l.Release(ctx, held); !errors.Is(err, core.ErrInvalidTime) {
				t.Errorf("Release at %v: %v", at, err)
			}
		}
	})
}

// A call whose context has ended sends nothing.
func TestEndedContext(t *testing.T) {
	env := limitertest.New(t)
	l, err := concurrency.New(env.Store, concurrency.Config{Limit: 1, TTL: s, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	lease, _, err := l.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := l.Acquire(done, "j"); !errors.Is(err, core.ErrStore) || !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire: %v", err)
	}
	if ok, err := l.Release(done, lease); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("Release: %v, %v", ok, err)
	}
	if env.Store.Len() != 1 {
		t.Errorf("%d keys stored", env.Store.Len())
	}
	if ok, err := l.Release(ctx, lease); !ok || err != nil {
		t.Errorf("Release after the ended calls: %v, %v", ok, err)
	}
}

// Lease ids are distinct and hex; nothing in them comes from the key, the
// time or a counter.
func TestLeaseIDs(t *testing.T) {
	env := limitertest.New(t)
	l, err := concurrency.New(env.Store, concurrency.Config{Limit: concurrency.MaxLimit, TTL: s, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var prefixes [16]int
	for range 2000 {
		lease, d, err := l.Acquire(ctx, "k")
		if err != nil || !d.Allowed {
			t.Fatalf("Acquire: %+v, %v", d, err)
		}
		if seen[lease.ID] || len(lease.ID) != 32 {
			t.Fatalf("ID %q repeated or malformed", lease.ID)
		}
		seen[lease.ID] = true
		prefixes[strings.IndexByte("0123456789abcdef", lease.ID[0])]++
	}
	// 2000 uniform draws: each first digit about 125 times, never under 50.
	for d, n := range prefixes {
		if n < 50 {
			t.Errorf("first hex digit %x appeared %d times in 2000 ids", d, n)
		}
	}
}

// The Lease of a denial is the zero Lease, which Release refuses.
func TestDeniedLease(t *testing.T) {
	env := limitertest.New(t)
	l, _ := concurrency.New(env.Store, concurrency.Config{Limit: 1, TTL: s, Clock: env.Clock})
	if _, d, err := l.Acquire(ctx, "k"); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	lease, d, err := l.Acquire(ctx, "k")
	if err != nil || d.Allowed || lease != (concurrency.Lease{}) {
		t.Fatalf("Acquire on a full key: %+v, %+v, %v", lease, d, err)
	}
	if _, err := l.Release(ctx, lease); !errors.Is(err, core.ErrInvalidLease) {
		t.Fatalf("Release of the zero lease: %v", err)
	}
}

// The key's TTL follows its last lease, and only a granted acquire, a
// release and an extension of a live lease write: on the Lua step, where
// Redis keeps the TTL.
func TestKeyTTLAndWrites(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	clock := limitertest.New(t).Clock
	st, err := goredisstore.New(c, scriptproto.WithoutReadOnlyCommands())
	if err != nil {
		t.Fatal(err)
	}
	l, err := concurrency.New(st, concurrency.Config{Limit: 2, TTL: 10 * s, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	const key = "ratekit:cc:{k}"
	slack := time.Minute // the limiter has its own Clock
	state := func() string {
		if !m.Exists(key) {
			return "absent"
		}
		members, err := m.ZMembers(key)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{m.TTL(key).String()}
		for _, mem := range members {
			score, _ := m.ZScore(key, mem)
			out = append(out, fmt.Sprintf("%.0f", score))
		}
		return strings.Join(out, " ")
	}
	wantTTL := func(want time.Duration) {
		t.Helper()
		if got := m.TTL(key); got != want+slack {
			t.Fatalf("TTL %v, want %v", got, want+slack)
		}
	}
	unchanged := func(what string, f func()) {
		t.Helper()
		before := state()
		f()
		if after := state(); after != before {
			t.Fatalf("%s wrote: %s, then %s", what, before, after)
		}
	}
	a, _, _ := l.Acquire(ctx, "k")
	wantTTL(10 * s)
	clock.Advance(s)
	b, _, _ := l.Acquire(ctx, "k")
	wantTTL(10 * s)
	unchanged("a denial", func() { l.Acquire(ctx, "k") })
	unchanged("a peek", func() { l.Peek(ctx, "k") })
	forged := a
	forged.ID = strings.Repeat("0", 32)
	unchanged("a forged release", func() { l.Release(ctx, forged) })
	unchanged("a forged extension", func() { l.Extend(ctx, forged) })
	clock.Advance(s)
	release(t, l, b, true) // a, expiring at 10 s, is left
	wantTTL(8 * s)
	extend(t, l, a, true) // until 12 s
	wantTTL(10 * s)
	release(t, l, a, true)
	if m.Exists(key) {
		t.Fatalf("the key outlived its last lease: %s", state())
	}
	// An expired lease is dropped by the next write.
	l.Acquire(ctx, "k")
	clock.Advance(10 * s)
	unchanged("a release of an expired lease", func() { l.Release(ctx, a) })
	c2, _, _ := l.Acquire(ctx, "k")
	if members, _ := m.ZMembers(key); len(members) != 1 || !strings.HasPrefix(members[0], idOf(c2)) {
		t.Fatalf("members after a write: %q, want only the new lease", members)
	}
}

// idOf is a lease's member prefix in the Lua sorted set: its id as two
// decimal int64s.
func idOf(l concurrency.Lease) string {
	var id [16]byte
	hex.Decode(id[:], []byte(l.ID))
	return fmt.Sprintf("%d:%d:", int64(binary.BigEndian.Uint64(id[:8])), int64(binary.BigEndian.Uint64(id[8:])))
}
