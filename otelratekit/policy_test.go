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
)

// TestPolicy: a policy's requests are decisions with the outcome the
// caller got (shadow when only a shadow limit would have denied, blocked
// under a penalty), and each limit's part is counted by its name.
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
	api, err := r.tel.Policy("api", p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var got []string
	for i := 0; i < 5; i++ {
		d, err := api.Allow(ctx, userKey)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%v %v %v %v", d.Allowed, d.Denied, d.ShadowDenied, d.Blocked))
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
	if _, err := r.tel.Policy("api", &ratekit.Policy{}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("a zero Policy: %v", err)
	}
	if _, err := r.tel.Policy("api", nil); !errors.Is(err, core.ErrInvalidConfig) {
		t.Fatalf("a nil policy: %v", err)
	}
}
