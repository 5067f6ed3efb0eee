package hotkey_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

var ctx = context.Background()

// counting is a source that counts the calls that reach it, and fails
// them while fail is set.
type counting struct {
	core.Limiter
	calls atomic.Int64
	fail  atomic.Bool
}

var errDown = errors.New("store down")

func (c *counting) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op == core.OpPeek {
		return c.Limiter.Decide(ctx, r)
	}
	c.calls.Add(1)
	if c.fail.Load() {
		return core.Decision{}, errors.Join(core.ErrStore, errDown)
	}
	return c.Limiter.Decide(ctx, r)
}

// countingAtMost adds GCRA's AllowAtMost.
type countingAtMost struct {
	*counting
	g *ratekit.Limiter
}

func (c *countingAtMost) AllowAtMost(ctx context.Context, key string, n int64) (int64, core.Decision, error) {
	if key == "" {
		// hotkey.New's probe of whether the source grants part of a
		// request: GCRA refuses the key before any store call.
		return c.g.AllowAtMost(ctx, key, n)
	}
	c.calls.Add(1)
	if c.fail.Load() {
		return 0, core.Decision{}, errors.Join(core.ErrStore, errDown)
	}
	return c.g.AllowAtMost(ctx, key, n)
}

// window returns a fixed window of limit per hour on e's store: no time
// in a test refills it, so the store's count is what the leases took.
func window(t *testing.T, e *limitertest.Env, limit int64) *counting {
	t.Helper()
	l, err := fixedwindow.New(e.Store, fixedwindow.Config{Limit: limit, Window: time.Hour, Clock: e.Clock})
	if err != nil {
		t.Fatal(err)
	}
	return &counting{Limiter: l}
}

func newGCRA(t *testing.T, e *limitertest.Env, cfg gcra.Config) *countingAtMost {
	t.Helper()
	cfg.Clock = e.Clock
	g, err := gcra.New(e.Store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &countingAtMost{counting: &counting{Limiter: g}, g: g}
}

func newBudget(t *testing.T, src core.Limiter, cfg hotkey.Config) *hotkey.Budget {
	t.Helper()
	b, err := hotkey.New(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// counted is what the store has counted at key: Limit - Remaining.
func counted(t *testing.T, l core.Limiter, key string) int64 {
	t.Helper()
	d, err := l.Peek(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return d.Limit - d.Remaining
}

func allow(t *testing.T, b *hotkey.Budget, key string, n int64) core.Decision {
	t.Helper()
	d, err := b.AllowN(ctx, key, n)
	if err != nil {
		t.Fatalf("AllowN(%q, %d): %v", key, n, err)
	}
	return d
}

func TestLeaseDecidesLocally(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 10, TTL: time.Second, Clock: e.Clock})
	for i := int64(1); i <= 10; i++ {
		d := allow(t, b, "k", 1)
		// Remaining: the lease's unused units plus the 90 the store had left.
		if want := (core.Decision{Allowed: true, Limit: 100, Remaining: 100 - i, ResetAfter: time.Hour, Window: time.Hour}); !reflect.DeepEqual(d, want) {
			t.Fatalf("request %d: %+v, want %+v", i, d, want)
		}
	}
	if got := src.calls.Load(); got != 1 {
		t.Errorf("10 requests made %d store calls, want 1 lease", got)
	}
	if got := counted(t, src, "k"); got != 10 {
		t.Errorf("the store counted %d, want the lease's 10", got)
	}
	allow(t, b, "k", 1)
	if got, c := src.calls.Load(), counted(t, src, "k"); got != 2 || c != 20 {
		t.Errorf("the 11th request: %d store calls and %d counted, want 2 and 20", got, c)
	}
	want := hotkey.Stats{Keys: 1, Leases: 2, Granted: 20, Held: 9}
	if st := b.Stats(); st != want {
		t.Errorf("Stats() = %+v, want %+v", st, want)
	}
}

func TestExpiredUnitsAreLost(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 10, TTL: time.Second, Clock: e.Clock})
	for range 3 {
		allow(t, b, "k", 1)
	}
	e.Clock.Advance(time.Second - time.Nanosecond)
	allow(t, b, "k", 1) // still live
	if got := src.calls.Load(); got != 1 {
		t.Fatalf("%d store calls within the TTL, want 1", got)
	}
	e.Clock.Advance(time.Nanosecond)
	allow(t, b, "k", 1) // expired: a new lease, 6 units lost
	if got := counted(t, src, "k"); got != 20 {
		t.Errorf("the store counted %d, want 20 (two leases; nothing refunded)", got)
	}
	want := hotkey.Stats{Keys: 1, Leases: 2, Granted: 20, Lost: 6, Held: 9}
	if st := b.Stats(); st != want {
		t.Errorf("Stats() = %+v, want %+v", st, want)
	}
}

