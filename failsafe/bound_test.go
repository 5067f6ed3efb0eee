package failsafe_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
)

// deaf is a store that ignores its context, like go-redis without
// ContextTimeoutEnabled talking to a paused server: every call blocks until
// release is closed, then answers from the wrapped limiter.
type deaf struct {
	core.Limiter
	calls   atomic.Int64
	entered chan struct{} // one send per call, if not nil
	release chan struct{}
	once    sync.Once
}

// newDeaf returns a deaf store over l, freed when t ends if the test has
// not freed it (on failure, what the test started must not hang).
func newDeaf(t *testing.T, l core.Limiter) *deaf {
	d := &deaf{Limiter: l, entered: make(chan struct{}, 100), release: make(chan struct{})}
	t.Cleanup(d.free)
	return d
}

// free lets every blocked and later call through; it may be called again.
func (d *deaf) free() { d.once.Do(func() { close(d.release) }) }

func (d *deaf) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op != core.OpAllow {
		return d.Limiter.Decide(ctx, r)
	}
	d.calls.Add(1)
	d.entered <- struct{}{}
	<-d.release
	return d.Limiter.Decide(context.Background(), r)
}

func (d *deaf) Reset(_ context.Context, key string) error {
	d.calls.Add(1)
	d.entered <- struct{}{}
	<-d.release
	return d.Limiter.Reset(context.Background(), key)
}

// errorLog collects what OnError receives.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (e *errorLog) add(_ string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

func (e *errorLog) get() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

// callDone counts the store calls failsafe ran in their own goroutine that
// have finished.
func callDone(l *failsafe.Limiter) <-chan struct{} {
	ch := make(chan struct{}, 100)
	failsafe.OnCallDone(l, func() { ch <- struct{}{} })
	return ch
}

// allowWithin calls l.Allow in a goroutine and fails the test if it has not
// returned after a very generous bound (the store never answers on its own,
// so without failsafe's own bound it would wait forever).
func allowWithin(t *testing.T, l core.Limiter, ctx context.Context) (core.Decision, error, time.Duration) {
	t.Helper()
	type answer struct {
		d   core.Decision
		err error
	}
	ch := make(chan answer, 1)
	start := time.Now()
	go func() {
		d, err := l.Allow(ctx, "k")
		ch <- answer{d, err}
	}()
	select {
	case a := <-ch:
		return a.d, a.err, time.Since(start)
	case <-time.After(20 * time.Second):
		t.Fatal("Allow still waiting on a store that ignores its context after 20 s")
		return core.Decision{}, nil, 0
	}
}

// TestTimeoutWithoutClientHelp: a store that ignores its context cannot
// hold a caller past Timeout. The caller gets the mode's decision and
// OnError a timeout; the abandoned call's late answer is dropped; and once
// the store answers, no goroutine is left behind.
func TestTimeoutWithoutClientHelp(t *testing.T) {
	store := newDeaf(t, bucket(t, 5))
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var log errorLog
	l, err := failsafe.New(failsafe.Config{
		Limiter: store, Mode: failsafe.FailClosed,
		Timeout: 50 * time.Millisecond, RetryInterval: time.Second,
		OnError: log.add, Clock: core.ClockFunc(clock),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := callDone(l)
	ignore := goleak.IgnoreCurrent()

	d, err, took := allowWithin(t, l, context.Background())
	if err != nil || d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("after the timeout: %+v, %v; want the mode's denial", d, err)
	}
	// 50 ms, with all the room a saturated machine could need.
	if took > 2*time.Second {
		t.Errorf("a 50 ms Timeout returned after %v", took)
	}
	errs := log.get()
	if len(errs) != 1 || !errors.Is(errs[0], core.ErrStore) || !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Fatalf("OnError got %v; want one timeout wrapping core.ErrStore and context.DeadlineExceeded", errs)
	}
	t.Logf("OnError: %v", errs[0])
	if !l.Down() {
		t.Fatal("not down after a timeout")
	}
	// While down (before RetryInterval), nothing more reaches the store.
	for i := 0; i < 10; i++ {
		if d, err := l.Allow(context.Background(), "k"); err != nil || d.Allowed {
			t.Fatalf("call %d while down: %+v, %v", i, d, err)
		}
	}
	if store.calls.Load() != 1 || failsafe.InFlight(l) != 1 {
		t.Fatalf("store calls %d, in flight %d; want 1, 1 (the abandoned call)", store.calls.Load(), failsafe.InFlight(l))
	}

	// The store answers the abandoned call (an allow): dropped.
	store.free()
	<-done
	if n := failsafe.InFlight(l); n != 0 {
		t.Fatalf("%d calls in flight after the store answered", n)
	}
	if len(log.get()) != 1 || !l.Down() {
		t.Fatalf("the late answer changed something: errors %v, down %v", log.get(), l.Down())
	}
	goleak.VerifyNone(t, ignore)

	// The answer was applied by the store even though the caller was
	// denied: the next probe sees it (5 - 1 - 1 = 3 left).
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	d, err, _ = allowWithin(t, l, context.Background())
	<-done
	if err != nil || !d.Allowed || d.Remaining != 3 || l.Down() {
		t.Fatalf("probe after the store came back: %+v, %v, down %v; want allowed with 3 left", d, err, l.Down())
	}
	goleak.VerifyNone(t, ignore)
}

