package otelratekit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
)

// limitNames returns the names of d's limits that denied: the shadow
// ones, or the enforced ones.
func limitNames(d core.Decision, shadow bool) []string {
	out := []string{}
	for _, l := range d.Limits {
		if l.Shadow == shadow && !l.Allowed {
			out = append(out, l.Name)
		}
	}
	return out
}

// TestPolicy: a policy's requests are decisions with the outcome the
// caller got (shadow when only a shadow limit would have denied, blocked
// under a penalty), and each limit's part is counted by its name and
// algorithm.
func TestPolicy(t *testing.T) {
	r := newRig(t)
	mem, clock := newMemory(t)
	store, _ := r.tel.Store(mem)
	burst := tokenBucket(t, store, clock, 3)
	daily, err := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: 24 * time.Hour, Clock: clock, Prefix: "daily:"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "burst", Limiter: burst, Penalty: time.Hour},
		{Name: "daily", Limiter: daily, Shadow: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := r.tel.Limiter("api", p)
	if err != nil {
		t.Fatal(err)
	}
	if api.Algorithm() != "policy" || api.StoreName() != "memory" || api.MaxCost() != p.MaxCost() {
		t.Fatalf("a policy: %q on %q, MaxCost %d", api.Algorithm(), api.StoreName(), api.MaxCost())
	}
	ctx := context.Background()
	var got []string
	for i := 0; i < 5; i++ {
		d, err := api.Allow(ctx, userKey)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%v %v %v %v", d.Allowed, limitNames(d, false), limitNames(d, true), d.Blocked))
	}
	if fmt.Sprint(got) != "[true [] [] false true [] [daily] false true [] [daily] false false [burst] [daily] true false [burst] [daily] true]" {
		t.Fatalf("decisions %q", got)
	}
	base := []string{"ratekit.limiter.name", "api", "ratekit.algorithm", "policy", "ratekit.store", "memory"}
	want := map[string]int64{
		key(append(base, "ratekit.outcome", "allowed")...):                           1,
		key(append(base, "ratekit.outcome", "shadow")...):                            2,
		key(append(base, "ratekit.outcome", "denied", "ratekit.blocked", "true")...): 2,
	}
	if got := r.ints(t, "ratekit.decisions"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ratekit.decisions =\n%v\nwant\n%v", got, want)
	}
	limit := func(name, algorithm, outcome string) string {
		return key("ratekit.limiter.name", "api", "ratekit.limit.name", name, "ratekit.algorithm", algorithm, "ratekit.store", "memory", "ratekit.outcome", outcome)
	}
	wantLimits := map[string]int64{
		limit("burst", "tokenbucket", "allowed"): 3,
		limit("burst", "tokenbucket", "denied"):  2,
		limit("daily", "fixedwindow", "allowed"): 1,
		limit("daily", "fixedwindow", "shadow"):  4,
	}
	if got := r.ints(t, "ratekit.policy.limit.decisions"); fmt.Sprint(got) != fmt.Sprint(wantLimits) {
		t.Fatalf("ratekit.policy.limit.decisions =\n%v\nwant\n%v", got, wantLimits)
	}
	var outcomes []string
	for _, s := range r.spans.Ended() {
		if s.Name() == "ratekit.AllowN" {
			o, _ := attrOf(s, "ratekit.outcome")
			outcomes = append(outcomes, o.AsString())
		}
	}
	if fmt.Sprint(outcomes) != "[allowed shadow shadow denied denied]" {
		t.Fatalf("span outcomes %v", outcomes)
	}
	for _, v := range r.everyAttributeValue(t) {
		if v == userKey {
			t.Fatal("an attribute holds the key")
		}
	}
	var nilPolicy *ratekit.Limiter
	for _, next := range []core.Limiter{&ratekit.Limiter{}, nilPolicy} {
		if _, err := r.tel.Limiter("api", next); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("a policy not built by NewPolicy (%#v): %v", next, err)
		}
	}
}

