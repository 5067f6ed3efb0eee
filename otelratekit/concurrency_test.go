package otelratekit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
)

// TestConcurrency: acquires are decisions, the leases held are counted
// up and down, and each call is a span.
func TestConcurrency(t *testing.T) {
	r := newRig(t)
	mem, clock := newMemory(t)
	store, err := r.tel.Store(mem)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := concurrency.New(store, concurrency.Config{Limit: 2, TTL: time.Minute, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := r.tel.Concurrency("reports", cl)
	if err != nil {
		t.Fatal(err)
	}
	if reports.Name() != "reports" || reports.Algorithm() != "concurrency" || reports.StoreName() != "memory" || reports.Unwrap() != cl || reports.Limit() != 2 {
		t.Fatalf("%q %q %q", reports.Name(), reports.Algorithm(), reports.StoreName())
	}
	ctx := context.Background()
	a, d1, err1 := reports.Acquire(ctx, userKey)
	_, d2, err2 := reports.Acquire(ctx, userKey)
	none, d3, err3 := reports.Acquire(ctx, userKey)
	if err1 != nil || err2 != nil || err3 != nil || !d1.Allowed || !d2.Allowed || d3.Allowed {
		t.Fatalf("acquires: %v %v %v, %v %v %v", d1.Allowed, d2.Allowed, d3.Allowed, err1, err2, err3)
	}
	base := []string{"ratekit.limiter.name", "reports", "ratekit.algorithm", "concurrency", "ratekit.store", "memory"}
	if got := r.ints(t, "ratekit.concurrency.leases"); len(got) != 1 || got[key(base...)] != 2 {
		t.Fatalf("ratekit.concurrency.leases = %v, want 2", got)
	}
	if live, err := reports.Release(ctx, a); !live || err != nil {
		t.Fatalf("release: %v, %v", live, err)
	}
	if _, err := reports.Release(ctx, none); !errors.Is(err, core.ErrInvalidLease) {
		t.Fatalf("releasing a denial's lease: %v", err)
	}
	// A lease of the right ID on a bad key is malformed too: never
	// counted, never uncounted.
	badKey := a
	badKey.Key = ""
	if _, err := reports.Release(ctx, badKey); !errors.Is(err, core.ErrInvalidLease) {
		t.Fatalf("releasing a lease with an empty key: %v", err)
	}
	if got := r.ints(t, "ratekit.concurrency.leases"); got[key(base...)] != 1 {
		t.Fatalf("ratekit.concurrency.leases = %v, want 1 after a release (and none for the malformed leases)", got)
	}
	want := map[string]int64{
		key(append(base, "ratekit.outcome", "allowed")...): 2,
		key(append(base, "ratekit.outcome", "denied")...):  1,
	}
	if got := r.ints(t, "ratekit.decisions"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ratekit.decisions = %v, want %v", got, want)
	}
	spans := r.spans.Ended()
	rel := spans[len(spans)-3] // the live release, before the invalid ones
	if rel.Name() != "ratekit.Release" {
		t.Fatalf("span %q, want ratekit.Release", rel.Name())
	}
	if live, _ := attrOf(rel, "ratekit.lease.live"); !live.AsBool() {
		t.Fatal("the release's span does not say the lease was live")
	}
	if et, _ := attrOf(spans[len(spans)-1], "error.type"); et.AsString() != "invalid_lease" {
		t.Fatalf("invalid release: error.type %q", et.Emit())
	}
	for _, v := range r.everyAttributeValue(t) {
		if v == userKey || v == a.ID {
			t.Fatalf("an attribute holds the key or a lease id: %q", v)
		}
	}
	if _, err := r.tel.Concurrency("reports", nil); !errors.Is(err, core.ErrInvalidConfig) {
		t.Fatalf("a nil limiter: %v", err)
	}
	if _, err := r.tel.Concurrency("reports", &concurrency.Limiter{}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Fatalf("a zero limiter: %v", err)
	}
	// A malformed ID never reaches a span: it is most of a secret.
	upper := a
	upper.ID = strings.ToUpper(a.ID)
	reports.Release(ctx, upper)
	for _, s := range r.spans.Ended() {
		if strings.Contains(strings.ToLower(fmt.Sprint(s.Status(), s.Events())), a.ID[:16]) {
			t.Fatalf("span %q holds the lease's ID: %v %v", s.Name(), s.Status(), s.Events())
		}
	}
	if _, err := r.tel.Concurrency("", cl); !errors.Is(err, core.ErrInvalidConfig) {
		t.Fatalf("an empty name: %v", err)
	}
}
