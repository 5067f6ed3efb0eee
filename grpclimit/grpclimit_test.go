package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/grpclimit"
)

// details returns a status error's RetryInfo delay and QuotaFailure
// subjects.
func details(t *testing.T, err error) (time.Duration, []string) {
	t.Helper()
	st, _ := status.FromError(err)
	var retry time.Duration = -1
	var subjects []string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration()
		case *errdetails.QuotaFailure:
			for _, v := range d.GetViolations() {
				subjects = append(subjects, v.GetSubject())
			}
		}
	}
	return retry, subjects
}

// TestUnary: calls pass until the limit, each with the rate-limit fields
// in its header metadata, w from the limiter's own configuration (a
// bucket of 2 refilled by 1 a minute gives back its whole Limit in 2
// minutes); the next is ResourceExhausted with the exact wait as
// RetryInfo, the limit as a QuotaFailure, and retry-after.
func TestUnary(t *testing.T) {
	lim, clock := bucket(t, 2)
	in := newInterceptors(t, grpclimit.Config{Name: "api", Limiter: lim})
	conn := serve(t, in, &svc{})
	ctx := context.Background()
	for i, want := range []string{`"api";r=1;t=60`, `"api";r=0;t=120`} {
		md, err := do(conn, ctx, "")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := md.Get("ratelimit"); len(got) != 1 || got[0] != want {
			t.Fatalf("call %d: ratelimit %q, want %q", i, got, want)
		}
		if got := md.Get("ratelimit-policy"); len(got) != 1 || got[0] != `"api";q=2;w=120` {
			t.Fatalf("call %d: ratelimit-policy %q", i, got)
		}
	}
	clock.Advance(15500 * time.Millisecond)
	md, err := do(conn, ctx, "")
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third call: %v, want ResourceExhausted", err)
	}
	retry, subjects := details(t, err)
	if retry != 44500*time.Millisecond || len(subjects) != 1 || subjects[0] != "ratekit:api" {
		t.Fatalf("details: RetryInfo %v, QuotaFailure %q; want 44.5s, [ratekit:api]", retry, subjects)
	}
	if got := md.Get("retry-after"); len(got) != 1 || got[0] != "45" {
		t.Fatalf("retry-after %q, want 45", got)
	}
	// t on the denial is when quota for the call is back, as retry-after
	// says, not when the bucket is full (105 s): the draft's t is "the
	// number of seconds until additional quota ... is made available".
	if got := md.Get("ratelimit"); len(got) != 1 || got[0] != `"api";r=0;t=45` {
		t.Fatalf("denial's ratelimit %q, want t=45 as retry-after", got)
	}
	if d, ok := grpclimit.DecisionFromContext(context.Background()); ok {
		t.Fatalf("a decision outside a call: %+v", d)
	}
}

