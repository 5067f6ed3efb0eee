package rules_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ratekit/ratekit/rules"
)

const atomicConfig = `
domain: d
descriptors:
  - key: ip
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: bucket
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: tokenbucket}
  - key: zero
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: free
    rate_limit: {unlimited: true}
`

// With Options.Atomic a request's descriptors count by all or by none.
func TestAtomicAllOrNothing(t *testing.T) {
	r, _ := newRules(t, atomicConfig, rules.Options{Atomic: true})
	for i := range 2 {
		res := decide(t, r, "d", 1, desc("ip=1"), desc("user=ann"), desc("bucket=b"))
		if !res.Allowed || res.Statuses[0].Remaining != uint32(2-i) || res.Statuses[1].Remaining != uint32(1-i) || res.Statuses[2].Remaining != uint32(4-i) {
			t.Fatalf("request %d: %+v", i, res)
		}
	}
	// user=ann is full: the request is denied, and ip=1 counts nothing.
	res := decide(t, r, "d", 1, desc("ip=1"), desc("user=ann"))
	if res.Allowed || res.Statuses[0].Code != rules.OK || res.Statuses[1].Code != rules.OverLimit || res.Statuses[0].Remaining != 1 {
		t.Fatalf("denied by user: %+v", res)
	}
	// ip=1 is one counter, wherever it stands in a request.
	res = decide(t, r, "d", 1, desc("user=bob"), desc("ip=1"))
	if !res.Allowed || res.Statuses[1].Remaining != 0 || res.Statuses[0].Remaining != 1 {
		t.Fatalf("ip=1 second: %+v", res)
	}
	res = decide(t, r, "d", 1, desc("ip=1"))
	if res.Allowed || res.Statuses[0].Code != rules.OverLimit {
		t.Fatalf("ip=1 alone, full: %+v", res)
	}
}

func TestAtomicSpecialDescriptors(t *testing.T) {
	r, _ := newRules(t, atomicConfig, rules.Options{Atomic: true})
	// A limit of 0 denies the request: nothing counts.
	res := decide(t, r, "d", 1, desc("ip=2"), desc("zero=z"))
	if res.Allowed || res.Statuses[1].Code != rules.OverLimit || res.Statuses[0].Code != rules.OK || res.Statuses[0].Remaining != 3 {
		t.Fatalf("with a limit of 0: %+v", res)
	}
	// A shadow descriptor never denies; unlimited and unmatched ones are left out.
	for i := range 3 {
		res = decide(t, r, "d", 1, desc("ip=2"), desc("shadow=s"), desc("free=f"), desc("none=n"))
		if !res.Allowed || res.Statuses[0].Remaining != uint32(2-i) || !res.Statuses[2].Unlimited || res.Statuses[3].Checked {
			t.Fatalf("request %d with shadow: %+v", i, res)
		}
		if s := res.Statuses[1]; i > 0 && (!s.Shadow || s.Code != rules.OK) {
			t.Fatalf("request %d, the shadow descriptor: %+v", i, s)
		}
	}
	// A descriptor given twice is one counter, counted once.
	res = decide(t, r, "d", 1, desc("user=cy"), desc("user=cy"))
	if !res.Allowed || res.Statuses[0].Remaining != 1 || res.Statuses[1].Remaining != 1 {
		t.Fatalf("a descriptor twice: %+v", res)
	}
	// A cost above a limit is over it; nothing counts.
	res = decide(t, r, "d", 3, desc("ip=3"), desc("user=dee"))
	if res.Allowed || res.Statuses[1].Code != rules.OverLimit || res.Statuses[0].Remaining != 3 {
		t.Fatalf("cost 3 over user's 2: %+v", res)
	}
	// Every descriptor has one cost.
	two := int64(2)
	d := desc("user=eve")
	d.Hits = &two
	if _, err := r.Decide(context.Background(), "d", []rules.Descriptor{desc("ip=4"), d}, 1); !errors.Is(err, rules.ErrRequest) {
		t.Errorf("two costs: %v, want ErrRequest", err)
	}
}

func TestAtomicRefusesPenalties(t *testing.T) {
	cfg, err := rules.Parse([]rules.File{{Name: "p.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, penalty: 1m}\n")}}, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := newRules(t, atomicConfig, rules.Options{Atomic: true})
	if err := r.Set(cfg); !errors.Is(err, rules.ErrConfig) {
		t.Errorf("Set of a rule with a penalty under Atomic: %v, want ErrConfig", err)
	}
}

// Policies built by concurrent decisions and reloads share the
// limiters safely (run with -race).
func TestAtomicConcurrentShapes(t *testing.T) {
	r, _ := newRules(t, atomicConfig+alsoConfig[len("\ndomain: x\ndescriptors:"):], rules.Options{Atomic: true})
	cfg := r.Config()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			shapes := [][]rules.Descriptor{
				{desc("ip=a")}, {desc("user=b"), desc("bucket=c")}, {desc("api=d"), desc("ip=e")}, {desc("bucket=f"), desc("api=g"), desc("user=h")},
			}
			for i := range 200 {
				if _, err := r.Decide(context.Background(), "d", shapes[(g+i)%len(shapes)], 1); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					if err := r.Set(cfg); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
