package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
)

// The concurrency limiter is not a rate algorithm (it is not in
// algorithms.All), so it has a state machine of its own: random acquires
// (costs included), releases and extensions of live, expired, released,
// forged and other keys' leases, peeks, resets, clock steps forward and
// back, and configuration changes, on the store under test and on the
// reference. Both must answer alike, and both must answer as a model of
// the leases does: every lease counts from its acquire until its expiry
// (acquire or last extension plus the TTL of the limiter that wrote it),
// unless released or reset, and an acquire passes exactly when the cost of
// the live leases plus its own is at most Limit.

// ccLease is one lease acquired on both stores, and the model's view of it.
type ccLease struct {
	want, got concurrency.Lease
	expires   int64 // µs
	gone      bool  // released, reset, or dropped by a write after it expired
}

type ccConfig struct {
	limit int64
	ttl   time.Duration
}

func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

func drawConcurrency(t *rapid.T) ccConfig {
	return ccConfig{
		limit: rapid.Int64Range(1, 12).Draw(t, "limit"),
		ttl:   rapid.SampledFrom(defaultPeriods).Draw(t, "ttl"),
	}
}

func (c ccConfig) build(t *rapid.T, r core.ScriptRunner, prefix string, clock core.Clock) *concurrency.Limiter {
	l, err := concurrency.New(r, concurrency.Config{Limit: c.limit, TTL: c.ttl, Prefix: prefix, Clock: clock})
	if err != nil {
		t.Fatalf("concurrency limit=%d ttl=%v: %v", c.limit, c.ttl, err)
	}
	return l
}

