package rules_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// start is a time at the start of a minute, an hour and a day (UTC).
var start = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// newRules returns Rules over a memory store driven by a fake clock,
// with the configuration in yamlText.
func newRules(t *testing.T, yamlText string, opts rules.Options) (*rules.Rules, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(start)
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg, err := rules.Parse([]rules.File{{Name: "test.yaml", Data: []byte(yamlText)}}, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Clock = clock
	r, err := rules.New(store, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, clock
}

func desc(kv ...string) rules.Descriptor { return rules.Descriptor{Entries: entries(kv...)} }

func decide(t *testing.T, r *rules.Rules, domain string, hits int64, ds ...rules.Descriptor) rules.Result {
	t.Helper()
	res, err := r.Decide(context.Background(), domain, ds, hits)
	if err != nil {
		t.Fatalf("Decide(%s, %v, %d): %v", domain, ds, hits, err)
	}
	if len(res.Statuses) != len(ds) {
		t.Fatalf("Decide returned %d statuses for %d descriptors", len(res.Statuses), len(ds))
	}
	return res
}

const another = `
domain: another
descriptors:
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: key3
    rate_limit:
      unit: hour
      requests_per_unit: 10
  - key: key4
    rate_limit:
      unit: day
      requests_per_unit: 20
`

// envoyproxy/ratelimit's integration case 3: [[key2=<v>]] 25 times.
func TestDecideOneDescriptor(t *testing.T) {
	r, _ := newRules(t, another, rules.Options{})
	for i := range 25 {
		res := decide(t, r, "another", 1, desc("key2=value"))
		s := res.Statuses[0]
		if i < 20 {
			if !res.Allowed || s.Code != rules.OK || s.Remaining != uint32(19-i) || !s.Checked || s.RequestsPerUnit != 20 || s.Unit != rules.Minute {
				t.Fatalf("request %d: %v %+v", i, res.Allowed, s)
			}
			if s.ResetAfter != time.Minute {
				t.Fatalf("request %d: ResetAfter %v, want 1m", i, s.ResetAfter)
			}
		} else if res.Allowed || s.Code != rules.OverLimit || s.Remaining != 0 {
			t.Fatalf("request %d: %v %+v", i, res.Allowed, s)
		}
	}
	// Another value is another counter (the rule counts each value).
	if s := decide(t, r, "another", 1, desc("key2=other")).Statuses[0]; s.Remaining != 19 {
		t.Errorf("another value: Remaining %d, want 19", s.Remaining)
	}
}

// envoyproxy/ratelimit's integration case 4, but for what a denial
// counts: each descriptor is decided on its own, and one over its limit
// counts nothing (envoy's counts grow past the limit).
func TestDecideTwoDescriptors(t *testing.T) {
	r, _ := newRules(t, another, rules.Options{})
	for i := range 15 {
		res := decide(t, r, "another", 1, desc("key2=v"), desc("key3=v"))
		s1, s2 := res.Statuses[0], res.Statuses[1]
		if s1.Code != rules.OK || s1.Remaining != uint32(19-i) || s1.Unit != rules.Minute {
			t.Fatalf("request %d, key2: %+v", i, s1)
		}
		if i < 10 {
			if !res.Allowed || s2.Code != rules.OK || s2.Remaining != uint32(9-i) || s2.Unit != rules.Hour {
				t.Fatalf("request %d, key3: %+v", i, s2)
			}
		} else if res.Allowed || s2.Code != rules.OverLimit || s2.Remaining != 0 {
			t.Fatalf("request %d, key3: %+v", i, s2)
		}
	}
}

// envoyproxy/ratelimit's integration case 5: the reset shrinks.
func TestDecideResetShrinks(t *testing.T) {
	r, clock := newRules(t, another, rules.Options{})
	clock.Advance(5 * time.Hour)
	first := decide(t, r, "another", 1, desc("key4=durTest")).Statuses[0].ResetAfter
	clock.Advance(2 * time.Second)
	second := decide(t, r, "another", 1, desc("key4=durTest")).Statuses[0].ResetAfter
	if first != 19*time.Hour || second != first-2*time.Second {
		t.Errorf("ResetAfter %v then %v, want 19h then 2s less", first, second)
	}
}

// Windows are aligned on the epoch, as envoy's: a request late in a
// minute sees its window end at the next whole minute.
func TestDecideWindowsAligned(t *testing.T) {
	r, clock := newRules(t, another, rules.Options{})
	clock.Advance(50 * time.Second)
	for range 20 {
		decide(t, r, "another", 1, desc("key2=a"))
	}
	s := decide(t, r, "another", 1, desc("key2=a")).Statuses[0]
	if s.Code != rules.OverLimit || s.ResetAfter != 10*time.Second {
		t.Fatalf("21st request: %+v, want OverLimit, ResetAfter 10s", s)
	}
	clock.Advance(10 * time.Second)
	if s := decide(t, r, "another", 1, desc("key2=a")).Statuses[0]; s.Code != rules.OK || s.Remaining != 19 {
		t.Fatalf("in the next minute: %+v", s)
	}
}

func TestDecideNoLimit(t *testing.T) {
	r, _ := newRules(t, basic, rules.Options{})
	res := decide(t, r, "foo", 1, desc("hello=world"))
	if s := res.Statuses[0]; !res.Allowed || s.Code != rules.OK || !s.DomainNotFound || s.Checked || s.Remaining != 0 || s.ResetAfter != 0 {
		t.Errorf("unknown domain: %+v", s)
	}
	for _, d := range []rules.Descriptor{desc("key2=value3"), desc("nothing=here"), desc("key1=value1", "subkey1=x", "deeper=y")} {
		res := decide(t, r, "test-domain", 1, d)
		if s := res.Statuses[0]; !res.Allowed || s.Code != rules.OK || s.Rule != nil || s.Checked || s.DomainNotFound {
			t.Errorf("%v: %+v", d, s)
		}
	}
	res = decide(t, r, "test-domain", 1, desc("key6=x"))
	if s := res.Statuses[0]; s.Code != rules.OK || !s.Unlimited || s.Checked || s.Remaining != math.MaxUint32 || s.Rule == nil {
		t.Errorf("unlimited: %+v", s)
	}
}

var basic = func() string {
	return `
domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: key2
    value: value3
  - key: key6
    rate_limit:
      unlimited: true
  - key: zero
    rate_limit:
      unit: minute
      requests_per_unit: 0
  - key: shadow
    shadow_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: quota
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: quota2
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 2
`
}()

func TestDecideZeroBlocksAll(t *testing.T) {
	r, clock := newRules(t, basic, rules.Options{})
	clock.Advance(15 * time.Second)
	res := decide(t, r, "test-domain", 1, desc("zero=x"))
	if s := res.Statuses[0]; res.Allowed || s.Code != rules.OverLimit || !s.Checked || s.RequestsPerUnit != 0 || s.ResetAfter != 45*time.Second {
		t.Errorf("requests_per_unit 0: %v %+v", res.Allowed, s)
	}
}

func TestDecideShadowMode(t *testing.T) {
	r, _ := newRules(t, basic, rules.Options{})
	decide(t, r, "test-domain", 1, desc("shadow=x"))
	res := decide(t, r, "test-domain", 1, desc("shadow=x"))
	if s := res.Statuses[0]; !res.Allowed || s.Code != rules.OK || !s.Shadow || s.Decision.Allowed || s.Remaining != 0 {
		t.Errorf("shadow rule over its limit: %v %+v", res.Allowed, s)
	}
	// Global shadow: the verdict is OK, the status says OVER_LIMIT.
	r, _ = newRules(t, basic, rules.Options{ShadowMode: true})
	decide(t, r, "test-domain", 1, desc("key2=a"), desc("zero=a"))
	res = decide(t, r, "test-domain", 1, desc("zero=a"))
	if !res.Allowed || res.Statuses[0].Code != rules.OverLimit {
		t.Errorf("global shadow: %v %+v", res.Allowed, res.Statuses[0])
	}
}

// Quota mode (envoyproxy/ratelimit since PR #1059): over the limit when a
// descriptor not in quota mode is, or when every quota descriptor is.
func TestDecideQuotaMode(t *testing.T) {
	r, _ := newRules(t, basic, rules.Options{})
	decide(t, r, "test-domain", 1, desc("quota=a"))
	res := decide(t, r, "test-domain", 1, desc("quota=a"), desc("quota2=a"))
	if !res.Allowed || res.Statuses[0].Code != rules.OverLimit || res.Statuses[1].Code != rules.OK {
		t.Errorf("one quota descriptor over: %v %+v", res.Allowed, res.Statuses)
	}
	res = decide(t, r, "test-domain", 1, desc("quota=a"), desc("quota2=a"))
	if !res.Allowed || res.Statuses[1].Code != rules.OK || res.Statuses[1].Remaining != 0 {
		t.Errorf("quota2's last: %v %+v", res.Allowed, res.Statuses)
	}
	res = decide(t, r, "test-domain", 1, desc("quota=a"), desc("quota2=a"))
	if res.Allowed {
		t.Errorf("every quota descriptor over: %v %+v", res.Allowed, res.Statuses)
	}
	res = decide(t, r, "test-domain", 1, desc("quota=a"), desc("key2=q"))
	if res.Allowed {
		t.Errorf("the only quota descriptor over: allowed")
	}
}

func TestDecideHits(t *testing.T) {
	r, _ := newRules(t, basic, rules.Options{})
	res := decide(t, r, "test-domain", 7, desc("key2=h"))
	if s := res.Statuses[0]; s.Code != rules.OK || s.Remaining != 13 {
		t.Errorf("hits 7: %+v", s)
	}
	// A cost of 0 asks without counting.
	if s := decide(t, r, "test-domain", 0, desc("key2=h")).Statuses[0]; s.Code != rules.OK || s.Remaining != 13 {
		t.Errorf("hits 0: %+v", s)
	}
	// A cost above the limit is over it, and counts nothing.
	if s := decide(t, r, "test-domain", 21, desc("key2=h")).Statuses[0]; s.Code != rules.OverLimit || s.Remaining != 13 {
		t.Errorf("hits 21: %+v", s)
	}
	// A descriptor's own hits beat the request's.
	three := int64(3)
	d := desc("key2=h")
	d.Hits = &three
	if s := decide(t, r, "test-domain", 1, d).Statuses[0]; s.Remaining != 10 {
		t.Errorf("descriptor hits 3: %+v", s)
	}
	// 13 more pass; a request of 14 is over: 10 left.
	if s := decide(t, r, "test-domain", 11, desc("key2=h")).Statuses[0]; s.Code != rules.OverLimit || s.Remaining != 10 {
		t.Errorf("hits 11 of 10 left: %+v", s)
	}
	for _, bad := range []struct {
		domain string
		ds     []rules.Descriptor
		hits   int64
	}{
		{"test-domain", []rules.Descriptor{desc("key2=h")}, -1},
		{"", []rules.Descriptor{desc("key2=h")}, 1},
		{"test-domain", nil, 1},
		{"test-domain", []rules.Descriptor{desc("=h")}, 1},
	} {
		if _, err := r.Decide(context.Background(), bad.domain, bad.ds, bad.hits); !errors.Is(err, rules.ErrRequest) {
			t.Errorf("Decide(%q, %v, %d): %v, want ErrRequest", bad.domain, bad.ds, bad.hits, err)
		}
	}
}

// The request's own limit applies whatever the rules say, at the key a
// rule would count.
func TestDecideOverride(t *testing.T) {
	r, _ := newRules(t, basic, rules.Options{})
	d := desc("key1=value1", "subkey1=something")
	d.Limit = &rules.Override{RequestsPerUnit: 3, Unit: rules.Day}
	for i := range 4 {
		res := decide(t, r, "test-domain", 1, d)
		s := res.Statuses[0]
		if !s.Override || !s.Checked || s.RequestsPerUnit != 3 || s.Unit != rules.Day || s.Rule != nil || s.StatsKey != "test-domain.key1_value1.subkey1_something" || s.Hits != 1 {
			t.Fatalf("override: %+v", s)
		}
		if (i < 3) != (s.Code == rules.OK) || (i < 3 && s.Remaining != uint32(2-i)) {
			t.Fatalf("override, request %d: %+v", i, s)
		}
	}
	// An override of a domain not configured is no limit.
	if s := decide(t, r, "nowhere", 1, d).Statuses[0]; s.Checked || !s.DomainNotFound {
		t.Errorf("override in an unknown domain: %+v", s)
	}
	d.Limit = &rules.Override{RequestsPerUnit: 3}
	if _, err := r.Decide(context.Background(), "test-domain", []rules.Descriptor{d}, 1); err == nil {
		t.Error("an override with no unit decided")
	}
}

const replacesConfig = `
domain: rl
descriptors:
  - key: foo
    rate_limit:
      unit: minute
      requests_per_unit: 1
      name: foo_limit
  - key: bar
    rate_limit:
      unit: minute
      requests_per_unit: 2
      replaces:
        - name: foo_limit
  - key: baz
    rate_limit:
      unlimited: true
      name: baz
      replaces:
        - name: foo_limit
`

// A rule named in another matched rule's replaces is neither checked nor
// counted (envoyproxy/ratelimit's replaces.sh).
func TestDecideReplaces(t *testing.T) {
	r, _ := newRules(t, replacesConfig, rules.Options{})
	for i := range 3 {
		res := decide(t, r, "rl", 1, desc("foo=x"), desc("bar=y"))
		foo, bar := res.Statuses[0], res.Statuses[1]
		if bar.StatsKey != "rl.bar" {
			t.Fatalf("StatsKey %q, want rl.bar", bar.StatsKey)
		}
		if !foo.Replaced || foo.Checked || foo.Code != rules.OK || foo.Remaining != 0 {
			t.Fatalf("request %d, replaced: %+v", i, foo)
		}
		if (i < 2) != res.Allowed || bar.RequestsPerUnit != 2 {
			t.Fatalf("request %d: %v %+v", i, res.Allowed, bar)
		}
	}
	// The replaced counter never moved: foo alone has its 1.
	if res := decide(t, r, "rl", 1, desc("foo=x")); !res.Allowed || res.Statuses[0].Remaining != 0 {
		t.Errorf("foo alone: %v %+v", res.Allowed, res.Statuses[0])
	}
	// An unlimited rule replaces too.
	res := decide(t, r, "rl", 1, desc("foo=x"), desc("baz=z"))
	if !res.Allowed || !res.Statuses[0].Replaced || !res.Statuses[1].Unlimited {
		t.Errorf("replaced by an unlimited rule: %+v", res.Statuses)
	}
}

// share_threshold counts every value its wildcard matches together
// (envoyproxy/ratelimit's integration case 7).
func TestDecideShareThreshold(t *testing.T) {
	r, _ := newRules(t, `
domain: share-threshold-test
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: files_no_share
    value: files_no_share/*
    rate_limit: {unit: hour, requests_per_unit: 10}
`, rules.Options{})
	for i := range 10 {
		if s := decide(t, r, "share-threshold-test", 1, desc("files=files/"+string(rune('a'+i))+".pdf")).Statuses[0]; s.Code != rules.OK {
			t.Fatalf("file %d: %+v", i, s)
		}
	}
	if s := decide(t, r, "share-threshold-test", 1, desc("files=files/b.csv")).Statuses[0]; s.Code != rules.OverLimit || s.RequestsPerUnit != 10 {
		t.Errorf("11th file: %+v", s)
	}
	for i := range 10 {
		if s := decide(t, r, "share-threshold-test", 1, desc("files_no_share=files_no_share/"+string(rune('a'+i)))).Statuses[0]; s.Code != rules.OK || s.Remaining != 9 {
			t.Fatalf("unshared %d: %+v", i, s)
		}
	}
}

func TestDecideNoConfig(t *testing.T) {
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := rules.New(store, nil, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Decide(context.Background(), "d", []rules.Descriptor{desc("k=v")}, 1); err != rules.ErrNoConfig {
		t.Errorf("Decide with no configuration: %v, want ErrNoConfig", err)
	}
}

// Decide goes through what Options.Wrap returns.
func TestDecideWrapped(t *testing.T) {
	var calls int
	r, _ := newRules(t, another, rules.Options{Wrap: func(l core.Limiter) (core.Limiter, error) {
		return counting{l, &calls}, nil
	}})
	decide(t, r, "another", 1, desc("key2=a"), desc("key3=b"), desc("none=c"))
	if calls != 2 {
		t.Errorf("%d calls through the wrapper, want 2", calls)
	}
}

type counting struct {
	core.Limiter
	calls *int
}

func (c counting) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	*c.calls++
	return c.Limiter.Decide(ctx, r)
}

// An unlimited rule named in another's replaces stays unlimited, as in
// envoyproxy/ratelimit, where unlimited rules leave the list before
// replaces is applied.
func TestDecideReplacedUnlimited(t *testing.T) {
	r, _ := newRules(t, `
domain: rl
descriptors:
  - key: free
    rate_limit: {unlimited: true, name: free}
  - key: bar
    rate_limit:
      unit: minute
      requests_per_unit: 2
      replaces: [{name: free}]
`, rules.Options{})
	res := decide(t, r, "rl", 1, desc("free=x"), desc("bar=y"))
	if s := res.Statuses[0]; !s.Unlimited || s.Replaced || s.Remaining != math.MaxUint32 {
		t.Errorf("replaced unlimited rule: %+v", s)
	}
}