func TestDenialsAreLocal(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 5)
	// A lease above the limit: the budget learns the limit and asks for 5.
	b := newBudget(t, src, hotkey.Config{Lease: 8, TTL: time.Minute, Clock: e.Clock})
	for i := range 5 {
		if d := allow(t, b, "k", 1); !d.Allowed {
			t.Fatalf("request %d denied: %+v", i, d)
		}
	}
	calls := src.calls.Load()
	d := allow(t, b, "k", 1)
	if d.Allowed || d.RetryAfter != time.Hour {
		t.Fatalf("the 6th request: %+v, want denied for the hour", d)
	}
	after := src.calls.Load()
	e.Clock.Advance(time.Minute)
	d = allow(t, b, "k", 1)
	if d.Allowed || d.RetryAfter != time.Hour-time.Minute || d.ResetAfter != time.Hour-time.Minute {
		t.Errorf("a minute later: %+v, want denied for 59m", d)
	}
	if got := src.calls.Load(); got != after {
		t.Errorf("a local denial made %d store calls", got-after)
	}
	if after-calls != 2 {
		// AllowN(5) denied, then AllowN(1) for the request itself.
		t.Errorf("the first denial made %d store calls, want 2", after-calls)
	}
}

func TestGCRAGrantsPartLeases(t *testing.T) {
	e := limitertest.New(t)
	src := newGCRA(t, e, gcra.Config{Rate: 1, Period: 100 * time.Millisecond, Burst: 5})
	b := newBudget(t, src, hotkey.Config{Lease: 4, TTL: time.Second, Clock: e.Clock})
	for range 5 {
		if d := allow(t, b, "k", 1); !d.Allowed {
			t.Fatalf("denied within the burst: %+v", d)
		}
	}
	if got := src.calls.Load(); got != 2 {
		t.Errorf("%d store calls, want 2: a lease of 4, then of the 1 left", got)
	}
	d := allow(t, b, "k", 1)
	if d.Allowed || d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("past the burst: %+v, want denied for one emission interval", d)
	}
	e.Clock.Advance(100 * time.Millisecond)
	if d := allow(t, b, "k", 1); !d.Allowed {
		t.Errorf("after RetryAfter: %+v, want allowed", d)
	}
}

func TestCostsAboveTheLeaseGoToTheSource(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 4, TTL: time.Second, Clock: e.Clock})
	d := allow(t, b, "k", 30)
	if !d.Allowed || d.Remaining != 70 || counted(t, src, "k") != 30 {
		t.Errorf("AllowN(30) = %+v, want it decided by the store", d)
	}
	if st := b.Stats(); st.Direct != 30 || st.Leases != 0 {
		t.Errorf("Stats() = %+v, want 30 direct units and no lease", st)
	}
}

func TestBadCalls(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 100, TTL: time.Second, Clock: e.Clock})
	limitertest.BadCalls(t, b, 100)
}

func TestBadConfig(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	for _, tt := range []struct {
		name, field string
		src         core.Limiter
		cfg         hotkey.Config
	}{
		{"nil source", "source", nil, hotkey.Config{Lease: 1, TTL: time.Second}},
		{"no lease", "Lease", src, hotkey.Config{TTL: time.Second}},
		{"negative lease", "Lease", src, hotkey.Config{Lease: -1, TTL: time.Second}},
		{"huge lease", "Lease", src, hotkey.Config{Lease: 1 << 60, TTL: time.Second}},
		{"min above lease", "MinLease", src, hotkey.Config{Lease: 4, MinLease: 5, TTL: time.Second}},
		{"negative min", "MinLease", src, hotkey.Config{Lease: 4, MinLease: -1, TTL: time.Second}},
		{"no TTL", "TTL", src, hotkey.Config{Lease: 4}},
		{"a TTL the clock overflows with", "TTL", src, hotkey.Config{Lease: 4, TTL: math.MaxInt64}},
		{"a typed nil source", "source", (*ratekit.Limiter)(nil), hotkey.Config{Lease: 1, TTL: time.Second}},
		{"a zero source", "source", &ratekit.Limiter{}, hotkey.Config{Lease: 1, TTL: time.Second}},
		{"a nil *fakeclock.Clock", "Clock", src, hotkey.Config{Lease: 1, TTL: time.Second, Clock: (*fakeclock.Clock)(nil)}},
		{"negative MaxKeys", "MaxKeys", src, hotkey.Config{Lease: 4, TTL: time.Second, MaxKeys: -1}},
	} {
		limitertest.BadConfig(t, tt.name, tt.field, func() error {
			_, err := hotkey.New(tt.src, tt.cfg)
			return err
		})
	}
}

