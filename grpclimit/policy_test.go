package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/grpclimit"
	"github.com/ratekit/ratekit/store/memory"
)

// policy returns a policy of a burst of burst (refilled by 1 a minute)
// and daily per day, daily in shadow when shadow is set.
func policy(t *testing.T, burst, daily int64, shadow bool) *ratekit.Limiter {
	t.Helper()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	mem, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	b, err := tokenbucket.New(mem, tokenbucket.Config{Capacity: burst, RefillRate: 1, RefillInterval: time.Minute, Clock: clock, Prefix: "b:"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := fixedwindow.New(mem, fixedwindow.Config{Limit: daily, Window: 24 * time.Hour, Clock: clock, Prefix: "d:"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "burst", Limiter: b}, {Name: "daily", Limiter: d, Shadow: shadow}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicy: a policy decides every limit at once; each limit is one
// value of the fields, a denial names the limits that denied, and the
// handler sees the decision, with each limit's.
func TestPolicy(t *testing.T) {
	p := policy(t, 5, 2, false)
	in := newInterceptors(t, grpclimit.Config{Limiter: p})
	s := &svc{seen: make(chan context.Context, 10)}
	conn := serve(t, in, s)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		md, err := do(conn, ctx, "")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := fmt.Sprint(md.Get("ratelimit-policy")); got != `["burst";q=5;w=300 "daily";q=2;w=86400]` {
			t.Fatalf("ratelimit-policy %s", got)
		}
		d, ok := grpclimit.DecisionFromContext(<-s.seen)
		if !ok || !d.Allowed || len(d.Limits) != 2 {
			t.Fatalf("the handler's decision: %+v, %v", d, ok)
		}
	}
	md, err := do(conn, ctx, "")
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third call: %v", err)
	}
	if _, subjects := details(t, err); fmt.Sprint(subjects) != "[ratekit:daily]" {
		t.Fatalf("QuotaFailure %v, want the daily limit", subjects)
	}
	if got := fmt.Sprint(md.Get("ratelimit")); got != `["burst";r=3;t=120 "daily";r=0;t=86400]` {
		t.Fatalf("ratelimit %s", got)
	}
	// Nothing was counted by the burst limit for the denied call.
	if d, _ := p.Peek(ctx, "ip4:127.0.0.1"); d.Limits[0].Remaining != 3 {
		t.Fatalf("burst remaining %d, want 3", d.Limits[0].Remaining)
	}
}

// TestShadow: a shadow limit that would deny never denies; the call is
// served, the fields leave it out (a client would throttle itself on a
// limit that is not enforced), and it is logged at info level.
func TestShadow(t *testing.T) {
	log := &records{}
	in := newInterceptors(t, grpclimit.Config{Limiter: policy(t, 5, 1, true), Logger: slog.New(log)})
	conn := serve(t, in, &svc{})
	for i := 0; i < 3; i++ {
		md, err := do(conn, context.Background(), "")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := fmt.Sprint(md.Get("ratelimit"), md.Get("ratelimit-policy")); !strings.HasPrefix(got, `["burst";r=`) || strings.Contains(got, "daily") {
			t.Fatalf("call %d: fields %s, want the burst limit alone", i, got)
		}
	}
	if got := log.count(slog.LevelInfo); got != 1 {
		t.Fatalf("%d info lines for 2 shadow denials in a second, want 1 (paced)", got)
	}
}

// TestCounts: with Counts, a call that ends with a code that does not
// count is refunded; a handler that panics counts.
func TestCounts(t *testing.T) {
	p := policy(t, 3, 100, false)
	in := newInterceptors(t, grpclimit.Config{Limiter: p, Counts: func(c codes.Code) bool { return c == codes.Unauthenticated }})
	conn := serve(t, in, &svc{})
	ctx := context.Background()
	for i, tt := range []struct {
		value     string
		remaining int64
	}{
		{"", 3},                // OK: refunded
		{"unauthenticated", 2}, // counts
		{"", 2},
		{"panic", 1}, // a panic counts
		{"unauthenticated", 0},
	} {
		do(conn, ctx, tt.value)
		if d, _ := p.Peek(ctx, "ip4:127.0.0.1"); d.Limits[0].Remaining != tt.remaining {
			t.Fatalf("call %d (%q): burst remaining %d, want %d", i, tt.value, d.Limits[0].Remaining, tt.remaining)
		}
	}
	if _, err := do(conn, ctx, ""); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("with nothing left: %v", err)
	}
}

// TestLimiterFor: each call's limiter is picked by LimiterFor (its tier);
// a LimiterFor that fails, or picks a limiter that cannot decide, answers
// Internal.
func TestLimiterFor(t *testing.T) {
	free, paid := policy(t, 1, 100, false), policy(t, 3, 100, false)
	var unbuilt *ratekit.Limiter
	in := newInterceptors(t, grpclimit.Config{LimiterFor: func(_ context.Context, c grpclimit.Call) (core.Limiter, error) {
		switch tier := c.Metadata.Get("x-tier"); {
		case len(tier) == 0:
			return free, nil
		case tier[0] == "paid":
			return paid, nil
		case tier[0] == "unbuilt":
			return unbuilt, nil
		}
		return nil, errors.New("unknown tier")
	}, OnError: func(context.Context, grpclimit.Call, error) {}})
	conn := serve(t, in, &svc{})
	bg := context.Background()
	paidCtx := metadata.AppendToOutgoingContext(bg, "x-tier", "paid")
	for i, tt := range []struct {
		ctx  context.Context
		want codes.Code
	}{
		{bg, codes.OK}, {bg, codes.ResourceExhausted},
		{paidCtx, codes.OK}, {paidCtx, codes.OK}, {paidCtx, codes.OK}, {paidCtx, codes.ResourceExhausted},
		{metadata.AppendToOutgoingContext(bg, "x-tier", "gold"), codes.Internal},
		{metadata.AppendToOutgoingContext(bg, "x-tier", "unbuilt"), codes.Internal},
	} {
		if _, err := do(conn, tt.ctx, ""); status.Code(err) != tt.want {
			t.Fatalf("call %d: %v, want %v", i, err, tt.want)
		}
	}
	if _, err := grpclimit.New(grpclimit.Config{Limiter: unbuilt}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Fatalf("a nil *ratekit.Limiter: %v", err)
	}
	if _, err := grpclimit.New(grpclimit.Config{Limiter: free, LimiterFor: func(context.Context, grpclimit.Call) (core.Limiter, error) { return free, nil }}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Fatalf("Limiter and LimiterFor: %v", err)
	}
}
