// Package denycache remembers a limiter's denials in process. When the
// store says "denied, retry after r" for a key and cost, the same key at
// the same or a higher cost is denied locally until then, with no round
// trip: under attack, most requests are denials, and this sheds them
// before they reach Redis.
//
// This is exact for every ratekit algorithm, with one exception it cannot
// see: a change to the key made elsewhere before r is up. A Reset from
// another process (or from another Limiter) is invisible here, and this
// process keeps denying the key until r ends. Call Reset on this Limiter,
// or Forget, to clear the key in this process. Requests counted by other
// processes only ever push r later, so they never make a cached denial
// wrong.
package denycache

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
)

const shards = 64

// Limiter is a core.Limiter that answers cached denials locally and asks
// its next limiter otherwise. It is safe for concurrent use.
type Limiter struct {
	next   core.Limiter
	now    func() time.Time
	max    int
	seed   maphash.Seed
	hits   atomic.Uint64
	shards [shards]shard
}

type shard struct {
	mu sync.Mutex
	m  map[string]denial
}

type denial struct {
	until int64 // Unix ns
	at    int64 // Unix ns when cached
	n     int64 // the cost denied; this cost and above stay denied
	d     core.Decision
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock sets the clock the cache measures RetryAfter with (time.Now by
// default).
func WithClock(now func() time.Time) Option { return func(l *Limiter) { l.now = now } }

// WithMaxKeys bounds the keys remembered (65536 by default); beyond it,
// new denials are not cached until old ones end.
func WithMaxKeys(n int) Option { return func(l *Limiter) { l.max = n } }

// New returns a deny cache in front of next.
func New(next core.Limiter, opts ...Option) *Limiter {
	l := &Limiter{next: next, now: time.Now, max: 65536, seed: maphash.MakeSeed()}
	for _, o := range opts {
		o(l)
	}
	for i := range l.shards {
		l.shards[i].m = map[string]denial{}
	}
	return l
}

func (l *Limiter) shard(key string) *shard {
	return &l.shards[maphash.String(l.seed, key)%shards]
}

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (core.Decision, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN denies locally while a cached denial for key covers n, and asks
// the next limiter otherwise. A cached answer is the stored denial with
// RetryAfter and ResetAfter counted down.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	now := l.now().UnixNano()
	sh := l.shard(key)
	sh.mu.Lock()
	c, ok := sh.m[key]
	if ok && now >= c.until {
		delete(sh.m, key)
		ok = false
	}
	sh.mu.Unlock()
	if ok && n >= c.n {
		l.hits.Add(1)
		d := c.d
		d.RetryAfter = time.Duration(c.until - now)
		d.ResetAfter = max(d.ResetAfter-time.Duration(now-c.at), 0)
		return d, nil
	}
	d, err := l.next.AllowN(ctx, key, n)
	if err != nil || d.Allowed || d.RetryAfter <= 0 {
		return d, err
	}
	sh.mu.Lock()
	if len(sh.m) < l.max/shards || ok {
		if !ok || n < c.n || now+int64(d.RetryAfter) > c.until {
			sh.m[key] = denial{until: now + int64(d.RetryAfter), at: now, n: n, d: d}
		}
	}
	sh.mu.Unlock()
	return d, nil
}

// Hits returns the number of requests denied from the cache, without
// asking the next limiter, since New: the round trips it saved.
func (l *Limiter) Hits() uint64 { return l.hits.Load() }

// Unwrap returns the limiter behind the cache, for tools that walk a chain
// of wrapped limiters, such as instrumentation.
func (l *Limiter) Unwrap() core.Limiter { return l.next }

// Peek asks the next limiter: it is read-only there already.
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.next.Peek(ctx, key)
}

// Reset forgets key here and resets it in the next limiter.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	l.Forget(key)
	return l.next.Reset(ctx, key)
}

// Forget drops a cached denial for key in this process only.
func (l *Limiter) Forget(key string) {
	sh := l.shard(key)
	sh.mu.Lock()
	delete(sh.m, key)
	sh.mu.Unlock()
}