// TestWindow: Config.Window overrides the w a limiter's decisions carry;
// a policy's items carry each limit's own.
func TestWindow(t *testing.T) {
	lim, _ := bucket(t, 2)
	in := newInterceptors(t, grpclimit.Config{Name: "api", Limiter: lim, Window: time.Minute})
	md, err := do(serve(t, in, &svc{}), context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := md.Get("ratelimit-policy"); len(got) != 1 || got[0] != `"api";q=2;w=60` {
		t.Fatalf("with Window: ratelimit-policy %q, want w=60", got)
	}
	in = newInterceptors(t, grpclimit.Config{Limiter: policy(t, 5, 2, false)})
	md, err = do(serve(t, in, &svc{}), context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(md.Get("ratelimit-policy")); got != `["burst";q=5;w=300 "daily";q=2;w=86400]` {
		t.Fatalf("a policy: ratelimit-policy %s, want each limit's w", got)
	}
}

// TestChained: limits of different keys are Interceptors chained; each
// adds its values to the fields, in order, and a call must pass both.
// The outer one has counted a call the inner one denies.
func TestChained(t *testing.T) {
	perClient, _ := bucket(t, 5)
	perMethod, _ := bucket(t, 2)
	client := newInterceptors(t, grpclimit.Config{Name: "client", Limiter: perClient})
	method := newInterceptors(t, grpclimit.Config{Name: "method", Limiter: perMethod, Key: grpclimit.Method{}})
	conn := serveChain(t, []*grpclimit.Interceptors{client, method}, &svc{})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		md, err := do(conn, ctx, "")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got, want := fmt.Sprint(md.Get("ratelimit-policy")), `["client";q=5;w=300 "method";q=2;w=120]`; got != want {
			t.Fatalf("call %d: ratelimit-policy %s, want %s", i, got, want)
		}
	}
	md, err := do(conn, ctx, "")
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third call: %v", err)
	}
	if _, subjects := details(t, err); fmt.Sprint(subjects) != "[ratekit:method]" {
		t.Fatalf("QuotaFailure %v, want the method's limit", subjects)
	}
	// The client's value was written when it allowed the call, before the
	// method's limit denied it: its t is when its bucket is full again.
	if got, want := fmt.Sprint(md.Get("ratelimit"), md.Get("retry-after")), `["client";r=2;t=180 "method";r=0;t=60] [60]`; got != want {
		t.Fatalf("ratelimit and retry-after %s, want %s", got, want)
	}
	if d, _ := perClient.Peek(ctx, "ip4:127.0.0.1"); d.Remaining != 2 {
		t.Fatalf("the client's limit has %d left, want 2: it counted the call the method's limit denied", d.Remaining)
	}
}

// TestStream: a stream is decided once, when it opens, with the fields
// in its header metadata, and denied like a unary call.
func TestStream(t *testing.T) {
	lim, _ := bucket(t, 1)
	in := newInterceptors(t, grpclimit.Config{Name: "api", Limiter: lim})
	conn := serve(t, in, &svc{})
	ctx := context.Background()
	md, err := watch(conn, ctx, "")
	if err != nil || len(md.Get("ratelimit")) != 1 {
		t.Fatalf("first stream: %v, header %v", err, md)
	}
	md, err = watch(conn, ctx, "")
	if status.Code(err) != codes.ResourceExhausted || len(md.Get("retry-after")) != 1 {
		t.Fatalf("second stream: %v, header %v; want ResourceExhausted with retry-after", err, md)
	}
	if retry, _ := details(t, err); retry != time.Minute {
		t.Fatalf("RetryInfo %v, want 1m", retry)
	}
}

// TestClientIP: calls are keyed by peer address; behind a trusted proxy,
// by the last untrusted hop of x-forwarded-for, and never by hops the
// client writes itself or another key it sends.
func TestClientIP(t *testing.T) {
	for _, tt := range []struct {
		name    string
		key     grpclimit.Keyer
		md      []string // x-forwarded-for lines, x-real-ip
		wantKey string
	}{
		{"peer", nil, []string{"x-forwarded-for", "1.2.3.4"}, "ip4:127.0.0.1"},
		{"behind a trusted proxy", grpclimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Header: grpclimit.XForwardedFor},
			[]string{"x-forwarded-for", "6.6.6.6, 1.2.3.4", "x-real-ip", "7.7.7.7"}, "ip4:1.2.3.4"},
		{"forwarded", &grpclimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Header: grpclimit.Forwarded},
			[]string{"forwarded", `for="[2001:db8::1]:8080"`}, "ip6:2001:db8::/64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lim, _ := bucket(t, 5)
			in := newInterceptors(t, grpclimit.Config{Limiter: lim, Key: tt.key})
			conn := serve(t, in, &svc{})
			ctx := metadata.AppendToOutgoingContext(context.Background(), tt.md...)
			if _, err := do(conn, ctx, ""); err != nil {
				t.Fatal(err)
			}
			if d, err := lim.Peek(context.Background(), tt.wantKey); err != nil || d.Remaining != 4 {
				t.Fatalf("the call was not counted at %s: %+v, %v", tt.wantKey, d, err)
			}
		})
	}
}

