package rules_test

import (
	"context"
	"testing"

	"github.com/ratekit/ratekit/rules"
)

// A decision with a configuration loaded once and a Result reused
// allocates nothing on the memory store: matching, keys, parameters.
func TestDecideToDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r, _ := newRules(t, basic+`
  - key: tb
    rate_limit: {unit: second, requests_per_unit: 1000000, algorithm: tokenbucket, burst: 1000000}
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 1000000}
  - key: detailed
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 1000000}
`, rules.Options{})
	ds := []rules.Descriptor{
		desc("key1=value1", "subkey1=a"), desc("key2=b"), desc("key6=c"), desc("none=d"), desc("tb=e"), desc("files=files/x"), desc("detailed=y"),
	}
	over := desc("key2=b")
	over.Limit = &rules.Override{RequestsPerUnit: 1000000, Unit: rules.Hour}
	ds = append(ds, over)
	ctx := context.Background()
	var res rules.Result
	if err := r.DecideTo(ctx, &res, "test-domain", ds, 1); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := r.DecideTo(ctx, &res, "test-domain", ds, 1); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("DecideTo allocates %v times per call, want 0", allocs)
	}
}

// Under Options.Atomic a decision allocates one thing: the policy
// decision's Limits, one per descriptor's limit.
func TestAtomicDecideToAllocatesOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r, _ := newRules(t, `
domain: d
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: b
    rate_limit: {unit: second, requests_per_unit: 1000000000, algorithm: gcra}
`, rules.Options{Atomic: true})
	ds := []rules.Descriptor{desc("a=1"), desc("b=2")}
	ctx := context.Background()
	var res rules.Result
	if err := r.DecideTo(ctx, &res, "d", ds, 1); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if err := r.DecideTo(ctx, &res, "d", ds, 1); err != nil {
			t.Fatal(err)
		}
	}); allocs > 1 {
		t.Errorf("DecideTo under Atomic allocates %v times per call, want at most 1", allocs)
	}
}

// A descriptor whose rule has several limits (also) or a penalty is
// decided by a policy, whose decision's Limits is one allocation, as
// DecideTo's doc says: one per such descriptor, none for the others.
func TestPolicyRuleDecideToAllocatesOncePerDescriptor(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r, _ := newRules(t, `
domain: d
descriptors:
  - key: plain
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: also
    rate_limit:
      unit: second
      requests_per_unit: 1000000000
      also: [{unit: hour, requests_per_unit: 1000000000}]
  - key: penalty
    rate_limit: {unit: second, requests_per_unit: 1000000000, penalty: 1m}
`, rules.Options{})
	ctx := context.Background()
	for _, c := range []struct {
		ds   []rules.Descriptor
		want float64
	}{
		{[]rules.Descriptor{desc("plain=1")}, 0},
		{[]rules.Descriptor{desc("plain=1"), desc("also=1")}, 1},
		{[]rules.Descriptor{desc("also=1"), desc("penalty=1")}, 2},
	} {
		var res rules.Result
		if err := r.DecideTo(ctx, &res, "d", c.ds, 1); err != nil {
			t.Fatal(err)
		}
		if allocs := testing.AllocsPerRun(100, func() {
			if err := r.DecideTo(ctx, &res, "d", c.ds, 1); err != nil {
				t.Fatal(err)
			}
		}); allocs != c.want {
			t.Errorf("%d descriptors: %v allocations per call, want %v", len(c.ds), allocs, c.want)
		}
	}
}