func runConcurrency(t *rapid.T, h Harness) {
	cfg := drawConcurrency(t)
	clock, ref, limClock := reference(t, h)
	defer ref.Close()
	prefix := newPrefix() + "cc:"
	var want, got *concurrency.Limiter
	build := func() {
		want, got = cfg.build(t, ref, prefix, limClock), cfg.build(t, h.Runner, prefix, limClock)
		t.Logf("config: concurrency limit=%d ttl=%v", cfg.limit, cfg.ttl)
	}
	build()
	ctx := context.Background()
	now := func() int64 { return clock.Now().UnixMicro() }
	sync := func() {
		if h.SetTime != nil {
			h.SetTime(clock.Now())
		}
	}
	ttl := func() int64 { return micros(cfg.ttl) }
	keyGen := rapid.SampledFrom(keys)
	// leases holds every lease granted, by key, in the order granted.
	leases := map[string][]*ccLease{}

	// model returns the decision an acquire of n on key gets now.
	model := func(key string, n int64) core.Decision {
		t := now()
		var live []*ccLease
		var count, last int64
		for _, l := range leases[key] {
			if !l.gone && l.expires > t {
				live = append(live, l)
				count += l.want.N
				last = max(last, l.expires)
			}
		}
		d := core.Decision{Limit: cfg.limit, Remaining: max(cfg.limit-count, 0), Window: cfg.ttl}
		if count > 0 {
			d.ResetAfter = time.Duration(last-t) * time.Microsecond
		}
		if count+n <= cfg.limit {
			d.Allowed = true
			return d
		}
		slices.SortStableFunc(live, func(a, b *ccLease) int { return cmp.Compare(a.expires, b.expires) })
		for k := count + n - cfg.limit; ; live = live[1:] {
			if k -= live[0].want.N; k <= 0 {
				d.RetryAfter = time.Duration(live[0].expires-t) * time.Microsecond
				return d
			}
		}
	}
	// write is what every write on key does first: drop the expired.
	write := func(key string) {
		for _, l := range leases[key] {
			if l.expires <= now() {
				l.gone = true
			}
		}
	}
	acquire := func(t *rapid.T, key string, n int64) core.Decision {
		sync()
		what := fmt.Sprintf("AcquireN(%q, %d) at %d", key, n, now())
		var expect core.Decision
		if n >= 1 && n <= cfg.limit {
			expect = model(key, n)
		}
		lw, dw, ew := want.AcquireN(ctx, key, n)
		lg, dg, eg := got.AcquireN(ctx, key, n)
		compare(t, what, dw, ew, dg, eg)
		if ew != nil {
			if n >= 1 && n <= cfg.limit {
				t.Fatalf("%s: %v", what, ew)
			}
			return dw
		}
		if expect.Allowed {
			expect.Remaining -= n
			expect.ResetAfter = max(expect.ResetAfter, cfg.ttl)
		}
		if !reflect.DeepEqual(dw, expect) {
			t.Fatalf("%s: the model of the leases says\n  %+v\n  reference %+v", what, expect, dw)
		}
		if dw.Allowed != (lw != concurrency.Lease{}) || dg.Allowed != (lg != concurrency.Lease{}) {
			t.Fatalf("%s: allowed %v with leases %+v and %+v", what, dw.Allowed, lw, lg)
		}
		if dw.Allowed {
			write(key)
			leases[key] = append(leases[key], &ccLease{want: lw, got: lg, expires: now() + ttl()})
		}
		return dw
	}
	// pick draws a lease to release or extend: a granted one as it is
	// (l is its model), or one changed so that it names nothing (another
	// key, another cost, a forged id), or one of the wrong form
	// (malformed).
	pick := func(t *rapid.T) (w, g concurrency.Lease, l *ccLease, malformed bool) {
		var all []*ccLease
		for _, k := range keys {
			all = append(all, leases[k]...)
		}
		if len(all) == 0 {
			return concurrency.Lease{}, concurrency.Lease{}, nil, true
		}
		l = rapid.SampledFrom(all).Draw(t, "lease")
		w, g = l.want, l.got
		switch rapid.IntRange(0, 7).Draw(t, "change") {
		case 0:
			if k := keyGen.Draw(t, "other key"); k != w.Key {
				w.Key, g.Key, l = k, k, nil
			}
		case 1:
			w.N, g.N, l = w.N+1, g.N+1, nil
		case 2:
			id := fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
			w.ID, g.ID, l = id, id, nil
		case 3:
			w.ID, g.ID = "X"+w.ID[1:], "X"+g.ID[1:]
			return w, g, nil, true
		case 4:
			return concurrency.Lease{}, concurrency.Lease{}, nil, true
		}
		return w, g, l, false
	}
	leaseCall := func(t *rapid.T, name string, call func(*concurrency.Limiter, context.Context, concurrency.Lease) (bool, error), onLive func(l *ccLease)) {
		w, g, l, malformed := pick(t)
		sync()
		what := fmt.Sprintf("%s(%+v) at %d", name, w, now())
		okW, ew := call(want, ctx, w)
		okG, eg := call(got, ctx, g)
		compare(t, what, core.Decision{Allowed: okW}, ew, core.Decision{Allowed: okG}, eg)
		if malformed != errors.Is(ew, core.ErrInvalidLease) || (!malformed && ew != nil) {
			t.Fatalf("%s: answered %v, %v (a malformed lease: %v)", what, okW, ew, malformed)
		}
		live := l != nil && !l.gone && l.expires > now()
		if okW != live {
			t.Fatalf("%s: answered %v, but the lease is live: %v (model %+v)", what, okW, live, l)
		}
		if live {
			write(w.Key)
			onLive(l)
		}
	}
	actions := map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			clock.Advance(time.Duration(rapid.OneOf(
				rapid.Int64Range(0, 2000),
				rapid.Int64Range(0, ttl()),
				rapid.Just(ttl()),
				rapid.Int64Range(0, 3*ttl()),
			).Draw(t, "step")) * time.Microsecond)
		},
		"acquire": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			n := rapid.OneOf(rapid.Just(int64(1)), rapid.Int64Range(1, cfg.limit), rapid.Int64Range(-1, cfg.limit+2)).Draw(t, "n")
			acquire(t, key, n)
		},
		// A denied acquire retried after exactly its RetryAfter passes, if
		// nothing was acquired or released in between; a microsecond
		// earlier it does not.
		"retry": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			n := rapid.Int64Range(1, cfg.limit).Draw(t, "n")
			d := acquire(t, key, n)
			if d.Allowed {
				return
			}
			clock.Advance(d.RetryAfter - time.Microsecond)
			if early := acquire(t, key, n); early.Allowed {
				t.Fatalf("key %q: acquired %v after a denial whose RetryAfter was %v", key, d.RetryAfter-time.Microsecond, d.RetryAfter)
			}
			clock.Advance(time.Microsecond)
			if late := acquire(t, key, n); !late.Allowed {
				t.Fatalf("key %q: still denied after the RetryAfter of %v: %+v", key, d.RetryAfter, late)
			}
		},
		"release": func(t *rapid.T) {
			leaseCall(t, "Release", (*concurrency.Limiter).Release, func(l *ccLease) { l.gone = true })
		},
		"extend": func(t *rapid.T) {
			leaseCall(t, "Extend", (*concurrency.Limiter).Extend, func(l *ccLease) {
				l.expires = max(l.expires, now()+ttl())
			})
		},
		"peek": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			sync()
			what := fmt.Sprintf("Peek(%q) at %d", key, now())
			dw, ew := want.Peek(ctx, key)
			dg, eg := got.Peek(ctx, key)
			compare(t, what, dw, ew, dg, eg)
			if ew != nil {
				t.Fatalf("%s: %v", what, ew)
			}
			if expect := model(key, 1); !reflect.DeepEqual(dw, expect) {
				t.Fatalf("%s: the model of the leases says\n  %+v\n  reference %+v", what, expect, dw)
			}
			dg2, eg2 := got.Peek(ctx, key)
			compare(t, what+" repeated", dg, eg, dg2, eg2)
		},
		"reset": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			sync()
			ew, eg := want.Reset(ctx, key), got.Reset(ctx, key)
			compare(t, fmt.Sprintf("Reset(%q)", key), core.Decision{}, ew, core.Decision{}, eg)
			for _, l := range leases[key] {
				l.gone = true
			}
		},
		// Limits change on live keys: the leases keep their expiries.
		"reconfigure": func(t *rapid.T) {
			cfg = drawConcurrency(t)
			build()
		},
	}
	if h.SetTime == nil || !h.ForwardOnlyTTL {
		actions["back"] = func(t *rapid.T) {
			clock.Advance(-time.Duration(rapid.OneOf(
				rapid.Int64Range(1, 2000),
				rapid.Int64Range(1, ttl()),
				rapid.Int64Range(1, 3*ttl()),
			).Draw(t, "back")) * time.Microsecond)
		}
	}
	t.Repeat(actions)
}

