package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/gather"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
	"github.com/ratekit/ratekit/internal/slot"
)

// Coalescer gathers concurrent AllowN calls on one engine into batch
// script calls, so that many goroutines deciding at once pay a script
// call's parsing, lookup and reply once per batch instead of once per
// decision.
//
// Calls are grouped as a batch script allows: every key together on a
// store that is one node (core.SingleNode), by cluster slot on any other
// (where AllowMany's calls then split a batch by key).
// A group has at most MaxInFlight calls in flight. A call that finds
// fewer is sent at once, alone, exactly as Engine.Decide sends it: no
// timer, no wait. A call that finds MaxInFlight joins the group's queue;
// when a call in flight returns, its caller hands the whole queue to the
// queue's first waiter, which sends it as one batch (AllowMany's calls of
// up to maxBatch decisions, a hot key's up to maxCoalescedKey in one call,
// in one round trip), passes on the next queue
// when its reply is back, and then hands each waiter its decision.
//
// A batch is decided at one time, read when it is sent, in queue order:
// each call is decided after every call that returned before it began,
// as it would be one by one.
type Coalescer struct {
	e *Engine
	// one is every key's group on a store that is one node.
	one *group
	// slots holds a group per cluster slot, made on first use, for any
	// other store.
	slotsOnce sync.Once
	slots     []atomic.Pointer[group]
	waiters   sync.Pool // *waiter
}

// MaxInFlight is how many calls (or batches) of a group may be in flight
// at once. With one, the server idles while a batch's reply travels back,
// its caller wakes the next lead and the next batch is built; with two,
// the next batch is at the server while the last one's reply is read. In
// make bench (rueidis and go-redis, 256 goroutines) two made 1.2-1.4x the
// decisions per second of one; three no more than two, four fewer (the
// batches get smaller). Four did better at moderate load: in three
// runs of each (bench/peers; rueidis, go-redis and valkey-go; each
// against the plain limiter measured beside it), four's gain over the
// plain limiter was 1.04-1.12x two's at 16 and 64 goroutines, and
// 0.95-0.99x at 256. Two is kept for the load coalescing is for.
const MaxInFlight = 2

// group is the calls of one batch script's reach: a slot, or every key.
type group struct {
	line gather.Line[*waiter]
}

func newGroup() *group {
	g := new(group)
	g.line.Limit = MaxInFlight
	return g
}

// waiter is one call waiting in a group's queue.
type waiter struct {
	gather.Waiter[*waiter]
	key  string // the user's
	buf  []byte // where the slot of key is found
	n    int64
	ps   []core.Params // the limits the request gives, nil for the engine's
	keys []string      // its limits' own keys, nil for none
	// d and err are the decision once the call was taken and woken.
	d   core.Decision
	err error
}

// Waiting returns the part of w the group's line keeps.
func (w *waiter) Waiting() *gather.Waiter[*waiter] { return &w.Waiter }

// NewCoalescer returns a Coalescer deciding with e. It starts nothing and
// holds nothing but its groups.
func NewCoalescer(e *Engine) *Coalescer {
	c := &Coalescer{e: e, one: newGroup()}
	c.waiters.New = func() any { return &waiter{buf: make([]byte, 0, 96)} }
	return c
}

