package hotkey

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
)

// slot is one key's budget in this process: its live lease, its cached
// denial, and the lock one renewal at a time holds.
type slot struct {
	cur  atomic.Pointer[lease]   // the lease requests take units from; nil before the first
	deny atomic.Pointer[denial]  // the store's last denial, while it lasts; nil when none
	dry  atomic.Pointer[dryness] // set while the store has less left than a lease

	sem chan struct{} // held by the one goroutine renewing (or evicting, resetting, closing)

	// Under sem.
	renewals atomic.Uint64 // renewals finished, read without sem to notice one finished
	failed   error         // the error of the last renewal, nil when it answered
	size     int64         // the units the next lease asks for
	limit    int64         // the source's limit for this key, 0 until known
	dead     bool          // evicted: a renewal must go back to the map
}

// lease is units the store granted: immutable but for avail, which
// requests take from. A new lease is a new value, so a request that loaded
// an old one can only take the old one's units.
type lease struct {
	avail     atomic.Int64 // units left
	granted   int64        // units the store granted
	sent      int64        // when the lease was asked for (Budget time, ns)
	expires   int64        // sent + TTL: units may be taken before it
	limit     int64        // the store's decision: Limit
	remaining int64        // the store's decision: Remaining
	resetAt   int64        // sent + the store's ResetAfter
	window    int64        // the store's decision: Window (ns)
}

// denial is the store's denial of a request of cost at least cost, which
// holds until until (Budget time, ns).
type denial struct {
	until int64
	cost  int64
	at    int64
	d     core.Decision
}

// dryness is what the last lease call said when the store had less left
// than a lease: the key is at its limit, and units come back only as fast
// as the limit grants them.
type dryness struct {
	limit   int64
	rtt     int64 // how long the lease call took
	resetAt int64
	window  int64 // the store's decision: Window (ns)
}

// denial answers a request that found the lease spent while the next one
// is being asked for: the units it may bring are due in about a round
// trip.
func (dr *dryness) denial(now int64) core.Decision {
	return core.Decision{
		Limit:      dr.limit,
		RetryAfter: time.Duration(max(dr.rtt, int64(time.Microsecond))),
		ResetAfter: time.Duration(max(dr.resetAt-now, 0)),
		Window:     time.Duration(dr.window),
	}
}

func newSlot(size int64) *slot {
	return &slot{sem: make(chan struct{}, 1), size: size}
}

func (s *slot) lock(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", core.ErrStore, ctx.Err())
	}
}

func (s *slot) unlock() { <-s.sem }

// take allows n from l, the key's lease loaded before the clock was read
// for now, if l is live at now and holds n units. Loading first means a
// unit is only ever allowed from a lease asked for before the instant it
// is allowed at, and less than TTL before.
func (l *lease) take(now, n int64) (core.Decision, bool) {
	if l == nil || now >= l.expires {
		return core.Decision{}, false
	}
	for v := l.avail.Load(); v >= n; v = l.avail.Load() {
		if l.avail.CompareAndSwap(v, v-n) {
			return l.allowed(now, v-n), true
		}
	}
	return core.Decision{}, false
}

func (l *lease) allowed(now, left int64) core.Decision {
	return core.Decision{
		Allowed:    true,
		Limit:      l.limit,
		Remaining:  min(left+l.remaining, l.limit),
		ResetAfter: time.Duration(max(l.resetAt-now, 0)),
		Window:     time.Duration(l.window),
	}
}

// denied answers from the cached denial, if it covers n at now.
func (s *slot) denied(now, n int64) (core.Decision, bool) {
	dn := s.deny.Load()
	if dn == nil || now >= dn.until || n < dn.cost {
		return core.Decision{}, false
	}
	d := dn.d
	d.RetryAfter = time.Duration(dn.until - now)
	d.ResetAfter = max(d.ResetAfter-time.Duration(now-dn.at), 0)
	return d, true
}

