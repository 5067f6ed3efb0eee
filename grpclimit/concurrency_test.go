package grpclimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/grpclimit"
	"github.com/ratekit/ratekit/store/memory"
)

// extending is a concurrency limiter that counts its extensions.
type extending struct {
	*concurrency.Limiter
	extends atomic.Int64
}

func (e *extending) Extend(ctx context.Context, lease concurrency.Lease) (bool, error) {
	live, err := e.Limiter.Extend(ctx, lease)
	e.extends.Add(1)
	return live, err
}

// leases returns a concurrency limiter of limit with a TTL of a minute on
// a memory store at clock's time.
func leases(t *testing.T, limit int64) (*extending, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	mem, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	cl, err := concurrency.New(mem, concurrency.Config{Limit: limit, TTL: time.Minute, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return &extending{Limiter: cl}, clock
}

// eventually waits, up to a generous bound, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not after 30 s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// inFlight is the cost in flight on the loopback client's key.
func inFlight(t *testing.T, cl *extending) int64 {
	t.Helper()
	d, err := cl.Peek(context.Background(), "ip4:127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return d.Limit - d.Remaining
}

// TestConcurrency: a call holds a lease while its handler runs, extended
// while it is held, so that a call longer than the TTL keeps its slot; a
// call beyond the limit is denied with the time until a lease expires;
// the lease comes back when the handler returns, and when the client
// goes away.
func TestConcurrency(t *testing.T) {
	cl, clock := leases(t, 1)
	in := newInterceptors(t, grpclimit.Config{Concurrency: &grpclimit.Concurrency{Name: "slots", Limiter: cl, ExtendEvery: 2 * time.Millisecond}})
	s := &svc{entered: make(chan struct{}), hold: make(chan struct{})}
	conn := serve(t, in, s)
	ctx := context.Background()

	done := make(chan error, 1)
	go func() { _, err := do(conn, ctx, ""); done <- err }()
	<-s.entered
	md, err := do(conn, ctx, "")
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a second call in flight: %v", err)
	}
	if retry, subjects := details(t, err); retry != time.Minute || len(subjects) != 1 || subjects[0] != "ratekit:slots" {
		t.Fatalf("RetryInfo %v, QuotaFailure %v", retry, subjects)
	}
	// As a rate denial, and as the package doc promises.
	if got := md.Get("retry-after"); len(got) != 1 || got[0] != "60" {
		t.Fatalf("concurrency denial: retry-after %q, want 60", got)
	}
	// Twice 50 s, each followed by an extension: 100 s after its acquire,
	// the lease (TTL 1 min) is still live.
	for i := 0; i < 2; i++ {
		clock.Advance(50 * time.Second)
		n := cl.extends.Load()
		eventually(t, "an extension", func() bool { return cl.extends.Load() > n })
	}
	if got := inFlight(t, cl); got != 1 {
		t.Fatalf("in flight %d after 100 s with extensions, want 1", got)
	}
	s.hold <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := inFlight(t, cl); got != 0 {
		t.Fatalf("in flight %d after the handler returned, want 0", got)
	}

	// The client goes away: the lease is released all the same.
	cctx, cancel := context.WithCancel(ctx)
	go func() { _, err := do(conn, cctx, ""); done <- err }()
	<-s.entered
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("canceled call: %v", err)
	}
	eventually(t, "the canceled call's lease released", func() bool { return inFlight(t, cl) == 0 })

	// A stream holds its lease until it ends.
	go func() { _, err := watch(conn, ctx, ""); done <- err }()
	<-s.entered
	if _, err := do(conn, ctx, ""); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a call while a stream holds the slot: %v", err)
	}
	s.hold <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stream's lease released", func() bool { return inFlight(t, cl) == 0 })
}

