package rules_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

const userLimit = `
domain: api
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 5
  - key: y
    rate_limit:
      unit: minute
      requests_per_unit: 5
`

// On any error a decision allows nothing and reports no status, even
// into a Result that held an allowed decision.
func TestDecideErrorAllowsNothing(t *testing.T) {
	one, minus := int64(1), int64(-1)
	big := strings.Repeat("v", 64<<10+1)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, atomic := range []bool{false, true} {
		r, _ := newRules(t, userLimit, rules.Options{Atomic: atomic})
		two := int64(2)
		cases := []struct {
			name string
			ctx  context.Context
			ds   []rules.Descriptor
		}{
			{"cancelled context", cancelled, []rules.Descriptor{desc("user=a")}},
			{"negative descriptor hits", context.Background(), []rules.Descriptor{desc("user=a"), {Entries: entries("y=b"), Hits: &minus}}},
			{"override unit 0", context.Background(), []rules.Descriptor{desc("user=a"), {Entries: entries("y=b"), Limit: &rules.Override{RequestsPerUnit: 3}}}},
			{"override unit 99", context.Background(), []rules.Descriptor{desc("user=a"), {Entries: entries("y=b"), Limit: &rules.Override{RequestsPerUnit: 3, Unit: 99}}}},
			{"value over 64 KiB", context.Background(), []rules.Descriptor{desc("user=a"), desc("user=" + big)}},
			{"empty descriptor", context.Background(), []rules.Descriptor{desc("user=a"), {}}},
		}
		if atomic {
			cases = append(cases, struct {
				name string
				ctx  context.Context
				ds   []rules.Descriptor
			}{"different costs", context.Background(), []rules.Descriptor{{Entries: entries("user=a"), Hits: &one}, {Entries: entries("y=b"), Hits: &two}}})
		}
		for _, c := range cases {
			res, err := r.Decide(c.ctx, "api", c.ds, 1)
			if err == nil {
				t.Errorf("atomic %v, %s: no error", atomic, c.name)
				continue
			}
			if res.Allowed || len(res.Statuses) != 0 {
				t.Errorf("atomic %v, %s: %v with Allowed %v and %d statuses, want the zero Result", atomic, c.name, err, res.Allowed, len(res.Statuses))
			}
			reused := rules.Result{Allowed: true, Statuses: make([]rules.Status, 2)}
			if err := r.DecideTo(c.ctx, &reused, "api", c.ds, 1); err == nil || reused.Allowed || len(reused.Statuses) != 0 {
				t.Errorf("atomic %v, %s: DecideTo left Allowed %v and %d statuses (err %v)", atomic, c.name, reused.Allowed, len(reused.Statuses), err)
			}
		}
	}
}

// A descriptor without entries is a bad request.
func TestEmptyDescriptorIsARequestError(t *testing.T) {
	r, _ := newRules(t, userLimit, rules.Options{})
	for _, d := range []rules.Descriptor{{}, {Limit: &rules.Override{RequestsPerUnit: 1, Unit: rules.Minute}}} {
		if _, err := r.Decide(context.Background(), "api", []rules.Descriptor{d}, 1); !errors.Is(err, rules.ErrRequest) {
			t.Errorf("Decide(%+v): %v, want ErrRequest", d, err)
		}
	}
}