func TestCloseGivesUnusedUnitsBack(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 10, TTL: time.Second, Clock: e.Clock})
	for range 3 {
		allow(t, b, "k", 1)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := counted(t, src, "k"); got != 3 {
		t.Errorf("after Close the store counts %d, want the 3 used", got)
	}
	allow(t, b, "k", 1)
	if got := counted(t, src, "k"); got != 4 {
		t.Errorf("a request after Close: the store counts %d, want 4 (decided by the source)", got)
	}
	want := hotkey.Stats{Keys: 1, Leases: 1, Granted: 10, Refunded: 7, Direct: 1}
	if st := b.Stats(); st != want {
		t.Errorf("Stats() = %+v, want %+v", st, want)
	}
}

func TestCloseAfterExpiryGivesNothingBack(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 10, TTL: time.Second, Clock: e.Clock})
	allow(t, b, "k", 1)
	e.Clock.Advance(time.Second)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := counted(t, src, "k"); got != 10 {
		t.Errorf("the store counts %d, want 10: an expired lease's units are lost", got)
	}
	if st := b.Stats(); st.Lost != 9 || st.Refunded != 0 {
		t.Errorf("Stats() = %+v, want 9 lost", st)
	}
}

func TestResetDropsTheLease(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 10, TTL: time.Second, Clock: e.Clock})
	allow(t, b, "k", 1)
	if err := b.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	allow(t, b, "k", 1)
	// Counted by the fresh state: the new lease only.
	if got := counted(t, src, "k"); got != 10 {
		t.Errorf("after Reset the store counts %d, want 10", got)
	}
	if st := b.Stats(); st.Lost != 9 || st.Leases != 2 {
		t.Errorf("Stats() = %+v, want 9 lost and 2 leases", st)
	}
}

func TestStoreFailure(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 3, TTL: time.Second, Clock: e.Clock})
	allow(t, b, "k", 1)
	src.fail.Store(true)
	// The live lease is spent while the store fails: counted already.
	allow(t, b, "k", 1)
	allow(t, b, "k", 1)
	_, err := b.Allow(ctx, "k")
	if !errors.Is(err, core.ErrStore) || !errors.Is(err, errDown) {
		t.Fatalf("a lease while the store fails: %v, want the store's error", err)
	}
	src.fail.Store(false)
	if d := allow(t, b, "k", 1); !d.Allowed {
		t.Errorf("once the store answers: %+v", d)
	}
}

// peekFails is a source whose Peek (alone) fails while peekFail is set.
type peekFails struct {
	*counting
	peekFail atomic.Bool
}

func (s *peekFails) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op == core.OpPeek && s.peekFail.Load() {
		return core.Decision{}, errors.Join(core.ErrStore, errDown)
	}
	return s.counting.Decide(ctx, r)
}

// A lease above the limit is followed by a Peek to learn the limit: when
// that Peek fails, the request gets its error, not ErrInvalidCost for a
// cost it did not ask for.
func TestLearningTheLimitFails(t *testing.T) {
	e := limitertest.New(t)
	src := &peekFails{counting: window(t, e, 10)}
	b := newBudget(t, src, hotkey.Config{Lease: 20, TTL: time.Minute, Clock: e.Clock})
	src.peekFail.Store(true)
	_, err := b.Allow(ctx, "k")
	if !errors.Is(err, core.ErrStore) || !errors.Is(err, errDown) || errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("Allow with a lease above the limit and Peek failing: %v, want Peek's error", err)
	}
	src.peekFail.Store(false)
	if d := allow(t, b, "k", 1); !d.Allowed || d.Remaining != 9 {
		t.Errorf("once Peek answers: %+v, want allowed from a lease of 10", d)
	}
}

// blocking is a source whose lease calls wait for release.
type blocking struct {
	*counting
	entered chan struct{}
	release chan struct{}
}

func (s *blocking) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op == core.OpAllow {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.counting.Decide(ctx, r)
}

