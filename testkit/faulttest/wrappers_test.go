package faulttest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/grpclimit"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// A kind of limiter: every one is a *ratekit.Limiter, built on store
// under a prefix of its own, that allows 3 requests of a key per hour (a
// policy's binding limit) and no more.
type wrapKind struct {
	name   string
	policy bool // its decisions name two limits
	build  func(t *testing.T, store core.ScriptRunner, prefix string) *ratekit.Limiter
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func hourly(t *testing.T, store core.ScriptRunner, prefix string, limit int64) *ratekit.Limiter {
	return must[*ratekit.Limiter](t)(fixedwindow.New(store, fixedwindow.Config{Limit: limit, Window: time.Hour, Prefix: prefix}))
}

func twoLimits(t *testing.T, store core.ScriptRunner, prefix string, hour int64) *ratekit.Limiter {
	burst := must[*ratekit.Limiter](t)(tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second, Prefix: prefix + "tb:"}))
	return must[*ratekit.Limiter](t)(ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "burst", Limiter: burst},
		{Name: "hour", Limiter: hourly(t, store, prefix+"fw:", hour)},
	}}))
}

var wrapKinds = []wrapKind{
	{"algorithm", false, func(t *testing.T, s core.ScriptRunner, p string) *ratekit.Limiter { return hourly(t, s, p, 3) }},
	{"policy", true, func(t *testing.T, s core.ScriptRunner, p string) *ratekit.Limiter { return twoLimits(t, s, p, 3) }},
	{"tier", true, func(t *testing.T, s core.ScriptRunner, p string) *ratekit.Limiter {
		tiers := must[*ratekit.Tiers](t)(ratekit.NewTiers(map[string]*ratekit.Limiter{
			"free": twoLimits(t, s, p, 3),
			"paid": twoLimits(t, s, p, 300),
		}))
		return must[*ratekit.Limiter](t)(tiers.Policy("free"))
	}},
	{"coalesced", false, func(t *testing.T, s core.ScriptRunner, p string) *ratekit.Limiter {
		return must[*ratekit.Limiter](t)(ratekit.Coalesce(hourly(t, s, p, 3)))
	}},
	{"coalesced policy", true, func(t *testing.T, s core.ScriptRunner, p string) *ratekit.Limiter {
		return must[*ratekit.Limiter](t)(ratekit.Coalesce(twoLimits(t, s, p, 3)))
	}},
}

// A wrapper that is a core.Limiter itself.
type limiterWrapper struct {
	name string
	wrap func(t *testing.T, next core.Limiter) core.Limiter
}

var limiterWrappers = []limiterWrapper{
	{"plain", func(t *testing.T, next core.Limiter) core.Limiter { return next }},
	{"failsafe", func(t *testing.T, next core.Limiter) core.Limiter {
		return must[*failsafe.Limiter](t)(failsafe.New(failsafe.Config{Limiter: next, Mode: failsafe.FailClosed, Timeout: decideTimeout}))
	}},
	{"denycache", func(t *testing.T, next core.Limiter) core.Limiter {
		return must[*denycache.Limiter](t)(denycache.New(next))
	}},
	{"hotkey", func(t *testing.T, next core.Limiter) core.Limiter {
		b := must[*hotkey.Budget](t)(hotkey.New(next, hotkey.Config{Lease: 1, TTL: time.Minute}))
		t.Cleanup(func() { b.Close(context.Background()) })
		return b
	}},
	{"otelratekit", func(t *testing.T, next core.Limiter) core.Limiter {
		tel := must[*otelratekit.Telemetry](t)(otelratekit.New(otelratekit.Config{}))
		l := must[*otelratekit.Limiter](t)(tel.Limiter("api", next))
		t.Cleanup(func() { l.Close() })
		return l
	}},
}

// Issue 25, item 1: every wrapper wraps every kind of limiter (an
// algorithm's, a policy, the policy a tier selects, a coalescing limiter,
// a coalescing policy), on the memory store and on a real Redis: each
// wrapped limiter allows its 3, then denies with a wait, refunds, peeks
// and resets as the limiter does; httplimit and grpclimit answer 429 and
// ResourceExhausted after 3, naming a policy's limits in their fields.
func TestEveryWrapperOverEveryKind(t *testing.T) {
	srv := redistest.Start(t)
	var n atomic.Int64
	prefix := func() string { return fmt.Sprintf("wrap:%d:%d:", time.Now().UnixNano(), n.Add(1)) }
	for _, ad := range []adapter{memoryAdapter(t), adapters[0]} {
		store := ad.open(t, srv.Addr)
		for _, kind := range wrapKinds {
			for _, w := range limiterWrappers {
				t.Run(ad.name+"/"+kind.name+"/"+w.name, func(t *testing.T) {
					lim := w.wrap(t, kind.build(t, store, prefix()))
					checkWrapped(t, lim, kind.policy, w.name)
				})
			}
			t.Run(ad.name+"/"+kind.name+"/httplimit", func(t *testing.T) {
				checkHTTP(t, kind.build(t, store, prefix()), kind.policy)
			})
			t.Run(ad.name+"/"+kind.name+"/grpclimit", func(t *testing.T) {
				checkGRPC(t, kind.build(t, store, prefix()))
			})
		}
	}
}