// TestCallerContextWithoutClientHelp: the caller's own context bounds the
// call too, without a Timeout, and its end is the caller's error: returned,
// not reported, and the store is not marked down.
func TestCallerContextWithoutClientHelp(t *testing.T) {
	store := newDeaf(t, bucket(t, 5))
	var log errorLog
	l, err := failsafe.New(failsafe.Config{Limiter: store, Mode: failsafe.FailOpen, OnError: log.add})
	if err != nil {
		t.Fatal(err)
	}
	done := callDone(l)
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err, took := allowWithin(t, l, ctx)
	if !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Fatalf("caller's deadline: %v after %v", err, took)
	}
	if len(log.get()) != 0 || l.Down() {
		t.Fatalf("the caller's deadline was taken for a store failure: %v, down %v", log.get(), l.Down())
	}
	store.free()
	<-done
	goleak.VerifyNone(t, ignore)
}

// TestResetWithoutClientHelp: Reset is bounded the same way, and its
// timeout is returned (a reset cannot be faked) and reported.
func TestResetWithoutClientHelp(t *testing.T) {
	store := newDeaf(t, bucket(t, 5))
	var log errorLog
	l, err := failsafe.New(failsafe.Config{Limiter: store, Mode: failsafe.FailOpen, Timeout: 50 * time.Millisecond, OnError: log.add})
	if err != nil {
		t.Fatal(err)
	}
	done := callDone(l)
	ch := make(chan error, 1)
	go func() { ch <- l.Reset(context.Background(), "k") }()
	select {
	case err = <-ch:
	case <-time.After(20 * time.Second):
		t.Fatal("Reset still waiting after 20 s")
	}
	if !errors.Is(err, core.ErrStore) || !errors.Is(err, context.DeadlineExceeded) || len(log.get()) != 1 || !l.Down() {
		t.Fatalf("Reset: %v; reported %v; down %v", err, log.get(), l.Down())
	}
	store.free()
	<-done
}

