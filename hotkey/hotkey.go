// Package hotkey decides requests for hot keys in process, from units
// leased from the shared limit, so that one very hot key (a global limit, a
// big tenant) is not capped at the speed of the one Redis node that holds
// it.
//
// A [Budget] sits in front of a limiter every process shares (any rate
// algorithm on any store; GCRA's fits best). For each key it asks the store
// for a lease: up to Lease units taken from the key's limit at once, as
// AllowN would take them (on GCRA, as AllowAtMost does: as many as fit, up
// to the lease). It then allows requests in process, with a clock reading
// and one compare-and-swap, no allocation and no round trip, until the
// lease is spent or its TTL ends, and asks for the next one. Denials are
// answered in process too.
//
// # What it promises
//
// Units are taken before they are used: every request a Budget allows was
// counted by the store first, by a lease call made less than TTL before
// the request was allowed. With P processes sharing a key, and B(L) the
// most the shared limit grants over any interval of length L (net of units
// given back; for GCRA, Burst + L x Rate/Period):
//
//   - In total, nothing is over-admitted: from a key's first request to any
//     instant, the processes together allow at most what the limit granted
//     in that time, so at most B of that time.
//   - Over any window of length L, they allow at most B(L + TTL) + P x
//     Lease. Against the limit's own B(L), the overshoot is at most what
//     the limit grants in one TTL (Rate x TTL / Period for GCRA), plus P x
//     Lease only when some process gave units back at Close within TTL
//     before the window or during it.
//   - The price is under-admission: units leased and not yet used are
//     counted by the store and unusable by the other processes (at most P
//     x Lease at a time), and units of leases that end unused are lost.
//
// docs/design.md ("Hot keys") has the proof; a test checks both bounds
// with three processes on a real redis-server, another on random
// histories.
//
// # Leases: size and end
//
// A lease's units may be spent until TTL after the lease was asked for, on
// the Budget's clock; what is left then is lost (all of it, when the lease
// call itself took longer than the TTL: choose a TTL well above the
// store's round trip). Giving it back later
// would let the limit grant again, now, units it counted when the lease was
// taken: the over-admission the TTL is there to bound. A new lease ends
// the one before it, whose last units (fewer than the request that asked
// for the new one needed) are lost too. Only Close gives units back: those
// of the leases still live, once per process, with the source's Refund.
//
// With MinLease below Lease the size adapts per key, between the two,
// starting at MinLease: it doubles when a lease is spent within half its
// TTL and halves when one ends at least half unused (or, on a source
// without AllowAtMost, when the store cannot grant it whole), so that a
// warm key holds few idle units and a hot one asks the store rarely.
//
// # Denials and RetryAfter
//
// When the store denies a request, the Budget denies that cost and more in
// process, without a round trip, until the store's RetryAfter, counted
// from when the call was made (so never longer than the store would), and
// the local denial's RetryAfter counts down to that instant: the wait
// until the store would grant the unit (or the n units) it denied, if
// nothing else is counted meanwhile. It cannot see units that other
// processes hold and will not use; those come back when their leases end.
//
// At the limit (the store had less left than one lease), a request that
// finds the lease spent while another request of this process is asking
// for the next one is denied at once rather than queued behind it: its
// RetryAfter is the last lease call's round trip, when the next units are
// due, an estimate. Below the limit it waits for that lease instead.
//
// # When the store fails
//
// A live lease is still spent while the store fails: its units are counted
// already. A request that needs a new lease gets the store's error
// (wrapping core.ErrStore), and so do the requests that waited for that
// lease call, without calling the store again. To fail open, closed or to
// a local limiter instead, give the Budget a failsafe.Limiter as its
// source: its policy then decides the lease calls (fail open grants the
// lease, fail closed denies it for RetryInterval, fail local asks the
// local limiter). failsafe has no AllowAtMost, so leases are then asked
// for whole.
//
// # Which keys
//
// Every key given to a Budget gets leases: give it the hot keys (a global
// limit, the large tenants) and the others to the limiter itself. At most
// MaxKeys keys hold a budget at once; past that, a key is decided by the
// source, exactly, as are requests that cost more than Lease and every
// request after Close.
package hotkey

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// DefaultMaxKeys is Config.MaxKeys when it is 0.
const DefaultMaxKeys = 1024