// The way docs/rules.md starts: Load, New with the configuration, then
// Watch; the first decision, made at once, has a configuration.
func TestDocumentedStartDecidesAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api.yaml")
	if err := os.WriteFile(path, []byte(userLimit), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg, err := rules.Load(path, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rules.New(store, cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Watch(ctx, path, rules.WatchOptions{}) }()
	defer func() { cancel(); <-done }()
	res, err := r.Decide(ctx, "api", []rules.Descriptor{desc("user=a")}, 1)
	if err != nil || !res.Allowed || !res.Statuses[0].Checked {
		t.Fatalf("first decision: %+v, %v", res, err)
	}
}

const quotaConfig = `
domain: api
descriptors:
  - key: y
    rate_limit:
      unit: minute
      requests_per_unit: 5
  - key: q
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: p
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
`

// Under Atomic a request its quota descriptors deny counts nothing, and
// one that any quota descriptor lets through counts everywhere.
func TestAtomicQuotaDenialCountsNothing(t *testing.T) {
	r, _ := newRules(t, quotaConfig, rules.Options{Atomic: true})
	if res := decide(t, r, "api", 1, desc("q=1")); !res.Allowed {
		t.Fatalf("first q: %+v", res)
	}
	if res := decide(t, r, "api", 1, desc("q=1"), desc("y=1")); res.Allowed {
		t.Fatalf("q used up, [q, y]: allowed: %+v", res)
	}
	// y is whole: 5 left before this request, 4 after.
	if res := decide(t, r, "api", 1, desc("y=1")); !res.Allowed || res.Statuses[0].Remaining != 4 {
		t.Fatalf("y after a denied request: %+v, want 4 left (nothing counted)", res.Statuses[0])
	}
	// Two quota descriptors: p still has room, so the request passes and
	// counts at p and y (q is over, and stays so).
	res := decide(t, r, "api", 1, desc("q=1"), desc("p=1"), desc("y=1"))
	if !res.Allowed || res.Statuses[1].Remaining != 0 || res.Statuses[2].Remaining != 3 {
		t.Fatalf("[q over, p, y]: %+v", res)
	}
	// Now both are over: denied, y not counted.
	if res := decide(t, r, "api", 1, desc("q=1"), desc("p=1"), desc("y=1")); res.Allowed {
		t.Fatalf("[q, p over, y]: allowed: %+v", res)
	}
	if res := decide(t, r, "api", 0, desc("y=1")); res.Statuses[0].Remaining != 3 {
		t.Fatalf("y after denied requests: %d left, want 3", res.Statuses[0].Remaining)
	}
}

// Under Atomic two descriptors that count at one counter (two values of
// a share_threshold rule) are counted once, as docs/rules.md says;
// decided on their own they are counted each, as envoy does.
func TestSharedCounterCountedOnceUnderAtomic(t *testing.T) {
	const cfg = `
domain: api
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    descriptors:
      - key: x
        rate_limit:
          unit: minute
          requests_per_unit: 10
`
	for _, c := range []struct {
		atomic bool
		want   [2]uint32
	}{{false, [2]uint32{9, 8}}, {true, [2]uint32{9, 9}}} {
		r, _ := newRules(t, cfg, rules.Options{Atomic: c.atomic})
		res := decide(t, r, "api", 1, desc("files=files/a", "x=1"), desc("files=files/b", "x=1"))
		if got := [2]uint32{res.Statuses[0].Remaining, res.Statuses[1].Remaining}; !res.Allowed || got != c.want {
			t.Errorf("atomic %v: remaining %v, want %v", c.atomic, got, c.want)
		}
	}
}

// A descriptor's own Limit counts each value on its own, even where a
// share_threshold rule counts them together.
func TestOverrideCountsPerValue(t *testing.T) {
	const cfg = `
domain: api
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: minute
      requests_per_unit: 10
`
	r, _ := newRules(t, cfg, rules.Options{})
	own := &rules.Override{RequestsPerUnit: 10, Unit: rules.Minute}
	res := decide(t, r, "api", 1, rules.Descriptor{Entries: entries("files=files/a"), Limit: own}, rules.Descriptor{Entries: entries("files=files/b"), Limit: own})
	if res.Statuses[0].Remaining != 9 || res.Statuses[1].Remaining != 9 {
		t.Fatalf("remaining %d, %d; want 9, 9", res.Statuses[0].Remaining, res.Statuses[1].Remaining)
	}
}

// What parses loads: a penalty beyond the engine's bound is refused by
// Parse, and what only New can refuse is a *ConfigError naming the file,
// the line and the field.
func TestConfigRefusedWhereItIsWrong(t *testing.T) {
	_, err := rules.Parse([]rules.File{{Name: "p.yaml", Data: []byte(`domain: a
descriptors:
  - key: k
    rate_limit:
      unit: second
      requests_per_unit: 1
      penalty: 1000000h
`)}}, rules.LoadOptions{})
	var ce *rules.ConfigError
	if !errors.As(err, &ce) || ce.Line != 7 || ce.Field != "descriptors[0].rate_limit.penalty" {
		t.Fatalf("Parse of a penalty of 1000000h: %v, want a ConfigError at line 7's penalty", err)
	}
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, c := range []struct {
		name, yaml string
		opts       rules.Options
		line       int
		field      string
	}{
		{"penalty under Atomic", `domain: a
descriptors:
  - key: k
    rate_limit:
      unit: second
      requests_per_unit: 1
      penalty: 1m
`, rules.Options{Atomic: true}, 7, "descriptors[0].rate_limit.penalty"},
		{"calendar with also, no Clock", `domain: a
descriptors:
  - key: k
    rate_limit:
      unit: minute
      requests_per_unit: 100
      also:
        - unit: day
          requests_per_unit: 1000
          calendar: UTC
`, rules.Options{}, 10, "descriptors[0].rate_limit.also[0].calendar"},
	} {
		cfg, err := rules.Parse([]rules.File{{Name: "c.yaml", Data: []byte(c.yaml)}}, rules.LoadOptions{})
		if err != nil {
			t.Fatalf("%s: Parse: %v", c.name, err)
		}
		_, err = rules.New(store, cfg, c.opts)
		var ce *rules.ConfigError
		if !errors.Is(err, rules.ErrConfig) || !errors.As(err, &ce) || ce.File != "c.yaml" || ce.Line != c.line || ce.Field != c.field {
			t.Errorf("%s: New: %v (%+v), want c.yaml:%d: %s", c.name, err, ce, c.line, c.field)
		}
	}
}

// A quoted string is no boolean, "true" as "yes": envoy's YAML library
// refuses both.
func TestQuotedBooleanRefused(t *testing.T) {
	for _, field := range []string{"unlimited", "shadow_mode", "quota_mode"} {
		for _, v := range []string{`"yes"`, `"no"`, `"true"`, `'false'`} {
			var y string
			if field == "unlimited" {
				y = "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: " + v + "\n"
			} else {
				y = "domain: a\ndescriptors:\n  - key: k\n    " + field + ": " + v + "\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n"
			}
			_, err := rules.Parse([]rules.File{{Name: "b.yaml", Data: []byte(y)}}, rules.LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), "quoted string") {
				t.Errorf("%s: %s: %v, want a quoted string refused", field, v, err)
			}
		}
		for _, v := range []string{"true", "false", "yes", "no"} {
			y := "domain: a\ndescriptors:\n  - key: k\n    " + field + ": " + v + "\n"
			if field == "unlimited" {
				y = "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: " + v + "\n"
				if v == "false" || v == "no" {
					y += "      unit: second\n      requests_per_unit: 1\n"
				}
			}
			if _, err := rules.Parse([]rules.File{{Name: "b.yaml", Data: []byte(y)}}, rules.LoadOptions{}); err != nil {
				t.Errorf("%s: %s: %v", field, v, err)
			}
		}
	}
}