// Decide decides key at cost n against the limits ps gives (nil: the
// engine's own), as Engine.DecideRequest does for an OpAllow request,
// with the same errors: alone when fewer than MaxInFlight calls of its
// group are in flight, in the next batch otherwise.
//
// When ctx ends while the call waits in the queue, the call returns an
// error wrapping core.ErrStore and ctx.Err(), and nothing is sent for it.
// When ctx ends after the call went out in a batch, it returns the same
// error at once, but the store may still decide it and count it, as a
// call whose context ends while Redis runs it. A batch is sent with no
// cancellation of its own (no caller's cancellation may undo another's
// decision) and the latest deadline among its calls, none if one has none.
func (c *Coalescer) Decide(ctx context.Context, key string, n int64, ps []core.Params, keys []string) (core.Decision, error) {
	if c.e.local != nil {
		// Nothing to gather: a decision in process is no store call.
		return c.e.DecideRequest(ctx, &core.Request{Key: key, N: n, Params: ps, Keys: keys})
	}
	if err := keyspace.CheckKey(key); err != nil {
		return core.Decision{}, err
	}
	if err := c.e.checkKeys(keys); err != nil {
		return core.Decision{}, err
	}
	maxCost, err := c.e.given(ps)
	if err != nil {
		return core.Decision{}, err
	}
	if err := params.Cost(n, maxCost); err != nil {
		return core.Decision{}, err
	}
	if err := Ended(ctx); err != nil {
		return core.Decision{}, err
	}
	// On one node every key is in one group, and a lone call needs no
	// waiter: it is made only if the call queues.
	g, w := c.one, (*waiter)(nil)
	if !c.e.singleNode() {
		w = c.waiter(key, n, ps, keys)
		w.buf = keyspace.AppendKey(w.buf[:0], "", key, "")
		g = c.slot(slot.Of(unsafe.String(unsafe.SliceData(w.buf), len(w.buf))))
	}
	q, alone := g.line.Enter(ctx, func() *waiter {
		if w == nil {
			w = c.waiter(key, n, ps, keys)
		}
		return w
	})
	if alone {
		if w != nil {
			c.free(w)
		}
		defer g.line.Done() // even if the store panics
		if len(ps) > 0 || keys != nil {
			now, err := params.Now(c.e.clock)
			if err != nil {
				return core.Decision{}, err
			}
			return c.e.decide(ctx, key, n, ModeAllow, now, ps, keys)
		}
		return c.e.Decide(ctx, key, n, ModeAllow)
	}
	d, err := c.wait(ctx, g, q)
	c.e.shadowDeny(ctx, key, d, err)
	return d, err
}

// waiter returns a pooled waiter for key at cost n, giving ps and keys.
func (c *Coalescer) waiter(key string, n int64, ps []core.Params, keys []string) *waiter {
	w := c.waiters.Get().(*waiter)
	w.key, w.n, w.ps, w.keys = key, n, ps, keys
	return w
}

// slot returns slot s's group, making it on first use.
func (c *Coalescer) slot(s int) *group {
	c.slotsOnce.Do(func() { c.slots = make([]atomic.Pointer[group], slot.Count) })
	p := &c.slots[s]
	if g := p.Load(); g != nil {
		return g
	}
	p.CompareAndSwap(nil, newGroup())
	return p.Load()
}

// wait waits for w's decision, or for w's turn to lead the next batch.
func (c *Coalescer) wait(ctx context.Context, g *group, w *waiter) (core.Decision, error) {
	switch g.line.Wait(w) {
	case gather.Taken:
		d, err := w.d, w.err
		c.free(w)
		return d, err
	case gather.Lead:
		return c.lead(g, w, nil)
	case gather.LeadLeft:
		// The batch is this caller's to send, the others' decisions with
		// it; its own request stays out.
		return c.lead(g, w, Ended(ctx))
	}
	// Left: never sent, or sent and the decision may count (a lead may
	// still write to w, which is not reused).
	return core.Decision{}, Ended(ctx)
}

// lead sends the batch w leads and hands each waiter its decision. When
// own is not nil, w's caller has left: its request is left out and own is
// its answer.
func (c *Coalescer) lead(g *group, w *waiter, own error) (core.Decision, error) {
	g.line.Send(w, own == nil, func(live []*waiter) {
		for i, r := range c.send(g, live) {
			live[i].d, live[i].err = r.Decision, r.Err
		}
	}, func(live []*waiter, p any) {
		err := fmt.Errorf("%w: the store panicked deciding a coalesced batch: %v", core.ErrStore, p)
		for _, x := range live {
			x.d, x.err = core.Decision{}, err
		}
	})
	if own != nil {
		return core.Decision{}, own
	}
	d, err := w.d, w.err
	c.free(w)
	return d, err
}

// send decides the waiters' requests in one batch, at one time.
func (c *Coalescer) send(g *group, live []*waiter) []core.Result {
	out := make([]core.Result, len(live))
	if len(live) == 0 {
		return out
	}
	now, err := params.Now(c.e.clock)
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	b := getBatch(len(live))
	defer b.put()
	items, idx := b.items, b.idx
	for i, x := range live {
		items[i] = item{key: x.key, n: x.n, ps: x.ps, keys: x.keys}
		idx = append(idx, i)
	}
	ctx, cancel := g.line.Context(live)
	defer cancel()
	c.e.decideItems(ctx, b, now, items, idx, maxCoalescedKey, out)
	return out
}

// free readies w for another call and pools it.
func (c *Coalescer) free(w *waiter) {
	w.Reset()
	w.key, w.buf, w.n, w.ps, w.keys, w.d, w.err = "", w.buf[:0], 0, nil, nil, core.Decision{}, nil
	c.waiters.Put(w)
}