// Config configures a Budget.
type Config struct {
	// Lease is the most units one lease takes from the shared limit, at
	// least 1. Larger leases ask the store less often and hold more unused
	// units: it bounds both the store calls (one per Lease requests at
	// best) and the over- and under-admission (see the package doc). Keep
	// it well below the limit, since units one process holds are out of
	// the others' reach, and at least the limit's rate times the store's
	// round trip divided by the processes, since leases come no faster
	// than one round trip apart. A request that costs more than Lease is
	// decided by the source. A lease above the key's limit is cut to it:
	// a source without AllowAtMost refuses it, and the Budget then learns
	// the limit with the source's Peek (a Peek that fails fails the
	// request with its error) and asks again.
	Lease int64
	// MinLease is the least one lease asks for, between 1 and Lease; 0
	// means Lease, a fixed size. Below Lease, the size adapts between the
	// two (see the package doc), starting at MinLease.
	MinLease int64
	// TTL is how long a lease's units may be spent, counted from when the
	// lease was asked for; then what is left is lost. It bounds the
	// over-admission over a window (the limit's allowance over one TTL) and
	// how long units sit unused. Required, at most about 71 years (the
	// longest duration ratekit's algorithms take).
	TTL time.Duration
	// MaxKeys is the most keys that hold a budget at once; 0 means
	// DefaultMaxKeys. Past it, a key is decided by the source until an idle
	// key (its lease and denial over) makes room.
	MaxKeys int
	// Clock, when set, measures TTLs and RetryAfter; nil means the
	// process's monotonic clock.
	Clock core.Clock
}

// Budget decides requests for hot keys from units leased from a shared
// limit (see the package doc). It is a core.Limiter, safe for concurrent
// use; Close gives the unused units back. Build it with New: a zero
// Budget, or a nil *Budget, fails every call with an error wrapping
// core.ErrInvalidConfig.
type Budget struct {
	src    core.Limiter
	atMost atMoster // src's AllowAtMost, when it grants part of a request

	maxLease, minLease int64
	ttl                int64 // ns
	maxKeys            int
	clock              core.Clock // nil: time.Since(epoch)
	epoch              time.Time

	keys   atomic.Pointer[map[string]*slot] // copied on write, under mu
	mu     sync.Mutex
	swept  int64 // when keys was last swept for idle slots, under mu
	closed atomic.Bool

	leases, granted, refunded, lost, direct atomic.Int64
}

var _ core.Limiter = (*Budget)(nil)

// maxTTL is the longest Config.TTL: params.MaxSpan µs, as every duration
// of ratekit's algorithms, so that the clock plus a TTL never overflows.
const maxTTL = time.Duration(params.MaxSpan) * time.Microsecond

// atMoster is a limiter that may grant part of a request
// (ratekit.Limiter.AllowAtMost: GCRA's does).
type atMoster interface {
	AllowAtMost(ctx context.Context, key string, n int64) (int64, core.Decision, error)
}