// ccPoisons spoil the concurrency limiter's sorted set.
var ccPoisons = []poison{
	newPoison("another type", `redis.call('SET', KEYS[1], 'abc', 'PX', 3600000)`, -5, 3),
	newPoison("a member ratekit did not write", `redis.call('ZADD', KEYS[1], 4000000000000000, 'foreign'); redis.call('PEXPIRE', KEYS[1], 3600000)`, 1, 2, 3),
	newPoison("an expiry beyond 2^53", `redis.call('ZADD', KEYS[1], '1e300', '1:2:1:1'); redis.call('PEXPIRE', KEYS[1], 3600000)`, 1, 2, 1, 1<<62),
	newPoison("a negative expiry", `redis.call('ZADD', KEYS[1], -5, '1:2:1:1'); redis.call('PEXPIRE', KEYS[1], 3600000)`, 1, 2, 1, -5),
	newPoison("a fractional expiry", `redis.call('ZADD', KEYS[1], '4000000000000000.5', '1:2:1:1'); redis.call('PEXPIRE', KEYS[1], 3600000)`, 1, 2, 0, 4000000000000000),
}

// checkConcurrencyCorrupt puts each poison at a key of the limiter on the
// store under test and on the reference, and checks that both refuse it
// in every call with an error wrapping core.ErrCorruptState that names the
// limiter, and that Reset clears it.
func checkConcurrencyCorrupt(t *rapid.T, h Harness) {
	cfg := drawConcurrency(t)
	_, ref, limClock := reference(t, h)
	defer ref.Close()
	ctx := context.Background()
	for _, p := range ccPoisons {
		prefix := newPrefix()
		key := rapid.SampledFrom(keys).Draw(t, "key")
		lease := concurrency.Lease{Key: key, N: 1, ID: "0123456789abcdef0123456789abcdef"}
		for _, s := range []struct {
			name   string
			runner core.ScriptRunner
		}{{"reference", ref}, {"store", h.Runner}} {
			if _, err := s.runner.RunScript(ctx, p.script, []string{keyspace.Key(prefix, key, "")}, nil, nil); err != nil {
				t.Fatalf("%s: writing %s: %v", s.name, p.desc, err)
			}
			lim := cfg.build(t, s.runner, prefix, limClock)
			_, _, errAcquire := lim.Acquire(ctx, key)
			_, errPeek := lim.Peek(ctx, key)
			_, errRelease := lim.Release(ctx, lease)
			_, errExtend := lim.Extend(ctx, lease)
			for i, err := range []error{errAcquire, errPeek, errRelease, errExtend} {
				if !errors.Is(err, core.ErrCorruptState) || !strings.Contains(err.Error(), "concurrency") {
					t.Fatalf("%s: state with %s: call %d answered %v, want core.ErrCorruptState naming concurrency", s.name, p.desc, i, err)
				}
			}
			if err := lim.Reset(ctx, key); err != nil {
				t.Fatalf("%s: Reset after corrupt state: %v", s.name, err)
			}
			if _, d, err := lim.Acquire(ctx, key); err != nil || !d.Allowed {
				t.Fatalf("%s: after Reset: %+v, %v", s.name, d, err)
			}
		}
	}
}

