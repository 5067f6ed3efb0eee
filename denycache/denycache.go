// Package denycache remembers a limiter's denials in process. When the
// store says "denied, retry after r" for a key and cost, the same key at
// the same cost is denied locally until then, with no round trip: under
// attack, most requests are denials, and this sheds them before they
// reach Redis. (A higher cost is denied too, but its RetryAfter is
// longer by an amount only the store knows: it asks the store.)
//
// This is exact for every ratekit algorithm, with one exception it cannot
// see: a change to the key made elsewhere before r is up. A Reset or a
// Refund from another process (or through another Limiter, the one behind
// the cache included) is invisible here, and this process keeps denying
// the key until r ends. Call Reset on this Limiter,
// or Forget, to clear the key in this process. Requests counted by other
// processes only ever push r later, so they never make a cached denial
// wrong.
package denycache

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/callcheck"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

const shards = 64

// Limiter is a core.Limiter that answers cached denials locally and asks
// its next limiter otherwise: any limiter, a policy too. It is safe for
// concurrent use. The zero Limiter, and a nil *Limiter, cannot decide:
// every call returns an error wrapping core.ErrInvalidConfig and MaxCost
// returns 0; build one with New.
type Limiter struct {
	next   core.Limiter
	now    func() time.Time
	max    int
	clock  core.Clock // WithClock's
	seed   maphash.Seed
	hits   atomic.Uint64
	keys   atomic.Int64 // denials cached, at most max
	shards [shards]shard
}

type shard struct {
	mu sync.Mutex
	m  map[string]denial
}

type denial struct {
	until int64 // Unix ns
	at    int64 // Unix ns when cached
	n     int64 // the cost denied: this cost is answered from here
	// ps are the limits the denied request gave (a copy), nil for the
	// next limiter's own: only a request that gives the same is
	// answered from here.
	ps []core.Params
	d  core.Decision
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock sets the clock the cache measures RetryAfter with (the
// system's by default). New refuses a nil c.
func WithClock(c core.Clock) Option {
	return func(l *Limiter) {
		if l.clock = c; c == nil {
			l.clock = core.ClockFunc(nil) // it reads the zero time, which New refuses
		}
	}
}

// WithMaxKeys bounds the keys remembered (DefaultMaxKeys by default).
// At the bound, a new key's denial takes the place of one that has ended,
// found among a few keys of its shard, or is not cached. n <= 0 caches
// nothing: every call goes to the next limiter.
func WithMaxKeys(n int) Option { return func(l *Limiter) { l.max = n } }

// DefaultMaxKeys is how many keys a Limiter remembers without
// WithMaxKeys.
const DefaultMaxKeys = 65536

// New returns a deny cache in front of next, or an error wrapping
// core.ErrInvalidConfig: for a next that cannot decide (nil, or not built
// by its New), a nil option, or a clock that is nil or reads a time
// outside what ratekit computes with.
func New(next core.Limiter, opts ...Option) (*Limiter, error) {
	if next == nil || next.MaxCost() < 1 {
		return nil, fmt.Errorf("%w: denycache.New: the next limiter is nil or cannot decide (not built by its New)", core.ErrInvalidConfig)
	}
	l := &Limiter{next: next, now: time.Now, max: DefaultMaxKeys, seed: maphash.MakeSeed()}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: denycache.New: an Option is nil", core.ErrInvalidConfig)
		}
		o(l)
	}
	if l.clock != nil {
		if err := params.CheckClock(l.clock); err != nil {
			return nil, fmt.Errorf("denycache.WithClock: %w", err)
		}
		l.now = l.clock.Now
	}
	for i := range l.shards {
		l.shards[i].m = map[string]denial{}
	}
	return l, nil
}

// errZero is what the calls of a Limiter not built by New return.
var errZero = fmt.Errorf("%w: a zero denycache.Limiter: build it with denycache.New", core.ErrInvalidConfig)

// check returns errZero for a nil or zero Limiter, nil for one New made.
func (l *Limiter) check() error {
	if l == nil || l.next == nil {
		return errZero
	}
	return nil
}

// MaxCost returns the next limiter's (core.Limiter); 0 for a Limiter New
// did not make.
func (l *Limiter) MaxCost() int64 {
	if l.check() != nil {
		return 0
	}
	return l.next.MaxCost()
}

func (l *Limiter) shard(key string) *shard {
	return &l.shards[maphash.String(l.seed, key)%shards]
}

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: 1})
}

// AllowN is Decide for an OpAllow request of cost n on key.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: n})
}