// Parse reports every error, of every file: a domain repeated in b.yaml
// as well as an unknown key in a.yaml, the file that gave it first.
func TestParseReportsEveryFilesErrors(t *testing.T) {
	_, err := rules.Parse([]rules.File{
		{Name: "a.yaml", Data: []byte("domain: api\nnope: 1\n")},
		{Name: "b.yaml", Data: []byte("domain: api\n")},
	}, rules.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "a.yaml:2: nope") || !strings.Contains(err.Error(), "b.yaml:1: domain: duplicate domain 'api'") {
		t.Fatalf("Parse: %v, want both files' errors", err)
	}
}

// No files is a failed load that keeps the configuration in force, by
// Update as by Watch of an emptied directory, as a removed one is.
func TestNoFilesKeepsConfiguration(t *testing.T) {
	r, _ := newRules(t, userLimit, rules.Options{})
	before := r.Config()
	if _, err := r.Update(nil, rules.LoadOptions{}); !errors.Is(err, rules.ErrConfig) || r.Config() != before {
		t.Fatalf("Update(nil): %v; configuration kept: %v", err, r.Config() == before)
	}
	if _, err := rules.Load(t.TempDir(), rules.LoadOptions{}); !errors.Is(err, rules.ErrConfig) {
		t.Fatalf("Load of an empty directory: %v, want ErrConfig", err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "api.yaml")
	if err := os.WriteFile(path, []byte(userLimit), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 10)
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w, err := rules.New(store, nil, rules.Options{OnLoad: func(_ *rules.Config, err error) {
		if err != nil {
			failed <- err
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Watch(ctx, dir, rules.WatchOptions{Interval: 10 * time.Millisecond}) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for w.Config() == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	loaded := w.Config()
	if loaded == nil {
		t.Fatal("Watch loaded nothing")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if !errors.Is(err, rules.ErrConfig) {
			t.Fatalf("emptied directory: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an emptied directory was not reported as a failed load")
	}
	if w.Config() != loaded {
		t.Fatal("an emptied directory replaced the configuration in force")
	}
	if ok, bad := w.Loads(); ok != 1 || bad != 1 {
		t.Errorf("Loads() = %d, %d, want 1, 1", ok, bad)
	}
}

// A calendar month rule's Window is what its decisions say, the
// month's nominal 30 days, as Rule.Window's doc says.
func TestCalendarRuleWindowIsItsDecisions(t *testing.T) {
	r, _ := newRules(t, "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: month\n      requests_per_unit: 5\n      calendar: UTC\n", rules.Options{})
	rule := r.Config().Rules()[0]
	s := decide(t, r, "a", 1, desc("k=1")).Statuses[0]
	if rule.Window != 30*24*time.Hour || rule.Window != rule.Limits[0].Params.Window() || rule.Window != s.Decision.Window {
		t.Fatalf("Rule.Window %v, Params.Window() %v, Decision.Window %v", rule.Window, rule.Limits[0].Params.Window(), s.Decision.Window)
	}
	// December: the window ends with the month, 31 days from its start.
	if s.ResetAfter != 31*24*time.Hour {
		t.Fatalf("ResetAfter %v at the start of December, want 744h", s.ResetAfter)
	}
}

// A cost above the limit is over it, counts nothing, and its status
// says what the limit holds: on a fresh key, all of it, whole now.
func TestCostAboveLimitReportsTheLimitUntouched(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		r, _ := newRules(t, userLimit, rules.Options{Atomic: atomic})
		s := decide(t, r, "api", 6, desc("user=a")).Statuses[0]
		if s.Code != rules.OverLimit || s.Remaining != 5 || s.ResetAfter != 0 || s.Hits <= int64(s.RequestsPerUnit) {
			t.Errorf("atomic %v: cost 6 of 5 on a fresh key: %+v", atomic, s)
		}
		if s := decide(t, r, "api", 0, desc("user=a")).Statuses[0]; s.Remaining != 5 {
			t.Errorf("atomic %v: after a cost above the limit %d left, want 5", atomic, s.Remaining)
		}
	}
}
