package gather

import (
	"context"
	"sync"
	"sync/atomic"
)

// Line is the hand-off both gatherers run: up to Limit calls in flight at
// once, each sent alone on its caller's goroutine; a call that finds Limit
// in flight queues; when a call in flight returns, its caller hands the
// whole queue to the queue's first call still waiting, which leads it: it
// sends the queue as one, calls Done as soon as the reply is back (so the
// next queue goes out while this one's callers wake), and then wakes each
// call it sent. Nothing waits for company: no timer, no minimum.
//
// A queued call whose context ends before a lead takes it is left out and
// returns at once. One that ends after it was taken returns at once too,
// but it was sent, or is about to be. One that ends after it was made the
// lead still sends the others' calls, without its own.
//
// M is the calls' own pointer type, which embeds a Waiter[M]. The zero
// Line is ready once Limit is set, and must not be copied after first use.
type Line[M Member[M]] struct {
	Limit int // calls in flight at once, a queue sent as one counting as one

	mu     sync.Mutex
	flying int // calls in flight
	queue  []M // what came while Limit were
}

// Member is a pointer type whose value embeds a Waiter.
type Member[M any] interface {
	comparable
	// Waiting returns the Waiter embedded in the call.
	Waiting() *Waiter[M]
}

// Waiter is what the Line keeps of a queued call. A call's type embeds
// it; Reset readies it for another call.
type Waiter[M any] struct {
	ctx   context.Context
	state atomic.Int32
	// wake is signalled once: the call was sent and its outcome is in
	// its fields (taken), or it leads batch (lead).
	wake  chan struct{}
	batch []M
}

// A Waiter's state: queued until a lead takes it into a batch (taken) or
// makes it the lead; gone when its caller left before either.
const (
	queued int32 = iota
	taken
	lead
	gone
)

// Reset readies w for another call, keeping what it allocated.
func (w *Waiter[M]) Reset() {
	w.ctx, w.batch = nil, nil
	w.state.Store(queued)
}

// Enter lets a call in. It returns alone = true when fewer than Limit
// calls were in flight: the call is now one of them, goes alone on its
// caller's goroutine, and its caller calls Done when it returns. Otherwise
// it queues the call queue returns (called with the Line locked; it may
// make the call's value there, so that a lone call makes none), with ctx,
// and the caller waits for it (Wait).
func (l *Line[M]) Enter(ctx context.Context, queue func() M) (m M, alone bool) {
	l.mu.Lock()
	if l.flying < l.Limit {
		l.flying++
		l.mu.Unlock()
		return m, true
	}
	m = queue()
	w := m.Waiting()
	if w.wake == nil {
		w.wake = make(chan struct{}, 1)
	}
	w.ctx = ctx
	l.queue = append(l.queue, m)
	l.mu.Unlock()
	return m, false
}

// Done ends a call (or a batch) in flight: it hands the queue, if any, to
// its first call still queued, which leads it; otherwise one call fewer
// is in flight.
func (l *Line[M]) Done() {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.flying--
			l.mu.Unlock()
			return
		}
		batch := l.queue
		l.queue = nil
		l.mu.Unlock()
		for i, x := range batch {
			if w := x.Waiting(); w.state.CompareAndSwap(queued, lead) {
				w.batch = batch[i:] // those before it are gone
				w.wake <- struct{}{}
				return
			}
		}
		// Every call of the queue has gone: look again.
	}
}

// Turn is what became of a queued call (Wait).
type Turn int

const (
	// Taken: a lead sent the call and woke it; its outcome is in the
	// call's fields.
	Taken Turn = iota
	// Lead: the call leads a batch (Batch), its own call in it.
	Lead
	// LeadLeft: the call's context ended after it was made the lead: it
	// still leads the batch, without its own call.
	LeadLeft
	// Left: the call's context ended while it was queued (nothing was
	// sent for it) or after a lead took it (it may still be decided). A
	// call that left is not the caller's to reuse: the queue, or a lead,
	// may still hold it.
	Left
)

// Wait waits for m's turn, or for the context m entered with to end.
func (l *Line[M]) Wait(m M) Turn {
	w := m.Waiting()
	select {
	case <-w.wake:
		if w.state.Load() == lead {
			return Lead
		}
		return Taken
	case <-w.ctx.Done():
	}
	if w.state.CompareAndSwap(queued, gone) {
		return Left
	}
	if w.state.Load() == lead {
		<-w.wake
		return LeadLeft
	}
	return Left
}

// Batch returns the calls m leads, in queue order: m itself when own is
// true, and every other call still queued, which is now taken; a call
// whose context has ended is left out. Batch is called once per lead.
func (l *Line[M]) Batch(m M, own bool) []M {
	w := m.Waiting()
	live := w.batch[:0] // the batch is m's alone now: filter it in place
	for _, x := range w.batch {
		xw := x.Waiting()
		switch {
		case x == m:
			if own {
				live = append(live, x)
			}
		case xw.ctx.Err() != nil && xw.state.CompareAndSwap(queued, gone):
			// Its caller is leaving: nothing is sent for it.
		case xw.state.CompareAndSwap(queued, taken):
			live = append(live, x)
		}
	}
	w.batch = nil
	return live
}

// Wake tells taken call m that its outcome is in its fields: m is its
// caller's from here on.
func (l *Line[M]) Wake(m M) { m.Waiting().wake <- struct{}{} }

// Send sends the batch m leads and ends it: it takes the batch (Batch),
// hands it to send, which leaves each call's outcome in its fields, ends
// the batch (Done: the next one may go out while this one's callers
// wake), wakes every call of it but m, and returns it. Should send panic,
// broken gives every call of the batch its outcome instead (p is the
// panic's value), and the panic goes on in m's caller once the others are
// woken: no caller waits forever for a batch that never came back, and
// the Line keeps its count of calls in flight.
func (l *Line[M]) Send(m M, own bool, send func(batch []M), broken func(batch []M, p any)) []M {
	batch := l.Batch(m, own)
	p, panicked := l.run(batch, send)
	if panicked {
		broken(batch, p)
	}
	l.Done()
	for _, x := range batch {
		if x != m {
			l.Wake(x)
		}
	}
	if panicked {
		panic(p)
	}
	return batch
}

// run runs send on batch and reports whether it panicked, and with what.
func (l *Line[M]) run(batch []M, send func([]M)) (p any, panicked bool) {
	panicked = true
	defer func() {
		if panicked {
			p = recover()
		}
	}()
	send(batch)
	return nil, false
}

// Context returns the context a batch goes out with (Context, over the
// calls' own contexts).
func (l *Line[M]) Context(live []M) (context.Context, context.CancelFunc) {
	return Context(live, func(m M) context.Context { return m.Waiting().ctx })
}

// Queued returns how many calls wait in the queue.
func (l *Line[M]) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}