// TestWaitersShareAFailedLease: calls that wait for a lease call share its
// error instead of each calling the failing store.
func TestWaitersShareAFailedLease(t *testing.T) {
	e := limitertest.New(t)
	src := &blocking{counting: window(t, e, 100), entered: make(chan struct{}), release: make(chan struct{})}
	src.fail.Store(true)
	b := newBudget(t, src, hotkey.Config{Lease: 3, TTL: time.Second, Clock: e.Clock})
	const waiters = 8
	errs := make(chan error, waiters+1)
	go func() { _, err := b.Allow(ctx, "k"); errs <- err }()
	<-src.entered // the first lease call is in flight
	var started sync.WaitGroup
	for range waiters {
		started.Add(1)
		go func() {
			started.Done()
			_, err := b.Allow(ctx, "k")
			errs <- err
		}()
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond) // let the waiters reach the lock
	close(src.release)                // later calls pass straight through
	go func() {
		for range src.entered {
		}
	}()
	for range waiters + 1 {
		if err := <-errs; !errors.Is(err, errDown) {
			t.Errorf("got %v, want the store's error", err)
		}
	}
	close(src.entered)
	// Waiters that reached the lock before the first call ended did not
	// call the store; any later ones made one call each.
	if got := src.calls.Load(); got > waiters+1 {
		t.Errorf("%d store calls for %d requests", got, waiters+1)
	}
}

func TestMaxKeys(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	b := newBudget(t, src, hotkey.Config{Lease: 10, TTL: time.Second, MaxKeys: 2, Clock: e.Clock})
	allow(t, b, "a", 1)
	allow(t, b, "b", 1)
	allow(t, b, "c", 1) // no room: the source decides
	if st := b.Stats(); st.Keys != 2 || st.Direct != 1 {
		t.Fatalf("Stats() = %+v, want 2 keys and 1 direct unit", st)
	}
	e.Clock.Advance(time.Second) // a and b are idle now
	allow(t, b, "c", 1)
	if st := b.Stats(); st.Keys != 1 || st.Lost != 18 || st.Leases != 3 {
		t.Errorf("Stats() = %+v, want the idle keys dropped (18 units lost) and c leased", st)
	}
}

func TestLeaseSizeAdapts(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 10000)
	b := newBudget(t, src, hotkey.Config{Lease: 64, MinLease: 1, TTL: time.Second, Clock: e.Clock})
	var sizes []int64
	granted := int64(0)
	for range 200 {
		allow(t, b, "k", 1)
		if g := b.Stats().Granted; g != granted {
			sizes = append(sizes, g-granted)
			granted = g
		}
	}
	want := []int64{1, 2, 4, 8, 16, 32, 64, 64}
	if len(sizes) < len(want) || !equal(sizes[:len(want)], want) {
		t.Errorf("lease sizes under steady demand %v, want to start %v", sizes, want)
	}
	// The key cools down to one request per TTL: each lease expires
	// mostly unused, and the next is half as large, down to MinLease.
	sizes = sizes[:0]
	for range 8 {
		e.Clock.Advance(time.Second)
		allow(t, b, "k", 1)
		g := b.Stats().Granted
		sizes = append(sizes, g-granted)
		granted = g
	}
	if want := []int64{32, 16, 8, 4, 2, 1, 1, 1}; !equal(sizes, want) {
		t.Errorf("lease sizes at one request per TTL %v, want %v", sizes, want)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLocalDecisionsDoNotAllocate(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 1<<40)
	b := newBudget(t, src, hotkey.Config{Lease: 1 << 30, TTL: time.Hour})
	allow(t, b, "k", 1)
	key := strings.Clone("k")
	if got := testing.AllocsPerRun(1000, func() {
		if _, err := b.Allow(ctx, key); err != nil {
			t.Fatal(err)
		}
	}); got != 0 {
		t.Errorf("a local decision allocates %v times, want 0", got)
	}
}

// slow is a source whose calls take a while on the manual clock.
type slow struct {
	*counting
	clock interface{ Advance(time.Duration) time.Time }
	delay time.Duration
}

func (s *slow) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op == core.OpAllow {
		s.clock.Advance(s.delay)
	}
	return s.counting.Decide(ctx, r)
}

// TestLateLeaseIsLost: a lease whose call took longer than the TTL is
// expired on arrival: its units are lost, not spent, and the request that
// asked for it is denied.
func TestLateLeaseIsLost(t *testing.T) {
	e := limitertest.New(t)
	src := &slow{counting: window(t, e, 100), clock: e.Clock, delay: time.Second}
	b := newBudget(t, src, hotkey.Config{Lease: 10, TTL: time.Second, Clock: e.Clock})
	d := allow(t, b, "k", 1)
	if d.Allowed || d.RetryAfter != time.Second {
		t.Errorf("a lease that took the whole TTL: %+v, want denied with the call's time as RetryAfter", d)
	}
	if st := b.Stats(); st.Granted != 10 || st.Lost != 10 || st.Held != 0 {
		t.Errorf("Stats() = %+v, want the 10 units lost", st)
	}
	src.delay = time.Second - time.Nanosecond
	if d := allow(t, b, "k", 1); !d.Allowed {
		t.Errorf("a lease that arrived just in time: %+v, want allowed", d)
	}
	if got := counted(t, src, "k"); got != 20 {
		t.Errorf("the store counts %d, want both leases' 20", got)
	}
}