// TestPolicyAndConcurrency: a call the policy allows but the concurrency
// limit denies is refunded to the policy: it was not served. Its fields
// say what the refund left (nothing counted), with the concurrency
// limit's retry-after, and no t later than it.
func TestPolicyAndConcurrency(t *testing.T) {
	p := policy(t, 5, 100, false)
	cl, _ := leases(t, 1)
	in := newInterceptors(t, grpclimit.Config{Limiter: p, Concurrency: &grpclimit.Concurrency{Limiter: cl}})
	s := &svc{entered: make(chan struct{}), hold: make(chan struct{})}
	conn := serve(t, in, s)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { _, err := do(conn, ctx, ""); done <- err }()
	<-s.entered
	for i := 0; i < 3; i++ {
		md, err := do(conn, ctx, "")
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("call %d beside the one in flight: %v", i, err)
		}
		if got, want := fmt.Sprint(md.Get("ratelimit"), md.Get("retry-after")), `["burst";r=4;t=60 "daily";r=99;t=60] [60]`; got != want {
			t.Fatalf("call %d beside the one in flight: ratelimit and retry-after %s, want %s", i, got, want)
		}
	}
	if d, _ := p.Peek(ctx, "ip4:127.0.0.1"); d.Limits[0].Remaining != 4 {
		t.Fatalf("burst remaining %d, want 4: only the call served counts", d.Limits[0].Remaining)
	}
	s.hold <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestConcurrencyUnextended: without ExtendEvery, a call that outlasts
// the TTL loses its slot to the next call, and its expired lease is
// logged at warning level when it ends. Code chooses the denial's code.
func TestConcurrencyUnextended(t *testing.T) {
	cl, clock := leases(t, 1)
	log := &records{}
	in := newInterceptors(t, grpclimit.Config{Concurrency: &grpclimit.Concurrency{Limiter: cl, Code: codes.Unavailable}, Logger: slog.New(log)})
	s := &svc{entered: make(chan struct{}), hold: make(chan struct{})}
	conn := serve(t, in, s)
	ctx := context.Background()
	done := make(chan error, 2)
	go func() { _, err := do(conn, ctx, ""); done <- err }()
	<-s.entered
	_, err := do(conn, ctx, "")
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a second call in flight: %v, want Unavailable", err)
	}
	if retry, _ := details(t, err); retry != time.Minute {
		t.Fatalf("RetryInfo %v, want 1m", retry)
	}
	clock.Advance(time.Minute) // the first call's lease expires
	go func() { _, err := do(conn, ctx, ""); done <- err }()
	<-s.entered // a second call runs beside the first
	s.hold <- struct{}{}
	s.hold <- struct{}{}
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := log.count(slog.LevelWarn); got != 1 {
		t.Fatalf("%d warnings, want 1: the first call's lease had expired", got)
	}
}

// TestLimiterAndConcurrency: a limiter of one algorithm is refunded as a
// policy is: a call the concurrency limit denies stays counted by
// nothing, and the fields say what the refund left.
func TestLimiterAndConcurrency(t *testing.T) {
	lim, _ := bucket(t, 5)
	cl, _ := leases(t, 1)
	in := newInterceptors(t, grpclimit.Config{Name: "api", Limiter: lim, Concurrency: &grpclimit.Concurrency{Limiter: cl}})
	s := &svc{entered: make(chan struct{}), hold: make(chan struct{})}
	conn := serve(t, in, s)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { _, err := do(conn, ctx, ""); done <- err }()
	<-s.entered
	md, err := do(conn, ctx, "")
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a call beside the one in flight: %v", err)
	}
	if got, want := fmt.Sprint(md.Get("ratelimit"), md.Get("retry-after")), `["api";r=4;t=60] [60]`; got != want {
		t.Fatalf("ratelimit and retry-after %s, want %s", got, want)
	}
	if d, _ := lim.Peek(ctx, "ip4:127.0.0.1"); d.Remaining != 4 {
		t.Fatalf("remaining %d, want 4: only the call served counts", d.Remaining)
	}
	s.hold <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