// Decide answers an OpAllow request locally while a cached denial for
// its key at its cost, with the same Params, lasts, and asks the next
// limiter otherwise. A cached answer is the stored denial with
// RetryAfter and ResetAfter counted down; it is given only to a request
// the next limiter would not refuse (Op, key, Params, cost and ctx
// checked as it checks them). Where a key's denials come at several
// costs, the lowest cost's is kept; where they come with other Params
// (its limits changed), the latest's. A request whose limits have keys
// of their own (Keys) goes to the next limiter. An OpPeek request goes to
// the next limiter; an OpRefund request, once checked (one refused keeps
// the denial: nothing was refunded), goes to the next limiter and then
// forgets the key's cached denial here (the refund may let a request
// through before it would have ended).
func (l *Limiter) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if err := l.check(); err != nil {
		return core.Decision{}, err
	}
	switch r.Op {
	case core.OpPeek:
		return l.next.Decide(ctx, r)
	case core.OpRefund:
		if err := callcheck.Request(ctx, r, l.next.MaxCost()); err != nil {
			return core.Decision{}, err // refused: the denial still holds
		}
		d, err := l.next.Decide(ctx, r)
		// After the refund, not before: a denial another call cached
		// while it ran was decided before it, and goes too. A store
		// error may follow a refund that was made: the denial goes then
		// too.
		l.Forget(r.Key)
		return d, err
	}
	if r.Keys != nil {
		// Limits of keys of their own: a denial is the combination's,
		// which the cache, by Key, does not hold.
		return l.next.Decide(ctx, r)
	}
	key, n := r.Key, r.N
	now := l.now().UnixNano()
	sh := l.shard(key)
	sh.mu.Lock()
	c, ok := sh.m[key]
	if ok && now >= c.until {
		l.drop(sh, key)
		ok = false
	}
	sh.mu.Unlock()
	if ok && n == c.n {
		if err := callcheck.Request(ctx, r, l.next.MaxCost()); err != nil {
			return core.Decision{}, err
		}
		if engine.SameParams(r.Params, c.ps) {
			l.hits.Add(1)
			return c.countedDown(now), nil
		}
	}
	d, err := l.next.Decide(ctx, r)
	if err != nil || d.Allowed || d.RetryAfter <= 0 {
		return d, err
	}
	sh.mu.Lock()
	c, ok = sh.m[key] // again: another call may have changed it
	if !ok && l.room(sh, now) || ok && (n <= c.n || !engine.SameParams(r.Params, c.ps)) {
		var ps []core.Params
		if len(r.Params) > 0 {
			ps = append(ps, r.Params...) // the caller may reuse its slice
		}
		sh.m[key] = denial{until: now + int64(d.RetryAfter), at: now, n: n, ps: ps, d: d}
	}
	sh.mu.Unlock()
	return d, nil
}

// countedDown returns the cached denial as it reads at now: its waits,
// and those of each limit of a policy, counted down since it was cached.
func (c denial) countedDown(now int64) core.Decision {
	passed := time.Duration(now - c.at)
	d := c.d
	d.RetryAfter = time.Duration(c.until - now)
	d.ResetAfter = max(d.ResetAfter-passed, 0)
	if d.Limits != nil {
		d.Limits = append([]core.LimitDecision(nil), d.Limits...)
		for i := range d.Limits {
			l := &d.Limits[i]
			l.RetryAfter = max(l.RetryAfter-passed, 0)
			l.ResetAfter = max(l.ResetAfter-passed, 0)
		}
	}
	return d
}

// sample is how many of a shard's keys room looks at for denials that
// have ended.
const sample = 16

// room takes a place in the cache for a new key of sh, whose lock is
// held: a free one, or one freed by dropping the denials that have ended
// among a few of sh's keys (a map's range starts anywhere: a random
// sample). It reports false when it found none.
func (l *Limiter) room(sh *shard, now int64) bool {
	if l.keys.Add(1) <= int64(l.max) {
		return true
	}
	l.keys.Add(-1)
	freed, seen := false, 0
	for k, c := range sh.m {
		if now >= c.until {
			l.drop(sh, k)
			freed = true
		}
		if seen++; seen == sample {
			break
		}
	}
	if freed && l.keys.Add(1) <= int64(l.max) {
		return true
	}
	if freed {
		l.keys.Add(-1)
	}
	return false
}

// drop deletes key's denial, which sh holds; sh is locked.
func (l *Limiter) drop(sh *shard, key string) {
	delete(sh.m, key)
	l.keys.Add(-1)
}

// Hits returns the number of requests denied from the cache, without
// asking the next limiter, since New: the round trips it saved.
func (l *Limiter) Hits() uint64 {
	if l == nil {
		return 0
	}
	return l.hits.Load()
}

// Unwrap returns the limiter behind the cache, for tools that walk a chain
// of wrapped limiters, such as instrumentation.
func (l *Limiter) Unwrap() core.Limiter {
	if l == nil {
		return nil
	}
	return l.next
}

// Peek is Decide for an OpPeek request of cost 1: the next limiter's
// answer (it is read-only there already).
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: 1, Op: core.OpPeek})
}

// Refund is Decide for an OpRefund request of cost n on key: it refunds
// the next limiter and then forgets key's cached denial here, unless the
// request is refused.
func (l *Limiter) Refund(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: n, Op: core.OpRefund})
}

// Reset forgets key here and resets it in the next limiter.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if err := l.check(); err != nil {
		return err
	}
	l.Forget(key)
	return l.next.Reset(ctx, key)
}

// Forget drops a cached denial for key in this process only. On a
// Limiter that caches nothing (a zero one, or one New refused) it does
// nothing.
func (l *Limiter) Forget(key string) {
	if l.check() != nil {
		return
	}
	sh := l.shard(key)
	sh.mu.Lock()
	if _, ok := sh.m[key]; ok {
		l.drop(sh, key)
	}
	sh.mu.Unlock()
}
