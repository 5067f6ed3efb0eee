package otelratekit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

const userKey = "user:secret-42"

// TestDecisions: each decision is counted once, by outcome, with the
// limiter's name, algorithm and store, and never its key.
func TestDecisions(t *testing.T) {
	r := newRig(t)
	lim, _ := r.bucket(t, 2)
	api, err := r.tel.Limiter("api", lim)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		api.Allow(ctx, userKey)
	}
	api.Peek(ctx, userKey) // not a decision
	if _, err := api.AllowN(ctx, userKey, 0); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("cost 0: %v", err)
	}
	base := []string{"ratekit.limiter.name", "api", "ratekit.algorithm", "tokenbucket", "ratekit.store", "memory"}
	want := map[string]int64{
		key(append(base, "ratekit.outcome", "allowed")...):                             2,
		key(append(base, "ratekit.outcome", "denied")...):                              3,
		key(append(base, "ratekit.outcome", "error", "error.type", "invalid_cost")...): 1,
	}
	if got := r.ints(t, "ratekit.decisions"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ratekit.decisions =\n%v\nwant\n%v", got, want)
	}
	for _, v := range r.everyAttributeValue(t) {
		if strings.Contains(v, "secret") {
			t.Fatalf("an attribute holds the key: %q", v)
		}
	}
}

// TestStoreCalls: every store call is measured (its duration in the
// right bucket) under its script's name; failures are counted with their
// error.type, and the decision is an error of the same type.
func TestStoreCalls(t *testing.T) {
	r := newRig(t)
	otelratekit.SetNow(r.tel, stepClock(3*time.Millisecond)) // every call takes 3 ms
	lim, _ := r.bucket(t, 2)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		lim.Allow(ctx, "k")
	}
	lim.Peek(ctx, "k")
	lim.Reset(ctx, "k")

	run := func(script string) string {
		return key("ratekit.store", "memory", "ratekit.store.operation", "run_script", "ratekit.script", script)
	}
	h := r.hists(t, "ratekit.store.duration")
	if len(h) != 2 || h[run("tokenbucket")].count != 4 || h[run("reset")].count != 1 {
		t.Fatalf("ratekit.store.duration: %+v; want 4 tokenbucket calls (3 AllowN, 1 Peek) and 1 reset", h)
	}
	tb := h[run("tokenbucket")]
	if tb.sum < 0.0119 || tb.sum > 0.0121 {
		t.Fatalf("sum %v s, want 4 x 3 ms", tb.sum)
	}
	// 3 ms is above the 2.5 ms boundary and below the 5 ms one.
	i := slices.Index(tb.bounds, 0.005)
	if i < 0 || tb.counts[i] != 4 {
		t.Fatalf("buckets %v / %v: want all 4 calls in (2.5 ms, 5 ms]", tb.bounds, tb.counts)
	}
	if got := r.ints(t, "ratekit.store.errors"); got != nil {
		t.Fatalf("errors while the store answered: %v", got)
	}

	// A store that times out.
	timeout := fmt.Errorf("%w: %w", core.ErrStore, context.DeadlineExceeded)
	down, err := r.tel.Store(failing{timeout})
	if err != nil {
		t.Fatal(err)
	}
	glim, err := gcra.New(down, gcra.Config{Rate: 1, Period: time.Second, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	api, _ := r.tel.Limiter("api", glim)
	if _, err := api.Allow(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Allow on a store that times out: %v", err)
	}
	failed := key("ratekit.store", "failing", "ratekit.store.operation", "run_script", "ratekit.script", "gcra", "error.type", "timeout")
	if got := r.ints(t, "ratekit.store.errors"); len(got) != 1 || got[failed] != 1 {
		t.Fatalf("ratekit.store.errors = %v, want 1 at %s", got, failed)
	}
	if got := r.hists(t, "ratekit.store.duration")[failed]; got.count != 1 {
		t.Fatalf("the failed call's duration: %+v, want 1 point", got)
	}
	decision := key("ratekit.limiter.name", "api", "ratekit.algorithm", "gcra", "ratekit.store", "failing", "ratekit.outcome", "error", "error.type", "timeout")
	if got := r.ints(t, "ratekit.decisions"); got[decision] != 1 {
		t.Fatalf("ratekit.decisions = %v, want 1 at %s", got, decision)
	}
}

// spanNamed returns the one ended span named name.
func spanNamed(t *testing.T, spans []trace.ReadOnlySpan, name string) trace.ReadOnlySpan {
	t.Helper()
	var found []trace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %s, want 1", len(found), name)
	}
	return found[0]
}

