package scriptproto

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/gather"
)

// pipe is a Client that pipelines concurrent calls (Pipelining): it
// saves, when many goroutines run scripts at once, the system calls and
// wake-ups of one round trip per call, on the client and on the server.
//
// Nothing waits for company. A call to Do that finds fewer than its limit
// of calls in flight is sent at once, alone, on its caller's goroutine,
// exactly as the Client under it sends it. A call that finds the limit
// reached is queued; when a call in flight returns, its caller hands the
// whole queue to the queue's first waiter, which sends it as one DoMulti
// (one write and one round trip per server), passes on the next queue
// when the replies are back, and then hands each waiter its own reply or
// error. Each call stays its own command: its own EVALSHA, its own
// outcome, its own NOSCRIPT fallback (Runner.RunScript sends the EVAL
// through the pipe again). DoMulti goes to the Client under it directly.
//
// What its callers see (a caller leaving, the context a pipeline goes out
// with) is in Pipelining's doc. The call that sends a pipeline returns
// when it is back.
//
// A pipe starts no goroutine and holds nothing between calls but its
// queue and a pool of waiters.
type pipe struct {
	c    Client
	line gather.Line[*waiter]
	pool sync.Pool // *waiter
}

// defaultInFlight is the limit of calls in flight of a pipe: up to four
// concurrent calls go as they would without one, so that two or three
// goroutines never take turns, and beyond four the rest share pipelines.
// On store/goredis BenchmarkAgainstBareScript a limit of 1 made two
// goroutines take turns, at about 0.6x the rate of 2, 4 or 8, which were
// within noise of each other at 16, 64 and 256 goroutines.
const defaultInFlight = 4

// newPipe returns a pipe sending through c with up to inFlight calls (a
// pipeline being one) in flight at once; inFlight below 1 is taken as 1.
func newPipe(c Client, inFlight int) *pipe {
	p := &pipe{c: c}
	p.line.Limit = max(1, inFlight)
	p.pool.New = func() any { return new(waiter) }
	return p
}

// waiter is one call waiting in the queue. Its command's keys and
// arguments are its own copies: its caller may leave, and reuse them,
// while a lead still reads them.
type waiter struct {
	gather.Waiter[*waiter]
	cmd  Cmd
	keys []string
	kbuf []byte
	args []int64
	// reply and err are the outcome once the call was taken and woken.
	reply []int64
	err   error
}

// Waiting returns the part of w the pipe's line keeps.
func (w *waiter) Waiting() *gather.Waiter[*waiter] { return &w.Waiter }

// Do implements Client: c goes at once when fewer than the limit of calls
// are in flight, in the next pipeline otherwise.
func (p *pipe) Do(ctx context.Context, c Cmd, reply []int64) ([]int64, error) {
	w, alone := p.line.Enter(ctx, func() *waiter { return p.waiter(c) })
	if alone {
		defer p.line.Done() // even if the client panics
		return p.c.Do(ctx, c, reply)
	}
	return p.wait(ctx, w, reply)
}

// DoMulti implements Client: it sends cmds through the Client under p,
// whatever is in flight.
func (p *pipe) DoMulti(ctx context.Context, cmds []Cmd, out []core.ScriptResult) {
	p.c.DoMulti(ctx, cmds, out)
}

// waiter returns a pooled waiter for c, its keys and arguments copied.
func (p *pipe) waiter(c Cmd) *waiter {
	w := p.pool.Get().(*waiter)
	n := 0
	for _, k := range c.Keys {
		n += len(k)
	}
	if cap(w.kbuf) < n {
		w.kbuf = make([]byte, 0, n)
	}
	kb := w.kbuf[:0]
	w.keys = w.keys[:0]
	for _, k := range c.Keys {
		start := len(kb)
		kb = append(kb, k...) // within cap: the strings below stay valid
		w.keys = append(w.keys, unsafe.String(unsafe.SliceData(kb[start:]), len(k)))
	}
	w.kbuf = kb
	w.args = append(w.args[:0], c.Args...)
	w.cmd = Cmd{Name: c.Name, Script: c.Script, Keys: w.keys, Args: w.args}
	return w
}

// wait waits for w's outcome, or for w's turn to lead the next pipeline,
// and appends w's reply to reply.
func (p *pipe) wait(ctx context.Context, w *waiter, reply []int64) ([]int64, error) {
	switch p.line.Wait(w) {
	case gather.Taken:
		return p.give(w, reply)
	case gather.Lead:
		return p.lead(w, nil, reply)
	case gather.LeadLeft:
		// The pipeline is this caller's to send, the others' commands in
		// it; its own stays out.
		return p.lead(w, ctx.Err(), nil)
	}
	// Left: never sent, or sent and it may run (a lead may still write
	// to w, which is not pooled again).
	return nil, ctx.Err()
}

// give returns a taken waiter's outcome, its reply appended to reply, and
// pools it again.
func (p *pipe) give(w *waiter, reply []int64) ([]int64, error) {
	out, err := w.reply, w.err
	if err == nil {
		out = append(reply, out...)
	} else {
		out = nil
	}
	p.free(w)
	return out, err
}

// lead sends the pipeline w leads (the queue it was handed, w first) and
// hands each waiter its outcome. When own is not nil, w's caller has left: its
// command is left out and own is its error.
func (p *pipe) lead(w *waiter, own error, reply []int64) ([]int64, error) {
	p.line.Send(w, own == nil, p.send, func(live []*waiter, v any) {
		err := fmt.Errorf("%w: the client panicked sending a pipeline: %v", core.ErrStore, v)
		for _, x := range live {
			x.reply, x.err = nil, err
		}
	})
	if own != nil {
		return nil, own
	}
	return p.give(w, reply)
}

// send sends the waiters' commands in one pipeline and leaves each one's
// outcome in its reply and err.
func (p *pipe) send(live []*waiter) {
	if len(live) == 0 {
		return
	}
	ctx, cancel := p.line.Context(live)
	defer cancel()
	if len(live) == 1 {
		x := live[0]
		x.reply, x.err = p.c.Do(ctx, x.cmd, x.reply[:0])
		return
	}
	cmds := make([]Cmd, len(live))
	out := make([]core.ScriptResult, len(live))
	for i, x := range live {
		cmds[i] = x.cmd
		out[i].Reply = x.reply[:0]
	}
	p.c.DoMulti(ctx, cmds, out)
	for i, x := range live {
		x.reply, x.err = out[i].Reply, out[i].Err
	}
}

// free readies w for another call and pools it.
func (p *pipe) free(w *waiter) {
	w.Reset()
	w.cmd, w.keys, w.kbuf, w.args, w.reply, w.err = Cmd{}, w.keys[:0], w.kbuf[:0], w.args[:0], w.reply[:0], nil
	p.pool.Put(w)
}