// renew decides a request the live lease cannot serve: it waits for the
// key's lock, uses a renewal that finished meanwhile, or asks the store
// for a new lease.
func (b *Budget) renew(ctx context.Context, key string, s *slot, n int64) (core.Decision, error) {
	seen := s.renewals.Load()
	if dr := s.dry.Load(); dr != nil {
		// At the limit: a request that would wait for the lease on its
		// way is denied at once instead (waiting would only queue requests
		// behind the limit's rate); one with nothing on its way asks.
		select {
		case s.sem <- struct{}{}:
		default:
			return dr.denial(b.now()), nil
		}
	} else if err := s.lock(ctx); err != nil {
		return core.Decision{}, err
	}
	if s.dead || b.closed.Load() {
		// Evicted (the map has a new slot for key, or none) or closed.
		s.unlock()
		return b.AllowN(ctx, key, n)
	}
	defer s.unlock()
	// Leases are installed under the lock: the one loaded here is current.
	cur := s.cur.Load()
	now := b.now()
	if s.renewals.Load() != seen {
		// Another call renewed while this one waited: take its answer.
		if d, ok := cur.take(now, n); ok {
			return d, nil
		}
		if d, ok := s.denied(now, n); ok {
			return d, nil
		}
		if s.failed != nil {
			return core.Decision{}, s.failed
		}
		if dr := s.dry.Load(); dr != nil {
			return dr.denial(now), nil
		}
	}

	if cur != nil {
		switch left := cur.avail.Load(); {
		case now >= cur.expires && 2*left >= cur.granted:
			// Expired at least half unused: ask for less.
			s.size = max(s.size/2, b.minLease)
		case now < cur.expires && now-cur.sent < b.ttl/2:
			// Spent within half its TTL: ask for more.
			s.size = min(2*s.size, b.maxLease)
		}
	}
	want := max(s.size, n)
	if s.limit > 0 {
		want = max(min(want, s.limit), n)
	}
	granted, d, err := b.lease(ctx, key, want)
	if err != nil && errors.Is(err, core.ErrInvalidCost) && want > n && b.atMost == nil {
		// The lease is more than the key's limit: learn the limit, then
		// ask for no more than it. When Peek fails, its error is the
		// answer: the request itself may well fit.
		p, perr := b.src.Decide(ctx, core.Request{Key: key, N: 1, Op: core.OpPeek})
		switch {
		case perr != nil:
			err = fmt.Errorf("hotkey: a lease of %d is above the key's limit, and the Peek that reads the limit failed: %w", want, perr)
		case p.Limit >= n:
			s.limit, want = p.Limit, max(min(want, p.Limit), n)
			s.size = min(s.size, p.Limit)
			granted, d, err = b.lease(ctx, key, want)
		}
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, core.ErrStore) {
			s.failed = err // calls that waited for this one get its error
		} else {
			// The caller gave up, or its request was its own mistake: the
			// waiters ask for themselves.
			s.failed = nil
		}
		s.renewals.Add(1)
		return core.Decision{}, err
	}
	s.failed = nil
	s.limit = d.Limit
	arrived := b.now()
	if granted > 0 && arrived >= now+b.ttl {
		// The lease arrived expired (its call took longer than the TTL):
		// its units are lost, and this request is denied like one that
		// waits for a lease at the limit.
		b.leases.Add(1)
		b.granted.Add(granted)
		b.lost.Add(granted)
		s.renewals.Add(1)
		return (&dryness{limit: d.Limit, rtt: arrived - now, resetAt: now + int64(d.ResetAfter), window: int64(d.Window)}).denial(arrived), nil
	}
	// A decision without a Limit (failsafe's fail-open answer) says
	// nothing about what is left.
	if granted < want || d.Limit > 0 && d.Remaining < s.size {
		s.dry.Store(&dryness{limit: d.Limit, rtt: arrived - now, resetAt: now + int64(d.ResetAfter), window: int64(d.Window)})
	} else {
		s.dry.Store(nil)
	}
	if granted > 0 {
		b.install(s, now, granted, want, n, d)
	}
	s.renewals.Add(1)
	if granted >= n {
		s.deny.Store(nil)
		return core.Decision{
			Allowed:    true,
			Limit:      d.Limit,
			Remaining:  min(granted-n+d.Remaining, d.Limit),
			ResetAfter: d.ResetAfter,
			Window:     d.Window,
		}, nil
	}

	// Denied, or fewer units than n: the units granted are in the lease,
	// for smaller requests. A denial of a request of cost n says how long
	// it must wait (AllowAtMost's denial, how long until one unit fits);
	// otherwise ask the store for this request alone.
	exact := granted == 0 && (b.atMost == nil && want == n || b.atMost != nil && n == 1)
	if granted == 0 && b.atMost == nil {
		// The whole lease did not fit: ask for less next time. (A partial
		// grant asks for as many as fit already.)
		s.size = max(s.size/2, b.minLease)
	}
	if !exact {
		now = b.now()
		d, err = b.directN(ctx, key, n)
		if err != nil || d.Allowed {
			return d, err
		}
	}
	if d.RetryAfter > 0 {
		s.deny.Store(&denial{until: now + int64(d.RetryAfter), cost: n, at: now, d: d})
	}
	return d, nil
}

// lease asks the source for up to want units (all of them, without
// AllowAtMost) and reports how many it granted.
func (b *Budget) lease(ctx context.Context, key string, want int64) (int64, core.Decision, error) {
	if b.atMost != nil {
		return b.atMost.AllowAtMost(ctx, key, want)
	}
	d, err := b.src.Decide(ctx, core.Request{Key: key, N: want})
	if err != nil || !d.Allowed {
		return 0, d, err
	}
	return want, d, nil
}

// install makes granted units, asked for at sent, the key's lease (the
// request of cost n that asked takes its n when granted covers it) and
// ends the previous lease. Under s's lock.
func (b *Budget) install(s *slot, sent, granted, want, n int64, d core.Decision) {
	b.leases.Add(1)
	b.granted.Add(granted)
	l := &lease{
		granted:   granted,
		sent:      sent,
		expires:   sent + b.ttl,
		limit:     d.Limit,
		remaining: d.Remaining,
		resetAt:   sent + int64(d.ResetAfter),
		window:    int64(d.Window),
	}
	l.avail.Store(granted)
	if granted >= n {
		l.avail.Store(granted - n)
	}
	if prev := s.cur.Swap(l); prev != nil {
		// What the old lease has left (fewer units than a request needed,
		// or an expired lease's) is lost, not refunded: only Close gives
		// units back, so that each process does so once at most.
		b.lost.Add(prev.avail.Swap(0))
	}
}

// giveBack ends l: its unused units go back to the store while l is live
// (the source's Refund), and are lost otherwise, or when the refund
// fails, whose error it returns.
func (b *Budget) giveBack(ctx context.Context, key string, l *lease, now int64) error {
	left := l.avail.Swap(0)
	if left == 0 {
		return nil
	}
	if now >= l.expires {
		b.lost.Add(left)
		return nil
	}
	if _, err := b.src.Decide(ctx, core.Request{Key: key, N: left, Op: core.OpRefund}); err != nil {
		b.lost.Add(left)
		return err
	}
	b.refunded.Add(left)
	return nil
}