// runConcurrencyServerClock checks leases on a store that decides on its
// own clock (see RunServerClock): reading the store's time just before
// and just after every call, a lease acquired in [lo, hi] expires in
// [lo + TTL, hi + TTL], so a Peek whose readings lie before the earliest
// expiry must count it, and one whose readings lie after the latest must
// not. Sleeping a denial's RetryAfter gets the same acquire through.
func runConcurrencyServerClock(t *testing.T, runner core.ScriptRunner, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	cfg := ccConfig{limit: 1 + rng.Int64N(4), ttl: serverPeriods[rng.IntN(len(serverPeriods))] * 10}
	t.Logf("config: concurrency limit=%d ttl=%v", cfg.limit, cfg.ttl)
	lim, err := concurrency.New(runner, concurrency.Config{Limit: cfg.limit, TTL: cfg.ttl, Prefix: newPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	serverNow := func() int64 {
		r, err := runner.RunScript(ctx, timeScript, []string{newPrefix() + "time"}, nil, nil)
		if err != nil || len(r) != 1 {
			t.Fatalf("reading the store's time: %v %v", r, err)
		}
		return r[0]
	}
	ttl := micros(cfg.ttl)
	type held struct {
		lease  concurrency.Lease
		lo, hi int64
		gone   bool
	}
	var all []*held
	key := "k"
	acquire := func(n int64) core.Decision {
		t.Helper()
		lo := serverNow()
		lease, d, err := lim.AcquireN(ctx, key, n)
		hi := serverNow()
		if err != nil {
			t.Fatalf("AcquireN(%d): %v", n, err)
		}
		if d.Remaining < 0 || d.Remaining > cfg.limit || d.RetryAfter > cfg.ttl || d.ResetAfter > cfg.ttl || d.Allowed == (d.RetryAfter > 0) {
			t.Fatalf("AcquireN(%d) between %d and %d: %+v", n, lo, hi, d)
		}
		if d.Allowed {
			all = append(all, &held{lease: lease, lo: lo, hi: hi})
		}
		return d
	}
	for step := 0; step < 40; step++ {
		switch rng.IntN(6) {
		case 0:
			time.Sleep(time.Duration(rng.Int64N(int64(cfg.ttl) * 3 / 2)))
		case 1:
			lo := serverNow()
			d, err := lim.Peek(ctx, key)
			hi := serverNow()
			if err != nil {
				t.Fatalf("Peek: %v", err)
			}
			var surely, maybe int64
			for _, l := range all {
				switch {
				case l.gone:
				case l.lo+ttl > hi:
					surely += l.lease.N
					maybe += l.lease.N
				case l.hi+ttl > lo:
					maybe += l.lease.N
				}
			}
			if inFlight := cfg.limit - d.Remaining; inFlight < min(surely, cfg.limit) || inFlight > maybe {
				t.Fatalf("Peek between %d and %d: %d in flight, want %d to %d (leases %+v)", lo, hi, inFlight, surely, maybe, all)
			}
		case 2:
			if len(all) > 0 {
				l := all[rng.IntN(len(all))]
				lo := serverNow()
				ok, err := lim.Release(ctx, l.lease)
				hi := serverNow()
				switch {
				case err != nil:
					t.Fatalf("Release: %v", err)
				case ok && (l.gone || l.hi+ttl <= lo):
					t.Fatalf("Release between %d and %d of a lease acquired in [%d, %d] and gone %v: released", lo, hi, l.lo, l.hi, l.gone)
				case !ok && !l.gone && l.lo+ttl > hi:
					t.Fatalf("Release between %d and %d of a live lease acquired in [%d, %d]: not released", lo, hi, l.lo, l.hi)
				}
				l.gone = true
			}
		case 3:
			n := 1 + rng.Int64N(cfg.limit)
			if d := acquire(n); !d.Allowed {
				time.Sleep(d.RetryAfter)
				if late := acquire(n); !late.Allowed {
					t.Fatalf("still denied after sleeping the RetryAfter of %v: %+v", d.RetryAfter, late)
				}
			}
		default:
			acquire(1 + rng.Int64N(cfg.limit))
		}
	}
}