func attrOf(s trace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes() {
		if a.Key == k {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestSpans: a decision is a span in the caller's trace, and its store
// call a child of it; a denial carries its retry-after, an error its
// status and error.type.
func TestSpans(t *testing.T) {
	r := newRig(t)
	lim, _ := r.bucket(t, 1)
	api, err := r.tel.Limiter("api", lim)
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := r.tp.Tracer("test").Start(context.Background(), "request")
	api.Allow(ctx, userKey)
	r.spans.Reset()
	api.Allow(ctx, userKey) // denied
	parent.End()

	spans := r.spans.Ended()
	decision := spanNamed(t, spans, "ratekit.AllowN")
	store := spanNamed(t, spans, "ratekit.store.RunScript")
	if decision.Parent().SpanID() != parent.SpanContext().SpanID() || decision.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Fatal("the decision's span is not a child of the caller's")
	}
	if store.Parent().SpanID() != decision.SpanContext().SpanID() {
		t.Fatal("the store call's span is not a child of the decision's")
	}
	for k, want := range map[attribute.Key]attribute.Value{
		"ratekit.limiter.name": attribute.StringValue("api"),
		"ratekit.algorithm":    attribute.StringValue("tokenbucket"),
		"ratekit.store":        attribute.StringValue("memory"),
		"ratekit.outcome":      attribute.StringValue("denied"),
		"ratekit.cost":         attribute.Int64Value(1),
		"ratekit.limit":        attribute.Int64Value(1),
		"ratekit.remaining":    attribute.Int64Value(0),
		"ratekit.retry_after":  attribute.Float64Value(3600),
	} {
		if got, ok := attrOf(decision, k); !ok || got != want {
			t.Errorf("decision span %s = %v, want %v", k, got.Emit(), want.Emit())
		}
	}
	if got, _ := attrOf(store, "ratekit.script"); got.AsString() != "tokenbucket" {
		t.Errorf("store span ratekit.script = %q", got.Emit())
	}
	if decision.Status().Code == codes.Error {
		t.Error("a denial is not an error")
	}

	// A bad key fails the span.
	r.spans.Reset()
	api.Allow(context.Background(), "")
	bad := spanNamed(t, r.spans.Ended(), "ratekit.AllowN")
	if et, _ := attrOf(bad, "error.type"); bad.Status().Code != codes.Error || et.AsString() != "invalid_key" {
		t.Fatalf("bad key: status %v, error.type %q", bad.Status(), et.Emit())
	}
	for _, v := range r.everyAttributeValue(t) {
		if strings.Contains(v, "secret") {
			t.Fatalf("an attribute holds the key: %q", v)
		}
	}
}

// TestAllowMany: a batch is one span with one store span, and each of its
// requests is a decision.
func TestAllowMany(t *testing.T) {
	r := newRig(t)
	mem, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	b := &batching{Store: mem}
	store, err := r.tel.Store(b)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := gcra.New(store, gcra.Config{Rate: 1, Period: time.Hour, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	api, _ := r.tel.Limiter("api", lim)
	ctx := context.Background()
	res := api.AllowMany(ctx, []core.Request{{Key: "a", N: 1}, {Key: "b", N: 1}, {Key: "a", N: 1}, {Key: "", N: 1}})
	if !res[0].Decision.Allowed || !res[1].Decision.Allowed || res[2].Decision.Allowed || res[3].Err == nil {
		t.Fatalf("results: %+v", res)
	}
	if b.batches != 1 {
		t.Fatalf("%d batches reached the store, want 1", b.batches)
	}
	base := []string{"ratekit.limiter.name", "api", "ratekit.algorithm", "gcra", "ratekit.store", "memory"}
	want := map[string]int64{
		key(append(base, "ratekit.outcome", "allowed")...):                            2,
		key(append(base, "ratekit.outcome", "denied")...):                             1,
		key(append(base, "ratekit.outcome", "error", "error.type", "invalid_key")...): 1,
	}
	if got := r.ints(t, "ratekit.decisions"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ratekit.decisions =\n%v\nwant\n%v", got, want)
	}
	spans := r.spans.Ended()
	batch := spanNamed(t, spans, "ratekit.AllowMany")
	call := spanNamed(t, spans, "ratekit.store.RunScripts")
	if call.Parent().SpanID() != batch.SpanContext().SpanID() {
		t.Fatal("the store's batch span is not a child of the AllowMany span")
	}
	if n, _ := attrOf(batch, "ratekit.batch.size"); n.AsInt64() != 4 {
		t.Fatalf("ratekit.batch.size = %v", n.Emit())
	}
	h := r.hists(t, "ratekit.store.duration")
	if got := h[key("ratekit.store", "memory", "ratekit.store.operation", "run_scripts")]; got.count != 1 {
		t.Fatalf("batch durations %+v, want 1 run_scripts point", h)
	}
}

// TestStoreWrapper: the wrapper names its store ("other" for one without
// a name), says whether it is one node as the store does, and is never a
// core.LocalStore, so that limiters on it run every call through it (the
// calls TestStoreCalls counts); it refuses a store that cannot run
// scripts, so that no limiter is built on it.
func TestStoreWrapper(t *testing.T) {
	r := newRig(t)
	mem, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	s, _ := r.tel.Store(mem)
	if s.StoreName() != "memory" || s.Unwrap() != core.ScriptRunner(mem) {
		t.Fatalf("around the memory store: name %q, Unwrap %v", s.StoreName(), s.Unwrap())
	}
	if _, ok := core.ScriptRunner(s).(core.LocalStore); ok {
		t.Fatal("the wrapper is a core.LocalStore: limiters on it would decide without a call it sees")
	}
	f, _ := r.tel.Store(failing{})
	if f.StoreName() != "failing" || f.SingleNode() {
		t.Fatal("around a store that is not one node")
	}
	anon, _ := r.tel.Store(struct{ core.ScriptRunner }{mem})
	if anon.StoreName() != "other" {
		t.Fatalf("around a store without a name: %q", anon.StoreName())
	}
	for _, one := range []bool{false, true} {
		o, _ := r.tel.Store(&oneNode{batching: &batching{Store: mem}, one: one})
		if o.SingleNode() != one {
			t.Fatalf("around a store whose SingleNode is %v: %v", one, o.SingleNode())
		}
	}
	var zero memory.Store
	var nilStore *memory.Store
	for _, next := range []core.ScriptRunner{nil, nilStore, &zero} {
		if _, err := r.tel.Store(next); !errors.Is(err, core.ErrInvalidConfig) {
			t.Fatalf("Store(%#v): %v", next, err)
		}
	}
}

// TestLimiterConfig: a name is printable ASCII of 1 to 64 bytes, and a
// nil limiter is refused.
func TestLimiterConfig(t *testing.T) {
	r := newRig(t)
	lim, _ := r.bucket(t, 1)
	for _, name := range []string{"", strings.Repeat("x", 65), "a\nb", "é"} {
		if _, err := r.tel.Limiter(name, lim); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	if _, err := r.tel.Limiter(strings.Repeat("x", 64), lim); err != nil {
		t.Errorf("64 bytes: %v", err)
	}
	var nilLimiter *ratekit.Limiter
	for _, next := range []core.Limiter{nil, nilLimiter, &ratekit.Limiter{}} {
		if _, err := r.tel.Limiter("api", next); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("Limiter(%#v): %v", next, err)
		}
	}
	// A limiter that is not a ratekit one is "other".
	other, err := r.tel.Limiter("x", plain{})
	if err != nil || other.Algorithm() != "other" || other.StoreName() != "other" {
		t.Fatalf("a plain limiter: %q %q %v", other.Algorithm(), other.StoreName(), err)
	}
}

// plain is a core.Limiter that is not a ratekit limiter.
type plain struct{}

func (plain) Refund(context.Context, string, int64) (core.Decision, error) {
	return core.Decision{}, nil
}
func (plain) MaxCost() int64 { return math.MaxInt64 }
func (plain) Decide(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, nil
}

func (plain) Allow(context.Context, string) (core.Decision, error) { return core.Decision{}, nil }
func (plain) AllowN(context.Context, string, int64) (core.Decision, error) {
	return core.Decision{}, nil
}
func (plain) Peek(context.Context, string) (core.Decision, error) { return core.Decision{}, nil }
func (plain) Reset(context.Context, string) error                 { return nil }

func TestErrorType(t *testing.T) {
	for _, tt := range []struct {
		give error
		want string
	}{
		{fmt.Errorf("%w: %w", core.ErrStore, context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("%w: %w", core.ErrStore, context.Canceled), "canceled"},
		{fmt.Errorf("%w: %w", core.ErrStore, core.ErrUnexpectedReply), "unexpected_reply"},
		{fmt.Errorf("%w: at key", core.ErrCorruptState), "corrupt_state"},
		{core.ErrInvalidKey, "invalid_key"},
		{core.ErrInvalidCost, "invalid_cost"},
		{core.ErrInvalidTime, "invalid_time"},
		{core.ErrInvalidConfig, "invalid_config"},
		{fmt.Errorf("%w: connection refused", core.ErrStore), "store"},
		{errors.New("something else"), "_OTHER"},
	} {
		if got := otelratekit.ErrorType(tt.give); got != tt.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