// TestKeyers: metadata keys are bounded and single, Join quotes its parts,
// Method keys by the method; a client's bad key is InvalidArgument.
func TestKeyers(t *testing.T) {
	lim, _ := bucket(t, 5)
	in := newInterceptors(t, grpclimit.Config{
		Limiter: lim,
		Key:     grpclimit.Join(grpclimit.Metadata{Name: "x-tenant", MaxLen: 8}, grpclimit.Method{}),
	})
	var mu sync.Mutex
	var errs []error
	in2 := newInterceptors(t, grpclimit.Config{
		Limiter: lim,
		Key:     grpclimit.Metadata{Name: "x-tenant"},
		OnError: func(_ context.Context, _ grpclimit.Call, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
	})
	conn := serve(t, in, &svc{})
	conn2 := serve(t, in2, &svc{})
	bg := context.Background()
	if _, err := do(conn, metadata.AppendToOutgoingContext(bg, "x-tenant", "acme"), ""); err != nil {
		t.Fatal(err)
	}
	if d, _ := lim.Peek(bg, `"md:acme" "m:/ratekit.test.Svc/Do"`); d.Remaining != 4 {
		t.Fatalf("the joined key was not counted: %+v", d)
	}
	for name, md := range map[string][]string{
		"missing":  nil,
		"empty":    {"x-tenant", ""},
		"too long": {"x-tenant", "123456789"},
		"twice":    {"x-tenant", "a", "x-tenant", "b"},
	} {
		if _, err := do(conn, metadata.AppendToOutgoingContext(bg, md...), ""); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	long := strings.Repeat("x", grpclimit.DefaultMaxLen+1)
	if _, err := do(conn2, metadata.AppendToOutgoingContext(bg, "x-tenant", long), ""); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("over DefaultMaxLen: %v", err)
	}
	if _, err := do(conn2, metadata.AppendToOutgoingContext(bg, "x-tenant", long[1:]), ""); err != nil {
		t.Fatalf("at DefaultMaxLen: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "longer than 256") {
		t.Fatalf("OnError got %v, want the one bad key", errs)
	}
}

// failing is a limiter whose store is down. Only Decide and MaxCost are
// called.
type failing struct{ core.Limiter }

func (failing) Decide(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, fmt.Errorf("%w: connection refused", core.ErrStore)
}

func (failing) MaxCost() int64 { return math.MaxInt64 }

// records is a slog.Handler that keeps every record.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }
func (r *records) count(level slog.Level) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if rec.Level == level {
			n++
		}
	}
	return n
}

// TestStoreFailure: a store that fails serves the call (fail open) or
// answers Unavailable (FailClosed), and is logged at error level, at most
// one line every 10 s.
func TestStoreFailure(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprint("FailClosed=", closed), func(t *testing.T) {
			log := &records{}
			in := newInterceptors(t, grpclimit.Config{Limiter: failing{}, FailClosed: closed, Logger: slog.New(log)})
			now := time.Unix(1000, 0)
			grpclimit.SetNow(in, func() time.Time { return now })
			conn := serve(t, in, &svc{})
			for i := 0; i < 3; i++ {
				_, err := do(conn, context.Background(), "")
				if closed && status.Code(err) != codes.Unavailable || !closed && err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if got := log.count(slog.LevelError); got != 1 {
				t.Fatalf("%d lines at error level for 3 failures in a second, want 1", got)
			}
			now = now.Add(10 * time.Second)
			do(conn, context.Background(), "")
			if got := log.count(slog.LevelError); got != 2 {
				t.Fatalf("%d lines at error level 10 s later, want 2", got)
			}
		})
	}
}