// TestMaxInFlightWhileDown: abandoned calls count against MaxInFlight until
// the store finishes them, so a store that never answers collects at most
// MaxInFlight goroutines, one probe per RetryInterval: the probe that would
// exceed it is not sent, and is reported as ErrBusy.
func TestMaxInFlightWhileDown(t *testing.T) {
	store := newDeaf(t, bucket(t, 5))
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func() { mu.Lock(); now = now.Add(time.Second); mu.Unlock() }
	var log errorLog
	l, err := failsafe.New(failsafe.Config{
		Limiter: store, Mode: failsafe.FailOpen, MaxInFlight: 2,
		Timeout: 50 * time.Millisecond, RetryInterval: time.Second,
		OnError: log.add, Clock: core.ClockFunc(clock),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := callDone(l)
	ignore := goleak.IgnoreCurrent()

	// The first call and the probe after one RetryInterval both hang.
	for i := 0; i < 2; i++ {
		if d, err, _ := allowWithin(t, l, context.Background()); err != nil || !d.Allowed {
			t.Fatalf("call %d: %+v, %v", i, d, err)
		}
		later()
	}
	if store.calls.Load() != 2 || failsafe.InFlight(l) != 2 {
		t.Fatalf("store calls %d, in flight %d; want 2, 2", store.calls.Load(), failsafe.InFlight(l))
	}
	// The next probe is due, but two calls are still running: not sent.
	if d, err, _ := allowWithin(t, l, context.Background()); err != nil || !d.Allowed {
		t.Fatalf("third probe: %+v, %v", d, err)
	}
	errs := log.get()
	if store.calls.Load() != 2 || len(errs) != 3 || !errors.Is(errs[2], failsafe.ErrBusy) || !errors.Is(errs[2], core.ErrStore) {
		t.Fatalf("store calls %d, errors %v; want 2 calls, timeout, timeout, ErrBusy", store.calls.Load(), errs)
	}
	for i := 0; i < 2; i++ {
		if !errors.Is(errs[i], context.DeadlineExceeded) {
			t.Fatalf("error %d: %v; want a timeout", i, errs[i])
		}
	}
	// The store answers both; nothing is left, and the next probe gets
	// through and finds the store up.
	store.free()
	<-done
	<-done
	goleak.VerifyNone(t, ignore)
	later()
	if d, err, _ := allowWithin(t, l, context.Background()); err != nil || !d.Allowed || d.Remaining != 2 || l.Down() {
		t.Fatalf("after the store answered: %+v, %v, down %v; want allowed, 2 left (both abandoned calls were applied)", d, err, l.Down())
	}
	<-done
	goleak.VerifyNone(t, ignore)
}

// TestMaxInFlightWhileUp: while the store is up, at most MaxInFlight
// callers wait on it; the next one is not sent, gets the mode's decision at once,
// and takes the store down.
func TestMaxInFlightWhileUp(t *testing.T) {
	store := newDeaf(t, bucket(t, 5))
	var log errorLog
	l, err := failsafe.New(failsafe.Config{
		Limiter: store, Mode: failsafe.FailClosed, MaxInFlight: 3,
		RetryInterval: time.Hour, OnError: log.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	// No Timeout and a context that never ends: the calls wait in the
	// callers' goroutines.
	answers := make(chan core.Decision, 3)
	for i := 0; i < 3; i++ {
		go func() {
			d, _ := l.Allow(context.Background(), "k")
			answers <- d
		}()
		<-store.entered
	}
	d, err, _ := allowWithin(t, l, context.Background())
	if err != nil || d.Allowed || !l.Down() || store.calls.Load() != 3 {
		t.Fatalf("fourth call: %+v, %v, down %v, store calls %d; want the mode's denial without a store call", d, err, l.Down(), store.calls.Load())
	}
	if errs := log.get(); len(errs) != 1 || !errors.Is(errs[0], failsafe.ErrBusy) {
		t.Fatalf("OnError got %v; want one ErrBusy", errs)
	}
	store.free()
	for i := 0; i < 3; i++ {
		if d := <-answers; !d.Allowed {
			t.Fatalf("waiting call %d: %+v; want the store's allow", i, d)
		}
	}
	if failsafe.InFlight(l) != 0 {
		t.Fatalf("%d in flight", failsafe.InFlight(l))
	}
}

type panicky struct{ core.Limiter }

var errBoom = errors.New("boom")

func (p panicky) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op != core.OpAllow {
		return p.Limiter.Decide(ctx, r)
	}
	panic(errBoom)
}

// TestPanicReachesCaller: a store call that panics in failsafe's goroutine
// panics in the caller's, with the same value, as it would without one.
func TestPanicReachesCaller(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Minute} {
		l, err := failsafe.New(failsafe.Config{Limiter: panicky{bucket(t, 1)}, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if p := recover(); p != errBoom {
					t.Errorf("timeout %v: recovered %v; want %v", timeout, p, errBoom)
				}
			}()
			l.Allow(context.Background(), "k")
		}()
		if failsafe.InFlight(l) != 0 {
			t.Errorf("timeout %v: %d in flight after a panic", timeout, failsafe.InFlight(l))
		}
	}
}