// New returns a Budget that leases from source: the limiter all the
// processes share, any core.Limiter (a policy too). A source whose
// AllowAtMost grants part of a request (ratekit.Limiter of GCRA) is asked
// for as many units as fit, up to the lease; any other is asked for the
// whole lease with AllowN. Unused units of live leases go back to the
// source's Refund at Close. New touches no store; an error wraps
// core.ErrInvalidConfig and names the field.
func New(source core.Limiter, cfg Config) (*Budget, error) {
	if source == nil || source.MaxCost() < 1 {
		return nil, fmt.Errorf("%w: hotkey: the source limiter is nil or cannot decide (not built by its New)", core.ErrInvalidConfig)
	}
	if err := params.CheckClock(cfg.Clock); err != nil {
		return nil, fmt.Errorf("hotkey: Clock: %w", err)
	}
	if cfg.Lease < 1 || cfg.Lease > params.MaxCount {
		return nil, fmt.Errorf("%w: Lease must be between 1 and %d, got %d", core.ErrInvalidConfig, params.MaxCount, cfg.Lease)
	}
	if cfg.MinLease == 0 {
		cfg.MinLease = cfg.Lease
	}
	if cfg.MinLease < 1 || cfg.MinLease > cfg.Lease {
		return nil, fmt.Errorf("%w: MinLease must be between 1 and Lease (%d), or 0, got %d", core.ErrInvalidConfig, cfg.Lease, cfg.MinLease)
	}
	if cfg.TTL <= 0 || cfg.TTL > maxTTL {
		return nil, fmt.Errorf("%w: TTL must be positive and at most %v, got %v", core.ErrInvalidConfig, maxTTL, cfg.TTL)
	}
	if cfg.MaxKeys < 0 {
		return nil, fmt.Errorf("%w: MaxKeys must not be negative, got %d", core.ErrInvalidConfig, cfg.MaxKeys)
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	b := &Budget{
		src:      source,
		maxLease: cfg.Lease,
		minLease: cfg.MinLease,
		ttl:      int64(cfg.TTL),
		maxKeys:  cfg.MaxKeys,
		clock:    cfg.Clock,
	}
	if a, ok := source.(atMoster); ok && grantsPart(a) {
		b.atMost = a
	}
	if b.clock != nil {
		b.epoch = b.clock.Now()
	} else {
		b.epoch = time.Now()
	}
	empty := map[string]*slot{}
	b.keys.Store(&empty)
	return b, nil
}

// grantsPart reports whether a's AllowAtMost grants part of a request: a
// ratekit.Limiter's answers a call it must refuse (an empty key) with
// errors.ErrUnsupported when it does not, before it checks anything and
// without sending anything.
func grantsPart(a atMoster) bool {
	_, _, err := a.AllowAtMost(context.Background(), "", 1)
	return !errors.Is(err, errors.ErrUnsupported)
}

// errZero is what the calls of a Budget not built by New return.
var errZero = fmt.Errorf("%w: a zero hotkey.Budget: build it with hotkey.New", core.ErrInvalidConfig)

// built reports whether New made b (New refuses a nil source).
func (b *Budget) built() bool { return b != nil && b.src != nil }

// now is the Budget's time: nanoseconds since New.
func (b *Budget) now() int64 {
	if b.clock == nil {
		return int64(time.Since(b.epoch))
	}
	return int64(b.clock.Now().Sub(b.epoch))
}

// Allow is AllowN(ctx, key, 1).
func (b *Budget) Allow(ctx context.Context, key string) (core.Decision, error) {
	return b.AllowN(ctx, key, 1)
}

// Decide decides r: an OpAllow request without Params as AllowN does,
// an OpPeek request as Peek, an OpRefund request as Refund. A request
// that gives its own limits (Params) or keys (Keys) is decided by the
// source, as one above Lease is: a Budget leases units of the limits the
// source was built with on one key, and units leased under one limit are
// not units of another.
func (b *Budget) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if !b.built() {
		return core.Decision{}, errZero
	}
	switch {
	case r.Op == core.OpRefund:
		if err := b.forget(ctx, r.Key); err != nil {
			return core.Decision{}, err
		}
		return b.src.Decide(ctx, r)
	case r.Op != core.OpAllow:
		return b.src.Decide(ctx, r)
	case len(r.Params) > 0 || r.Keys != nil:
		d, err := b.src.Decide(ctx, r)
		if err == nil && d.Allowed {
			b.direct.Add(r.N)
		}
		return d, err
	}
	return b.AllowN(ctx, r.Key, r.N)
}

