package engine

import (
	"context"
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
// A group has at most maxInFlight calls in flight. A call that finds
// fewer is sent at once, alone, exactly as Engine.Decide sends it: no
// timer, no wait. A call that finds maxInFlight joins the group's queue;
// when a call in flight returns, its caller hands the whole queue to the
// queue's first waiter, which sends it as one batch (AllowMany's calls of
// up to maxBatch decisions, in one round trip), passes on the next queue
// when its reply is back, and then hands each waiter its decision.
//
// A batch is decided at one time, read when it is sent, in queue order:
// each call is decided after every call that returned before it began,
// as it would be one by one.
type Coalescer struct {
	e *Engine
	// one is every key's group on a store that is one node.
	one group
	// slots holds a group per cluster slot, made on first use, for any
	// other store.
	slotsOnce sync.Once
	slots     []atomic.Pointer[group]
	waiters   sync.Pool // *waiter
}

// maxInFlight is how many calls (or batches) of a group may be in flight
// at once. With one, the server idles while a batch's reply travels back,
// its caller wakes the next lead and the next batch is built; with two,
// the next batch is at the server while the last one's reply is read. In
// make bench (rueidis and go-redis, 256 goroutines) two made 1.2-1.4x the
// decisions per second of one; three no more than two, four fewer (the
// batches get smaller).
const maxInFlight = 2

// group is the calls of one batch script's reach: a slot, or every key.
type group struct {
	mu       sync.Mutex
	inFlight int       // calls of the group in flight
	queue    []*waiter // what came while maxInFlight were
}

// A waiter's state: queued until a lead takes it into a batch (taken) or
// makes it the lead; gone when its caller left before either.
const (
	queued int32 = iota
	taken
	lead
	gone
)

// waiter is one call waiting in a group's queue.
type waiter struct {
	ctx   context.Context
	key   string // the user's
	skey  string // the storage key, possibly in buf
	buf   []byte
	n     int64
	state atomic.Int32
	// wake is signalled once: the decision is in d and err (taken), or
	// the waiter leads batch (lead).
	wake  chan struct{}
	d     core.Decision
	err   error
	batch []*waiter
}

// NewCoalescer returns a Coalescer deciding with e. It starts nothing and
// holds nothing but its groups.
func NewCoalescer(e *Engine) *Coalescer {
	c := &Coalescer{e: e}
	c.waiters.New = func() any { return &waiter{wake: make(chan struct{}, 1), buf: make([]byte, 0, 96)} }
	return c
}

// Decide decides key at cost n, as Engine.Decide does in ModeAllow, with
// the same errors: alone when fewer than maxInFlight calls of its group
// are in flight, in the next batch otherwise.
//
// When ctx ends while the call waits in the queue, the call returns an
// error wrapping core.ErrStore and ctx.Err(), and nothing is sent for it.
// When ctx ends after the call went out in a batch, it returns the same
// error at once, but the store may still decide it and count it, as a
// call whose context ends while Redis runs it. A batch is sent with no
// cancellation of its own (no caller's cancellation may undo another's
// decision) and the latest deadline among its calls, none if one has none.
func (c *Coalescer) Decide(ctx context.Context, key string, n int64) (core.Decision, error) {
	if err := keyspace.CheckKey(key); err != nil {
		return core.Decision{}, err
	}
	if err := params.Cost(n, c.e.limit); err != nil {
		return core.Decision{}, err
	}
	if err := Ended(ctx); err != nil {
		return core.Decision{}, err
	}
	// On one node every key is in one group, and a lone call needs no
	// waiter: it is made only if the call queues.
	g, w := &c.one, (*waiter)(nil)
	if !c.e.singleNode() {
		w = c.waiter(key, n)
		g = c.slot(slot.Of(w.skey))
	}
	g.mu.Lock()
	if g.inFlight < maxInFlight {
		g.inFlight++
		g.mu.Unlock()
		if w != nil {
			c.free(w)
		}
		d, err := c.e.Decide(ctx, key, n, ModeAllow)
		c.done(g)
		return d, err
	}
	if w == nil {
		w = c.waiter(key, n)
	}
	w.ctx = ctx
	g.queue = append(g.queue, w)
	g.mu.Unlock()
	return c.wait(ctx, g, w)
}

// waiter returns a pooled waiter for key at cost n, its storage key built.
func (c *Coalescer) waiter(key string, n int64) *waiter {
	w := c.waiters.Get().(*waiter)
	w.key, w.n = key, n
	if c.e.borrowKeys {
		w.buf = keyspace.AppendKey(w.buf[:0], c.e.prefix, key, "")
		w.skey = unsafe.String(unsafe.SliceData(w.buf), len(w.buf))
	} else {
		w.skey = keyspace.Key(c.e.prefix, key, "")
	}
	return w
}

// slot returns slot s's group, making it on first use.
func (c *Coalescer) slot(s int) *group {
	c.slotsOnce.Do(func() { c.slots = make([]atomic.Pointer[group], slot.Count) })
	p := &c.slots[s]
	if g := p.Load(); g != nil {
		return g
	}
	p.CompareAndSwap(nil, new(group))
	return p.Load()
}

// wait waits for w's decision, or for w's turn to lead the next batch.
func (c *Coalescer) wait(ctx context.Context, g *group, w *waiter) (core.Decision, error) {
	select {
	case <-w.wake:
		if w.state.Load() == lead {
			return c.lead(g, w, nil)
		}
		d, err := w.d, w.err
		c.free(w)
		return d, err
	case <-ctx.Done():
	}
	if w.state.CompareAndSwap(queued, gone) {
		// Never sent: a lead that finds it gone leaves it out. w is not
		// reused: the group's queue may still hold it.
		return core.Decision{}, Ended(ctx)
	}
	if w.state.Load() == lead {
		// The batch is this caller's to send, the others' decisions with
		// it; its own request stays out.
		<-w.wake
		return c.lead(g, w, Ended(ctx))
	}
	// Taken: sent, or about to be, and the decision may count (the lead
	// still writes to w, which is not reused); or gone, left out by a
	// lead that saw ctx end.
	return core.Decision{}, Ended(ctx)
}

// lead sends w.batch, the queue w was handed (w first), and hands each
// waiter its decision. When own is not nil, w's caller has left: its
// request is left out and own is its answer.
func (c *Coalescer) lead(g *group, w *waiter, own error) (core.Decision, error) {
	live := w.batch[:0] // the batch is w's alone now: filter it in place
	for _, x := range w.batch {
		switch {
		case x == w:
			if own == nil {
				live = append(live, x)
			}
		case x.ctx.Err() != nil && x.state.CompareAndSwap(queued, gone):
			// Its caller is leaving: nothing is sent for it.
		case x.state.CompareAndSwap(queued, taken):
			live = append(live, x)
		}
	}
	w.batch = nil
	out := c.send(live)
	c.done(g) // the next batch goes out while this one's callers wake
	var d core.Decision
	var err error = own
	for i, x := range live {
		if x == w {
			d, err = out[i].Decision, out[i].Err
			continue
		}
		x.d, x.err = out[i].Decision, out[i].Err
		x.wake <- struct{}{} // x is its caller's from here on
	}
	if own == nil {
		c.free(w)
	}
	return d, err
}

// send decides the waiters' requests in one batch, at one time.
func (c *Coalescer) send(live []*waiter) []core.Result {
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
	items := make([]item, len(live))
	idx := make([]int, len(live))
	for i, x := range live {
		items[i] = item{key: x.key, skey: x.skey, n: x.n}
		idx[i] = i
	}
	ctx, cancel := batchContext(live)
	defer cancel()
	c.e.decideItems(ctx, now, items, idx, out)
	return out
}

// batchContext returns the context a batch is sent with (gather.Context).
func batchContext(live []*waiter) (context.Context, context.CancelFunc) {
	return gather.Context(live, func(w *waiter) context.Context { return w.ctx })
}

// done ends a group's call in flight: it hands the queue, if any, to its
// first waiter still queued, which sends it; otherwise the group is idle.
func (c *Coalescer) done(g *group) {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.inFlight--
			g.mu.Unlock()
			return
		}
		batch := g.queue
		g.queue = nil
		g.mu.Unlock()
		for i, x := range batch {
			if x.state.CompareAndSwap(queued, lead) {
				x.batch = batch[i:] // those before it are gone
				x.wake <- struct{}{}
				return
			}
		}
		// Every waiter of the queue has gone: look again.
	}
}

// free readies w for another call and pools it.
func (c *Coalescer) free(w *waiter) {
	*w = waiter{wake: w.wake, buf: w.buf[:0]}
	c.waiters.Put(w)
}