// checkWrapped runs a wrapped limiter of 3 per hour through its calls.
func checkWrapped(t *testing.T, lim core.Limiter, policy bool, wrapper string) {
	t.Helper()
	ctx := context.Background()
	if c := lim.MaxCost(); c != 3 {
		t.Fatalf("MaxCost %d, want 3", c)
	}
	for i := range 3 {
		d, err := lim.Allow(ctx, "k")
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v, %v; want allowed", i+1, d, err)
		}
	}
	d, err := lim.Allow(ctx, "k")
	if err != nil || d.Allowed || d.RetryAfter <= 0 {
		t.Fatalf("request 4: %+v, %v; want denied with a wait", d, err)
	}
	if policy && (len(d.Limits) != 2 || d.Limits[1].Name != "hour" || d.Limits[1].Allowed) {
		t.Fatalf("a policy's denial: %+v; want its two limits, hour denying", d)
	}
	if _, err := lim.AllowN(ctx, "k", 4); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("AllowN of 4, above MaxCost: %v, want core.ErrInvalidCost", err)
	}
	if _, err := lim.Refund(ctx, "k", 1); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	if wrapper != "hotkey" {
		// A Budget's Peek asks its source, whose state counts the lease
		// it holds; the others report the limiter's own state.
		if d, err := lim.Peek(ctx, "k"); err != nil || !d.Allowed || d.Remaining != 1 {
			t.Fatalf("Peek after a refund: %+v, %v; want 1 left", d, err)
		}
	}
	if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("after a refund: %+v, %v; want allowed", d, err)
	}
	if err := lim.Reset(ctx, "k"); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("after a reset: %+v, %v; want allowed", d, err)
	}
}

// checkHTTP serves 4 requests behind httplimit: 3 pass, the 4th is 429;
// the fields name the limiter (or each limit of a policy) with its w.
func checkHTTP(t *testing.T, lim core.Limiter, policy bool) {
	t.Helper()
	mw := must[func(http.Handler) http.Handler](t)(httplimit.New(httplimit.Config{
		Limiter: lim,
		Name:    "api",
		Timeout: decideTimeout,
		Key:     httplimit.KeyFunc(func(*http.Request) (string, error) { return "k", nil }),
	}))
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	for i := range 4 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		want := http.StatusOK
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		pol := rec.Header().Get("RateLimit-Policy")
		if rec.Code != want || !strings.Contains(pol, "q=3;w=3600") {
			t.Fatalf("request %d: %d, RateLimit-Policy %q; want %d and q=3;w=3600", i+1, rec.Code, pol, want)
		}
		if policy && !strings.Contains(pol, `"hour";q=3;w=3600`) || !policy && !strings.Contains(pol, `"api";q=3;w=3600`) {
			t.Fatalf("request %d: RateLimit-Policy %q names the wrong limit", i+1, pol)
		}
	}
}

// checkGRPC makes 4 calls through grpclimit's unary interceptor: 3 reach
// the handler, the 4th is ResourceExhausted.
func checkGRPC(t *testing.T, lim core.Limiter) {
	t.Helper()
	in := must[*grpclimit.Interceptors](t)(grpclimit.New(grpclimit.Config{
		Limiter: lim,
		Timeout: decideTimeout,
		Key:     grpclimit.KeyFunc(func(context.Context, grpclimit.Call) (string, error) { return "k", nil }),
	}))
	handled := 0
	handler := func(context.Context, any) (any, error) { handled++; return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/svc/M"}
	for i := range 4 {
		_, err := in.Unary()(context.Background(), nil, info, handler)
		if i < 3 && err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if i == 3 && status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("call 4: %v, want ResourceExhausted", err)
		}
	}
	if handled != 3 {
		t.Fatalf("%d calls handled, want 3", handled)
	}
}