// TestSkip: a skipped method is never limited.
func TestSkip(t *testing.T) {
	lim, _ := bucket(t, 1)
	in := newInterceptors(t, grpclimit.Config{Limiter: lim, Skip: func(m string) bool { return m == watchMethod }})
	conn := serve(t, in, &svc{})
	for i := 0; i < 3; i++ {
		if _, err := watch(conn, context.Background(), ""); err != nil {
			t.Fatalf("skipped stream %d: %v", i, err)
		}
	}
	do(conn, context.Background(), "")
	if _, err := do(conn, context.Background(), ""); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("the other method is limited: %v", err)
	}
}

// nopLeases is a ConcurrencyLimiter for configuration checks.
type nopLeases struct{ grpclimit.ConcurrencyLimiter }

func (nopLeases) Limit() int64 { return 1 }

func TestConfigErrors(t *testing.T) {
	lim, _ := bucket(t, 1)
	var nilIP *grpclimit.ClientIP
	for name, cfg := range map[string]grpclimit.Config{
		"no limit":                 {},
		"Limiter and LimiterFor":   {Limiter: lim, LimiterFor: func(context.Context, grpclimit.Call) (core.Limiter, error) { return lim, nil }},
		"zero limiter":             {Limiter: &ratekit.Limiter{}},
		"bad name":                 {Name: "a\n", Limiter: lim},
		"long name":                {Name: strings.Repeat("a", 65), Limiter: lim},
		"negative window":          {Limiter: lim, Window: -1},
		"negative timeout":         {Limiter: lim, Timeout: -1},
		"proxies, no header":       {Limiter: lim, Key: grpclimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}},
		"header, no proxies":       {Limiter: lim, Key: grpclimit.ClientIP{Header: grpclimit.XForwardedFor}},
		"unknown header":           {Limiter: lim, Key: grpclimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Header: "x-client-ip"}},
		"nil *ClientIP":            {Limiter: lim, Key: nilIP},
		"metadata, no name":        {Limiter: lim, Key: grpclimit.Metadata{}},
		"metadata, upper case":     {Limiter: lim, Key: grpclimit.Metadata{Name: "X-Tenant"}},
		"metadata, grpc-":          {Limiter: lim, Key: grpclimit.Metadata{Name: "grpc-timeout"}},
		"metadata, huge":           {Limiter: lim, Key: grpclimit.Metadata{Name: "x", MaxLen: core.MaxKeyLen + 1}},
		"bad part of a Join":       {Limiter: lim, Key: grpclimit.Join(grpclimit.Method{}, grpclimit.Metadata{})},
		"empty Join":               {Limiter: lim, Key: grpclimit.Join()},
		"bad concurrency key":      {Concurrency: &grpclimit.Concurrency{Limiter: nopLeases{}, Key: grpclimit.Metadata{}}},
		"Counts without a limiter": {Concurrency: &grpclimit.Concurrency{Limiter: nopLeases{}}, Counts: func(codes.Code) bool { return true }},
		"nil concurrency":          {Concurrency: &grpclimit.Concurrency{}},
		"bad concurrency name":     {Concurrency: &grpclimit.Concurrency{Limiter: nopLeases{}, Name: "a\n"}},
		"negative ExtendEvery":     {Concurrency: &grpclimit.Concurrency{Limiter: nopLeases{}, ExtendEvery: -1}},
		"negative ReleaseTimeout":  {Concurrency: &grpclimit.Concurrency{Limiter: nopLeases{}, ReleaseTimeout: -1}},
		"concurrency code":         {Concurrency: &grpclimit.Concurrency{Limiter: nopLeases{}, Code: codes.InvalidArgument}},
		"typed-nil limiter":        {Limiter: (*ratekit.Limiter)(nil)},
		"typed-nil concurrency":    {Concurrency: &grpclimit.Concurrency{Limiter: (*concurrency.Limiter)(nil)}},
		"zero concurrency limiter": {Concurrency: &grpclimit.Concurrency{Limiter: &concurrency.Limiter{}}},
	} {
		_, err := grpclimit.New(cfg)
		if !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
		// Typed nils passed New and panicked at the first call; now a
		// limiter that cannot decide says so.
		if strings.HasPrefix(name, "typed-nil") && !strings.Contains(fmt.Sprint(err), "cannot decide") {
			t.Errorf("%s: %v, want it to say the limiter cannot decide", name, err)
		}
	}
}

