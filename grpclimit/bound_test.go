package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/grpclimit"
)

// hanging is a limiter whose AllowN (when allow is set) or Refund (when
// refund is set) waits until release is closed, whatever its context: a
// store that hangs, on a client that ignores contexts.
type hanging struct {
	*ratekit.Limiter
	allow, refund bool
	release       chan struct{}
}

func (h *hanging) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op == core.OpAllow && h.allow || r.Op == core.OpRefund && h.refund {
		<-h.release
	}
	return h.Limiter.Decide(ctx, r)
}

// errs collects what OnError receives.
type errs struct {
	mu   sync.Mutex
	list []error
}

func (e *errs) add(_ context.Context, _ grpclimit.Call, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, err)
}

func (e *errs) get() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.list...)
}

// within runs call in a goroutine and returns its error, failing the
// test if it has not returned after a generous bound (far above the
// Timeout under test: this is no timing assertion, only a guard against
// a call that never returns).
func within(t *testing.T, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return while its limiter hung")
		return nil
	}
}

// TestTimeout: a decision on a limiter that hangs, on a call without a
// deadline, is given up after Config.Timeout: the call is served (fail
// open) or answered Unavailable (FailClosed), and the error, a store
// failure wrapping context.DeadlineExceeded, goes to OnError.
func TestTimeout(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprint("FailClosed=", closed), func(t *testing.T) {
			lim, _ := bucket(t, 5)
			h := &hanging{Limiter: lim, allow: true, release: make(chan struct{})}
			t.Cleanup(func() { close(h.release) })
			got := &errs{}
			in := newInterceptors(t, grpclimit.Config{Limiter: h, Timeout: 10 * time.Millisecond, FailClosed: closed, OnError: got.add})
			conn := serve(t, in, &svc{})
			err := within(t, func() error { _, err := do(conn, context.Background(), ""); return err })
			switch {
			case closed && status.Code(err) != codes.Unavailable:
				t.Fatalf("FailClosed: %v, want Unavailable", err)
			case !closed && err != nil:
				t.Fatalf("fail open: %v, want the call served", err)
			}
			e := got.get()
			if len(e) != 1 || !errors.Is(e[0], core.ErrStore) || !errors.Is(e[0], context.DeadlineExceeded) {
				t.Fatalf("OnError got %v, want one store error wrapping DeadlineExceeded", e)
			}
		})
	}
}

// TestRefundTimeout: a refund (Counts) on a limiter that hangs is given up
// after Config.Timeout too; the call's answer is the handler's, and the
// refund's failure goes to OnError.
func TestRefundTimeout(t *testing.T) {
	lim, _ := bucket(t, 5)
	h := &hanging{Limiter: lim, refund: true, release: make(chan struct{})}
	t.Cleanup(func() { close(h.release) })
	got := &errs{}
	in := newInterceptors(t, grpclimit.Config{Limiter: h, Timeout: 10 * time.Millisecond, Counts: func(codes.Code) bool { return false }, OnError: got.add})
	conn := serve(t, in, &svc{})
	if err := within(t, func() error { _, err := do(conn, context.Background(), ""); return err }); err != nil {
		t.Fatalf("a call whose refund hangs: %v, want the handler's OK", err)
	}
	e := got.get()
	if len(e) != 1 || !errors.Is(e[0], context.DeadlineExceeded) || !strings.Contains(e[0].Error(), "refund") {
		t.Fatalf("OnError got %v, want the refund's timeout", e)
	}
}

// stuckLeases is a concurrency limiter whose acquire waits for its
// context to end.
type stuckLeases struct{ grpclimit.ConcurrencyLimiter }

func (stuckLeases) Limit() int64 { return 1 }

func (stuckLeases) AcquireN(ctx context.Context, _ string, _ int64) (concurrency.Lease, core.Decision, error) {
	<-ctx.Done()
	return concurrency.Lease{}, core.Decision{}, fmt.Errorf("%w: %w", core.ErrStore, ctx.Err())
}

// TestAcquireTimeout: a lease's acquire runs with a deadline of
// Config.Timeout, though the call has none.
func TestAcquireTimeout(t *testing.T) {
	in := newInterceptors(t, grpclimit.Config{Concurrency: &grpclimit.Concurrency{Limiter: stuckLeases{}}, Timeout: 10 * time.Millisecond, FailClosed: true, OnError: func(context.Context, grpclimit.Call, error) {}})
	conn := serve(t, in, &svc{})
	err := within(t, func() error { _, err := do(conn, context.Background(), ""); return err })
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("%v, want Unavailable", err)
	}
}

// TestClientMessages: a client gets a short message of its own; the error
// itself, which may name the server's configuration, goes only to
// OnError.
func TestClientMessages(t *testing.T) {
	lim, _ := bucket(t, 5)
	got := &errs{}
	in := newInterceptors(t, grpclimit.Config{
		Limiter: lim,
		Key: grpclimit.KeyFunc(func(ctx context.Context, c grpclimit.Call) (string, error) {
			if v := c.Metadata.Get("x-long"); len(v) > 0 {
				return strings.Repeat("k", core.MaxKeyLen+1), nil // the limiter refuses it
			}
			return grpclimit.Metadata{Name: "x-api-key"}.Key(ctx, c)
		}),
		Cost: func(_ context.Context, c grpclimit.Call) (int64, error) {
			switch v := c.Metadata.Get("x-cost"); {
			case len(v) == 0:
				return 1, nil
			case v[0] == "huge":
				return 1000, nil // more than the limiter allows at once
			}
			return 0, errors.New("x-cost is not a number")
		},
		OnError: got.add,
	})
	conn := serve(t, in, &svc{})
	bg := context.Background()
	for _, tt := range []struct {
		name    string
		md      []string
		message string
		err     string // in the error OnError gets
	}{
		{"missing key", nil, "bad request: missing or invalid rate limit key", "metadata x-api-key is missing"},
		{"key the limiter refuses", []string{"x-long", "1"}, "bad request: invalid rate limit key", "ratekit: invalid key"},
		{"bad cost", []string{"x-api-key", "a", "x-cost", "x"}, "bad request: invalid request cost", "x-cost is not a number"},
		{"cost the limiter refuses", []string{"x-api-key", "a", "x-cost", "huge"}, "bad request: invalid request cost", "ratekit: invalid cost"},
	} {
		_, err := do(conn, metadata.AppendToOutgoingContext(bg, tt.md...), "")
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != tt.message {
			t.Errorf("%s: %v, want InvalidArgument %q", tt.name, err, tt.message)
		}
		e := got.get()
		if len(e) == 0 || !strings.Contains(e[len(e)-1].Error(), tt.err) {
			t.Errorf("%s: OnError got %v, want an error with %q", tt.name, e, tt.err)
		}
	}

	failed := newInterceptors(t, grpclimit.Config{
		LimiterFor: func(context.Context, grpclimit.Call) (core.Limiter, error) {
			return nil, errors.New("tier table at /etc/tiers.json unreadable")
		},
		OnError: got.add,
	})
	_, err := do(serve(t, failed, &svc{}), bg, "")
	if st := status.Convert(err); st.Code() != codes.Internal || st.Message() != "rate limiter misconfigured" {
		t.Fatalf("LimiterFor failing: %v, want Internal with a message of its own", err)
	}
	closed := newInterceptors(t, grpclimit.Config{Limiter: failing{}, FailClosed: true, OnError: got.add})
	_, err = do(serve(t, closed, &svc{}), bg, "")
	if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != "rate limiter unavailable" {
		t.Fatalf("store down, FailClosed: %v, want Unavailable with a message of its own", err)
	}
}
