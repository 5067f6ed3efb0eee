package gather

import (
	"context"
	"slices"
	"testing"
	"time"
)

type call struct {
	Waiter[*call]
	id  int
	out int
}

func (c *call) Waiting() *Waiter[*call] { return &c.Waiter }

// busy returns a line of limit whose calls in flight are all taken.
func busy(limit int) *Line[*call] {
	l := &Line[*call]{Limit: limit}
	for range limit {
		l.Enter(context.Background(), nil)
	}
	return l
}

// enter queues c on l, which must be full.
func enter(t *testing.T, l *Line[*call], ctx context.Context, c *call) {
	t.Helper()
	if got, alone := l.Enter(ctx, func() *call { return c }); alone || got != c {
		t.Fatalf("call %d: alone %v, %v", c.id, alone, got)
	}
}

// turn waits for c's turn in a goroutine of its own.
func turn(l *Line[*call], c *call) <-chan Turn {
	ch := make(chan Turn, 1)
	go func() { ch <- l.Wait(c) }()
	return ch
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no turn in 10s")
		panic("unreachable")
	}
}

// The hand-off, step by step: Limit calls go alone; the rest queue, and
// the queue goes to its first call still waiting when a call returns; a
// call that left while queued is not sent; the lead's calls are woken
// with their outcomes.
func TestLine(t *testing.T) {
	l := &Line[*call]{Limit: 2}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, alone := l.Enter(ctx, func() *call { t.Fatal("a lone call made a value"); return nil }); !alone {
			t.Fatalf("call %d of 2 queued", i)
		}
	}
	left, leave := context.WithCancel(ctx)
	calls := []*call{{id: 0}, {id: 1}, {id: 2}, {id: 3}}
	enter(t, l, left, calls[0])
	for _, c := range calls[1:] {
		enter(t, l, ctx, c)
	}
	if l.Queued() != 4 {
		t.Fatalf("%d queued, want 4", l.Queued())
	}
	leave()
	if got := l.Wait(calls[0]); got != Left {
		t.Fatalf("the call that left: %v, want Left", got)
	}
	turns := make([]<-chan Turn, len(calls))
	for i, c := range calls[1:] {
		turns[i+1] = turn(l, c)
	}
	l.Done() // a call alone returns: the queue goes to call 1
	if got := recv(t, turns[1]); got != Lead {
		t.Fatalf("call 1: %v, want Lead", got)
	}
	live := l.Batch(calls[1], true)
	if ids := ids(live); !slices.Equal(ids, []int{1, 2, 3}) {
		t.Fatalf("batch %v, want [1 2 3]: the call that left is not sent", ids)
	}
	if l.Queued() != 0 {
		t.Fatalf("%d queued after the hand-off", l.Queued())
	}
	l.Done() // the batch is back
	for _, c := range live[1:] {
		c.out = 10 * c.id
		l.Wake(c)
	}
	for i := 2; i < 4; i++ {
		if got := recv(t, turns[i]); got != Taken || calls[i].out != 10*i {
			t.Fatalf("call %d: %v with %d, want Taken with %d", i, got, calls[i].out, 10*i)
		}
	}
	l.Done() // the other lone call returns: nothing queued
	if _, alone := l.Enter(ctx, func() *call { return &call{} }); !alone {
		t.Fatal("an idle line queued a call")
	}
}

// A call whose context ends once it leads still leads, without its own
// call; calls whose context ended while queued are left out of its batch.
// When the caller finds both its turn and its context's end, either may
// win (Lead or LeadLeft): the scenario runs until both were seen.
func TestLineLeadLeft(t *testing.T) {
	seen := map[Turn]bool{}
	for try := 0; try < 200 && !(seen[Lead] && seen[LeadLeft]); try++ {
		l, ctx := busy(1), context.Background()
		leadCtx, leaveLead := context.WithCancel(ctx)
		goneCtx, leaveGone := context.WithCancel(ctx)
		a, b, c := &call{id: 0}, &call{id: 1}, &call{id: 2}
		enter(t, l, leadCtx, a)
		enter(t, l, goneCtx, b)
		enter(t, l, ctx, c)
		leaveGone() // b's caller is leaving, not yet returned from Wait
		l.Done()    // a leads
		leaveLead()
		got := l.Wait(a)
		if got != Lead && got != LeadLeft {
			t.Fatalf("a: %v, want Lead or LeadLeft", got)
		}
		seen[got] = true
		if ids := ids(l.Batch(a, got == Lead)); (got == Lead && !slices.Equal(ids, []int{0, 2})) || (got == LeadLeft && !slices.Equal(ids, []int{2})) {
			t.Fatalf("%v: batch %v: a's call is in it only when a leads with it; b's context ended", got, ids)
		}
		if got := l.Wait(b); got != Left {
			t.Fatalf("b: %v, want Left", got)
		}
		// b is gone before a Done hands the next queue on: the line does
		// not wake it, and an empty queue frees the slot.
		l.Done()
		if _, alone := l.Enter(ctx, nil); !alone {
			t.Fatal("the slot of the finished batch was not freed")
		}
	}
	if !seen[Lead] || !seen[LeadLeft] {
		t.Fatalf("in 200 tries saw %v: want both Lead and LeadLeft", seen)
	}
}

// A call that left before its turn is skipped when the queue is handed
// on: the next call still queued leads.
func TestLineSkipsGone(t *testing.T) {
	l, ctx := busy(1), context.Background()
	goneCtx, leave := context.WithCancel(ctx)
	a, b := &call{id: 0}, &call{id: 1}
	enter(t, l, goneCtx, a)
	enter(t, l, ctx, b)
	leave()
	if got := l.Wait(a); got != Left {
		t.Fatalf("a: %v, want Left", got)
	}
	tb := turn(l, b)
	l.Done()
	if got := recv(t, tb); got != Lead {
		t.Fatalf("b: %v, want Lead", got)
	}
	if ids := ids(l.Batch(b, true)); !slices.Equal(ids, []int{1}) {
		t.Fatalf("batch %v, want [1]", ids)
	}
}

func ids(cs []*call) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.id)
	}
	return out
}