// TestPeerNotIP: ClientIP on a unix socket, whose peer is no IP address,
// cannot key any call: the server's mistake, answered Internal and logged
// at error level, one line for many calls (paced), where it was
// InvalidArgument at debug level.
func TestPeerNotIP(t *testing.T) {
	lim, _ := bucket(t, 10)
	log := &records{}
	in := newInterceptors(t, grpclimit.Config{Limiter: lim, Logger: slog.New(log)})
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.UnixAddr{Name: "@", Net: "unix"}})
	info := &grpc.UnaryServerInfo{FullMethod: "/test.Svc/Do"}
	for range 3 {
		_, err := in.Unary()(ctx, nil, info, func(context.Context, any) (any, error) { return nil, nil })
		if status.Code(err) != codes.Internal {
			t.Fatalf("a unix peer: %v, want Internal", err)
		}
	}
	if got := log.count(slog.LevelError); got != 1 {
		t.Fatalf("%d error lines for 3 calls, want 1 (paced)", got)
	}
	if got := log.count(slog.LevelDebug); got != 0 {
		t.Fatalf("%d debug lines, want 0", got)
	}
}

// Interceptors that New did not make hold no limit: they answer every
// call Internal and never run its handler, rather than let it through.
func TestZeroInterceptors(t *testing.T) {
	var nilIn *grpclimit.Interceptors
	for name, in := range map[string]*grpclimit.Interceptors{"zero": {}, "nil": nilIn} {
		ran := false
		_, err := in.Unary()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/s/M"}, func(context.Context, any) (any, error) {
			ran = true
			return nil, nil
		})
		if status.Code(err) != codes.Internal || ran {
			t.Errorf("%s, unary: %v, handler ran %v; want Internal and no handler", name, err, ran)
		}
		err = in.Stream()(nil, nil, &grpc.StreamServerInfo{FullMethod: "/s/S"}, func(any, grpc.ServerStream) error {
			ran = true
			return nil
		})
		if status.Code(err) != codes.Internal || ran {
			t.Errorf("%s, stream: %v, handler ran %v; want Internal and no handler", name, err, ran)
		}
	}
}

// TestParams: Config.Params gives each call its limits; the fields say
// the limit applied, and an error answers Internal.
func TestParams(t *testing.T) {
	lim, _ := bucket(t, 2)
	five, err := tokenbucket.NewParams(tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	in := newInterceptors(t, grpclimit.Config{Name: "api", Limiter: lim, Params: func(ctx context.Context, c grpclimit.Call) ([]core.Params, error) {
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("broken")) > 0 {
			return nil, errors.New("contracts unavailable")
		}
		return []core.Params{five}, nil
	}, Logger: slog.New(slog.DiscardHandler)})
	conn := serve(t, in, &svc{})
	ctx := context.Background()
	for i := range 6 {
		md, err := do(conn, ctx, "")
		if (err == nil) != (i < 5) {
			t.Fatalf("call %d: %v, want %d calls of 5 allowed", i, err, 5)
		}
		if got := md.Get("ratelimit-policy"); len(got) != 1 || got[0] != `"api";q=5;w=300` {
			t.Fatalf("call %d: ratelimit-policy %q, want q=5", i, got)
		}
	}
	_, err = do(conn, metadata.AppendToOutgoingContext(ctx, "broken", "1"), "")
	if status.Code(err) != codes.Internal {
		t.Fatalf("Params failing: %v, want Internal", err)
	}
}