// TestFailsafeSource: with a failsafe.Limiter as its source, the failure
// policy decides the lease calls while the store fails.
func TestFailsafeSource(t *testing.T) {
	e := limitertest.New(t)
	src := window(t, e, 100)
	src.fail.Store(true)
	quiet := slog.New(slog.DiscardHandler)

	open, err := failsafe.New(failsafe.Config{Limiter: src, Mode: failsafe.FailOpen, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	b := newBudget(t, open, hotkey.Config{Lease: 10, TTL: time.Second, Clock: e.Clock})
	for i := range 12 {
		if d := allow(t, b, "k", 1); !d.Allowed {
			t.Fatalf("fail open: request %d denied: %+v", i, d)
		}
	}
	if st := b.Stats(); st.Leases != 2 || st.Granted != 20 {
		t.Errorf("fail open: Stats() = %+v, want two leases the policy granted", st)
	}

	closed, err := failsafe.New(failsafe.Config{Limiter: src, Mode: failsafe.FailClosed, RetryInterval: time.Minute, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	b = newBudget(t, closed, hotkey.Config{Lease: 10, TTL: time.Second, Clock: e.Clock})
	for i := range 3 {
		if d := allow(t, b, "k", 1); d.Allowed || d.RetryAfter != time.Minute {
			t.Fatalf("fail closed: request %d: %+v, want denied for the RetryInterval", i, d)
		}
	}
	if st := b.Stats(); st.Leases != 0 {
		t.Errorf("fail closed: Stats() = %+v, want no lease", st)
	}
}

// A Budget leases from a policy as from any limiter: with AllowN (a
// policy grants no part of a request), every limit counting each lease;
// Close refunds what is left to every limit.
func TestPolicySource(t *testing.T) {
	e := limitertest.New(t)
	fw, err := fixedwindow.New(e.Store, fixedwindow.Config{Limit: 100, Window: time.Hour, Prefix: "fw:", Clock: e.Clock})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := tokenbucket.New(e.Store, tokenbucket.Config{Capacity: 50, RefillRate: 1, RefillInterval: time.Hour, Prefix: "tb:", Clock: e.Clock})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "hour", Limiter: fw}, {Name: "bucket", Limiter: tb}}})
	if err != nil {
		t.Fatal(err)
	}
	src := &counting{Limiter: p}
	b := newBudget(t, src, hotkey.Config{Lease: 10, TTL: time.Minute, Clock: e.Clock})
	if b.MaxCost() != 50 {
		t.Fatalf("MaxCost %d, want the policy's 50", b.MaxCost())
	}
	for i := range 12 {
		if d := allow(t, b, "k", 1); !d.Allowed {
			t.Fatalf("request %d denied: %+v", i, d)
		}
	}
	if got := src.calls.Load(); got != 2 {
		t.Errorf("12 requests made %d calls to the policy, want 2 leases", got)
	}
	if a, b := counted(t, fw, "k"), counted(t, tb, "k"); a != 20 || b != 20 {
		t.Errorf("the limits counted %d and %d, want both leases' 20", a, b)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if a, b := counted(t, fw, "k"), counted(t, tb, "k"); a != 12 || b != 12 {
		t.Errorf("after Close the limits count %d and %d, want the 12 allowed", a, b)
	}
}

// Every decision a Budget makes carries its source's Window, as the
// source's own do (httplimit sends it as w): from a lease, with a new
// lease, when denied at the limit while a lease is on its way, and from
// a cached denial.
func TestDecisionsCarryTheirWindow(t *testing.T) {
	e := limitertest.New(t)
	src := newGCRA(t, e, gcra.Config{Rate: 10, Period: time.Second, Burst: 20})
	const window = 2 * time.Second // Burst / Rate per Period
	b := newBudget(t, src, hotkey.Config{Lease: 8, TTL: time.Second, Clock: e.Clock})
	var ds []core.Decision
	for range 25 {
		ds = append(ds, allow(t, b, "k", 1))
	}
	if ds[0].Allowed != true || ds[len(ds)-1].Allowed {
		t.Fatalf("want the first allowed and the last denied: %+v, %+v", ds[0], ds[len(ds)-1])
	}
	for i, d := range ds {
		if d.Window != window {
			t.Errorf("decision %d: %+v, want Window %v", i, d, window)
		}
	}
}