// AllowN decides a request of cost n on key: from the key's live lease
// when it holds n units (no store call, no allocation), with a cached
// denial while one covers n, and otherwise by asking the store for a new
// lease. Costs above Lease, keys past MaxKeys and every call after Close go
// to the source, which also checks n and the key as its AllowN does.
//
// An allowed decision from a lease reports the lease's Limit, as
// Remaining the lease's unused units plus what the store had left when it
// granted the lease (other processes' use since is not seen), and the
// store's ResetAfter counted down. A local denial is described in the
// package doc.
func (b *Budget) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	if !b.built() {
		return core.Decision{}, errZero
	}
	if n < 1 || n > b.maxLease || len(key) == 0 || len(key) > core.MaxKeyLen || b.closed.Load() {
		return b.directN(ctx, key, n)
	}
	s := (*b.keys.Load())[key]
	if s == nil {
		if s = b.add(key); s == nil {
			return b.directN(ctx, key, n)
		}
	}
	l := s.cur.Load()
	now := b.now()
	if d, ok := l.take(now, n); ok {
		return d, nil
	}
	if d, ok := s.denied(now, n); ok {
		return d, nil
	}
	return b.renew(ctx, key, s, n)
}

// directN asks the source, and counts what it allows.
func (b *Budget) directN(ctx context.Context, key string, n int64) (core.Decision, error) {
	d, err := b.src.Decide(ctx, core.Request{Key: key, N: n})
	if err == nil && d.Allowed {
		b.direct.Add(n)
	}
	return d, err
}

// Peek asks the source: it reports the shared state, in which this and
// other processes' leases are counted in full, used or not.
func (b *Budget) Peek(ctx context.Context, key string) (core.Decision, error) {
	return b.Decide(ctx, core.Request{Key: key, N: 1, Op: core.OpPeek})
}

// Reset drops key's lease and cached denial in this process (the unused
// units are lost: the state that counted them is going) and resets key in
// the source. Other processes keep their leases of key until they are
// spent or expire, so up to their unused units are allowed beyond the
// fresh state's limit.
func (b *Budget) Reset(ctx context.Context, key string) error {
	if !b.built() {
		return errZero
	}
	if s := (*b.keys.Load())[key]; s != nil {
		if err := s.lock(ctx); err != nil {
			return err
		}
		if l := s.cur.Swap(nil); l != nil {
			b.lost.Add(l.avail.Swap(0))
		}
		s.deny.Store(nil)
		s.dry.Store(nil)
		s.unlock()
	}
	return b.src.Reset(ctx, key)
}

// Close gives back the unused units of every live lease (with the
// source's Refund; when a refund fails, they are lost) and
// returns the refunds' errors, joined. From Close on, every request is
// decided by the source. Close may be called more than once.
func (b *Budget) Close(ctx context.Context) error {
	if !b.built() {
		return errZero
	}
	b.closed.Store(true)
	var errs []error
	for key, s := range *b.keys.Load() {
		if err := s.lock(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		if l := s.cur.Swap(nil); l != nil {
			errs = append(errs, b.giveBack(ctx, key, l, b.now()))
		}
		s.deny.Store(nil)
		s.unlock()
	}
	return errors.Join(errs...)
}

// Refund gives n back to the source (the shared state) and forgets this
// process's cached denial of key, so that the next request asks for a
// lease again; units taken from this process's leases are not given back
// to them.
func (b *Budget) Refund(ctx context.Context, key string, n int64) (core.Decision, error) {
	return b.Decide(ctx, core.Request{Key: key, N: n, Op: core.OpRefund})
}

// forget drops key's cached denial and dryness in this process, so that
// its next request asks for a lease again.
func (b *Budget) forget(ctx context.Context, key string) error {
	if s := (*b.keys.Load())[key]; s != nil {
		if err := s.lock(ctx); err != nil {
			return err
		}
		s.deny.Store(nil)
		s.dry.Store(nil)
		s.unlock()
	}
	return nil
}

// MaxCost returns the source's (core.Limiter); 0 for a Budget New did not
// make.
func (b *Budget) MaxCost() int64 {
	if !b.built() {
		return 0
	}
	return b.src.MaxCost()
}

// Unwrap returns the source, for tools that walk a chain of wrapped
// limiters, such as instrumentation.
func (b *Budget) Unwrap() core.Limiter {
	if b == nil {
		return nil
	}
	return b.src
}