// TestPolicyCountsTheTruth: a limit's "allowed" is what it counted. With
// limits "second" and "minute", 8 requests of which "second" denies 3:
// "minute" counted 5 (its Peek says so), and its other 3 parts are
// not_counted, not allowed. A batch is counted alike, and so is a policy
// found behind a wrapper.
func TestPolicyCountsTheTruth(t *testing.T) {
	r := newRig(t)
	mem, clock := newMemory(t)
	second, err := fixedwindow.New(mem, fixedwindow.Config{Limit: 5, Window: time.Second, Clock: clock, Prefix: "s:"})
	if err != nil {
		t.Fatal(err)
	}
	minute, err := fixedwindow.New(mem, fixedwindow.Config{Limit: 100, Window: time.Minute, Clock: clock, Prefix: "m:"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "second", Limiter: second}, {Name: "minute", Limiter: minute}}})
	if err != nil {
		t.Fatal(err)
	}
	// Behind a deny cache: the policy's limits are found through it.
	cached, err := denycache.New(p, denycache.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	api, err := r.tel.Limiter("api", cached)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	allowed := 0
	for i := 0; i < 8; i++ {
		d, err := api.Allow(ctx, userKey)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("%d of 8 allowed, want 5", allowed)
	}
	limit := func(name, outcome string) string {
		return key("ratekit.limiter.name", "api", "ratekit.limit.name", name, "ratekit.algorithm", "fixedwindow", "ratekit.store", "memory", "ratekit.outcome", outcome)
	}
	want := map[string]int64{
		limit("second", "allowed"):     5,
		limit("second", "denied"):      3,
		limit("minute", "allowed"):     5,
		limit("minute", "not_counted"): 3,
	}
	if got := r.ints(t, "ratekit.policy.limit.decisions"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ratekit.policy.limit.decisions =\n%v\nwant\n%v", got, want)
	}
	d, err := p.Peek(ctx, userKey)
	if err != nil {
		t.Fatal(err)
	}
	if counted := d.Limits[1].Limit - d.Limits[1].Remaining; counted != want[limit("minute", "allowed")] {
		t.Fatalf("minute counted %d, its metric says %d", counted, want[limit("minute", "allowed")])
	}

	// A batch in the next second: 2 allowed, counted by both; 1 denied by
	// "second" and not counted by "minute".
	clock.Advance(time.Second)
	res := api.AllowMany(ctx, []core.Request{{Key: userKey, N: 2}, {Key: userKey, N: 3}, {Key: userKey, N: 1}})
	for i, want := range []bool{true, true, false} {
		if res[i].Err != nil || res[i].Decision.Allowed != want {
			t.Fatalf("batch request %d: %+v", i, res[i])
		}
	}
	want[limit("second", "allowed")] += 2
	want[limit("second", "denied")]++
	want[limit("minute", "allowed")] += 2
	want[limit("minute", "not_counted")]++
	if got := r.ints(t, "ratekit.policy.limit.decisions"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a batch, ratekit.policy.limit.decisions =\n%v\nwant\n%v", got, want)
	}
	base := []string{"ratekit.limiter.name", "api", "ratekit.algorithm", "policy", "ratekit.store", "memory"}
	wantDecisions := map[string]int64{
		key(append(base, "ratekit.outcome", "allowed")...): 7,
		key(append(base, "ratekit.outcome", "denied")...):  4,
	}
	if got := r.ints(t, "ratekit.decisions"); fmt.Sprint(got) != fmt.Sprint(wantDecisions) {
		t.Fatalf("ratekit.decisions =\n%v\nwant\n%v", got, wantDecisions)
	}
}

// A policy's Refund goes to the policy, in a span, and is not a
// decision.
func TestPolicyRefund(t *testing.T) {
	r := newRig(t)
	mem, clock := newMemory(t)
	w, err := fixedwindow.New(mem, fixedwindow.Config{Limit: 2, Window: time.Minute, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "minute", Limiter: w}}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := r.tel.Limiter("api", p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	api.Allow(ctx, "k")
	d, err := api.Refund(ctx, "k", 1)
	if err != nil || d.Remaining != 2 {
		t.Fatalf("Refund: %+v, %v; want 2 remaining", d, err)
	}
	if c, _ := attrOf(spanNamed(t, r.spans.Ended(), "ratekit.Refund"), "ratekit.cost"); c.AsInt64() != 1 {
		t.Fatalf("the Refund span's cost: %v", c.Emit())
	}
	if _, err := api.Refund(ctx, "k", 0); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("Refund of 0: %v", err)
	}
	if got := r.ints(t, "ratekit.decisions"); len(got) != 1 {
		t.Fatalf("ratekit.decisions = %v, want the one AllowN", got)
	}
}
