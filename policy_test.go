package ratekit_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

func newStore(t *testing.T, opts ...memory.Option) *memory.Store {
	t.Helper()
	s, err := memory.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func bucket(t *testing.T, s core.ScriptRunner, prefix string, capacity int64) *ratekit.Limiter {
	t.Helper()
	l, err := tokenbucket.New(s, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Second, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// policyOf returns a policy of one limit, l, named "only".
func policyOf(t *testing.T, l *ratekit.Limiter) *ratekit.Limiter {
	t.Helper()
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "only", Limiter: l}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every bad policy is an error wrapping core.ErrInvalidConfig, naming
// what is wrong; none panics.
func TestNewPolicyRefuses(t *testing.T) {
	s, other := newStore(t), newStore(t)
	a, b := bucket(t, s, "a:", 5), bucket(t, s, "b:", 5)
	clocked, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Second, Prefix: "c:", Clock: fakeclock.New(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	many := make([]ratekit.Limit, ratekit.MaxPolicyLimits+1)
	for i := range many {
		many[i] = ratekit.Limit{Name: "l" + string(rune('a'+i)), Limiter: bucket(t, s, "m"+string(rune('a'+i))+":", 1)}
	}
	for _, c := range []struct {
		name string
		cfg  ratekit.PolicyConfig
		want string
	}{
		{"no limits", ratekit.PolicyConfig{}, "1 to 16 limits"},
		{"too many", ratekit.PolicyConfig{Limits: many}, "1 to 16 limits"},
		{"no name", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Limiter: a}}}, "Name"},
		{"upper case", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "Day", Limiter: a}}}, "not allowed"},
		{"digit first", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "1s", Limiter: a}}}, "not allowed"},
		{"header injection", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "a;q=1", Limiter: a}}}, "not allowed"},
		{"long name", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: strings.Repeat("a", 65), Limiter: a}}}, "Name"},
		{"same name", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: a}, {Name: "x", Limiter: b}}}, "two limits"},
		{"nil limiter", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x"}}}, "no Limiter"},
		{"zero limiter", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: &ratekit.Limiter{}}}}, "no Limiter"},
		{"a policy as a limit", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: policyOf(t, a)}}}, "is a policy"},
		{"same prefix", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: a}, {Name: "y", Limiter: a}}}, "prefix"},
		{"two stores", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: a}, {Name: "y", Limiter: bucket(t, other, "y:", 1)}}}, "another store"},
		{"none and clock", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: a}, {Name: "y", Limiter: clocked}}}, `limit "y" has a Clock and limit "x" has none`},
		{"clock and none", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: clocked}, {Name: "y", Limiter: a}}}, `limit "x" has a Clock and limit "y" has none`},
		{"negative penalty", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: a, Penalty: -time.Second}}}, "Penalty"},
		{"sub-µs penalty", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: a, Penalty: time.Nanosecond}}}, "Penalty"},
		{"huge penalty", ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: a, Penalty: 1 << 62}}}, "Penalty"},
		{"braced penalty prefix", ratekit.PolicyConfig{PenaltyPrefix: "p{", Limits: []ratekit.Limit{{Name: "x", Limiter: a, Penalty: time.Second}}}, "{"},
		{"penalty prefix is a limit's", ratekit.PolicyConfig{PenaltyPrefix: "a:", Limits: []ratekit.Limit{{Name: "x", Limiter: a, Penalty: time.Second}}}, "PenaltyPrefix"},
		// Wrong before any limit has a penalty: refused all the same.
		{"braced penalty prefix, no penalty yet", ratekit.PolicyConfig{PenaltyPrefix: "p{", Limits: []ratekit.Limit{{Name: "x", Limiter: a}}}, "{"},
		{"penalty prefix is a limit's, no penalty yet", ratekit.PolicyConfig{PenaltyPrefix: "a:", Limits: []ratekit.Limit{{Name: "x", Limiter: a}}}, "PenaltyPrefix"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ratekit.NewPolicy(c.cfg)
			if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewPolicy: %v, %v; want an ErrInvalidConfig saying %q", p, err, c.want)
			}
		})
	}
}

// Bad calls are errors: keys and costs as for a Limiter, the cost at most
// the smallest limit's.
func TestPolicyRefusesBadCalls(t *testing.T) {
	s := newStore(t)
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "big", Limiter: bucket(t, s, "a:", 10)},
		{Name: "small", Limiter: bucket(t, s, "b:", 3)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if p.MaxCost() != 3 {
		t.Fatalf("MaxCost %d, want 3", p.MaxCost())
	}
	for _, n := range []int64{0, -1, 4} {
		if _, err := p.AllowN(ctx, "k", n); !errors.Is(err, core.ErrInvalidCost) {
			t.Errorf("AllowN(k, %d): %v, want ErrInvalidCost", n, err)
		}
		if _, err := p.Refund(ctx, "k", n); !errors.Is(err, core.ErrInvalidCost) {
			t.Errorf("Refund(k, %d): %v, want ErrInvalidCost", n, err)
		}
	}
	if _, err := p.Allow(ctx, ""); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("Allow(\"\"): %v, want ErrInvalidKey", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Allow(done, "k"); !errors.Is(err, core.ErrStore) || !errors.Is(err, context.Canceled) {
		t.Errorf("Allow with an ended context: %v", err)
	}
}

// A penalty key that holds anything else is refused as corrupt state,
// naming the key; and Reset clears the block.
func TestPolicyPenaltyKey(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newStore(t, memory.WithClock(clock))
	lim, _ := fixedwindow.New(s, fixedwindow.Config{Limit: 1, Window: time.Second, Clock: clock})
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "w", Limiter: lim, Penalty: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p.Allow(ctx, "k")
	d, _ := p.Allow(ctx, "k")
	if d.Allowed || !d.Blocked || d.RetryAfter != time.Hour {
		t.Fatalf("second request: %+v; want blocked for an hour", d)
	}
	clock.Advance(time.Minute)
	if d, _ := p.Allow(ctx, "k"); d.Allowed || !d.Blocked || d.RetryAfter != 59*time.Minute {
		t.Fatalf("a minute later: %+v; want blocked for 59 more minutes", d)
	}
	if d, _ := p.Refund(ctx, "k", 1); !d.Blocked {
		t.Fatalf("after a refund: %+v; a refund does not lift the block", d)
	}
	if err := p.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.Allow(ctx, "k"); !d.Allowed || d.Blocked {
		t.Fatalf("after Reset: %+v; want allowed", d)
	}
	// A foreign value at the penalty key.
	put := core.NewScript("put", "", func(tx core.Tx, keys []string, _ []int64, reply []int64) ([]int64, error) {
		tx.Put(keys[0], 2, time.Hour)
		return reply, nil
	}, false)
	if _, err := s.RunScript(ctx, put, []string{ratekit.DefaultPenaltyPrefix + "{k}"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Allow(ctx, "k"); !errors.Is(err, core.ErrCorruptState) || !strings.Contains(err.Error(), "penalty") {
		t.Fatalf("a foreign penalty key: %v, want ErrCorruptState", err)
	}
}

// Tiers of another shape are refused, naming the difference.
func TestNewTiersRefuses(t *testing.T) {
	s := newStore(t)
	pol := func(limits ...ratekit.Limit) *ratekit.Limiter {
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := pol(ratekit.Limit{Name: "x", Limiter: bucket(t, s, "a:", 5)})
	fw, _ := fixedwindow.New(s, fixedwindow.Config{Limit: 5, Window: time.Second, Prefix: "a:"})
	for _, c := range []struct {
		name string
		b    *ratekit.Limiter
		want string
	}{
		{"nil", nil, "not a policy"},
		{"a zero Limiter", &ratekit.Limiter{}, "not a policy"},
		{"one algorithm's limiter", bucket(t, s, "a:", 5), "not a policy"},
		{"more limits", pol(ratekit.Limit{Name: "x", Limiter: bucket(t, s, "a:", 5)}, ratekit.Limit{Name: "y", Limiter: bucket(t, s, "b:", 5)}), "limits"},
		{"another name", pol(ratekit.Limit{Name: "z", Limiter: bucket(t, s, "a:", 5)}), "is \"z\""},
		{"another algorithm", pol(ratekit.Limit{Name: "x", Limiter: fw}), "fixedwindow"},
		{"another prefix", pol(ratekit.Limit{Name: "x", Limiter: bucket(t, s, "q:", 5)}), "prefix"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tiers, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"a": a, "b": c.b})
			if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewTiers: %v, %v; want an ErrInvalidConfig saying %q", tiers, err, c.want)
			}
		})
	}
	if _, err := ratekit.NewTiers(nil); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("NewTiers(nil): %v", err)
	}
	// Tiers with penalties block under one prefix, whichever tier comes
	// first and whether or not it has penalties.
	penalized := func(prefix string) *ratekit.Limiter {
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{PenaltyPrefix: prefix,
			Limits: []ratekit.Limit{{Name: "x", Limiter: bucket(t, s, "a:", 5), Penalty: time.Minute}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"a": a, "b": penalized("p1:"), "c": penalized("p2:")}); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "penalty prefix") {
		t.Errorf("two penalty prefixes after a tier without penalties: %v", err)
	}
	if _, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"a": a, "b": penalized("p1:"), "c": penalized("p1:")}); err != nil {
		t.Errorf("one penalty prefix: %v", err)
	}
	tiers, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"a": a, "b": pol(ratekit.Limit{Name: "x", Limiter: bucket(t, s, "a:", 50)})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tiers.Policy("gold"); !errors.Is(err, ratekit.ErrUnknownTier) {
		t.Errorf("Policy(gold): %v, want ErrUnknownTier", err)
	}
	if got := strings.Join(tiers.Names(), ","); got != "a,b" {
		t.Errorf("Names: %s", got)
	}
}

// NewTiers keeps a copy of the map it checked: a tier added to the
// caller's map afterwards (of another shape, never checked) is unknown, a
// tier deleted or replaced there is still the one checked, and a caller
// that edits its map while requests run does not race with them (under
// -race).
func TestNewTiersCopiesTheMap(t *testing.T) {
	s := newStore(t)
	pol := func(limits ...ratekit.Limit) *ratekit.Limiter {
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	free := pol(ratekit.Limit{Name: "x", Limiter: bucket(t, s, "a:", 5)})
	paid := pol(ratekit.Limit{Name: "x", Limiter: bucket(t, s, "a:", 50)})
	other := pol(ratekit.Limit{Name: "y", Limiter: bucket(t, s, "b:", 5)}) // another shape
	m := map[string]*ratekit.Limiter{"free": free, "paid": paid}
	tiers, err := ratekit.NewTiers(m)
	if err != nil {
		t.Fatal(err)
	}
	m["gold"] = other
	delete(m, "free")
	m["paid"] = other
	if p, err := tiers.Policy("gold"); !errors.Is(err, ratekit.ErrUnknownTier) {
		t.Errorf("a tier added to the map afterwards: %p, %v; want ErrUnknownTier", p, err)
	}
	if p, err := tiers.Policy("free"); p != free || err != nil {
		t.Errorf("a tier deleted from the map afterwards: %p, %v; want the policy checked", p, err)
	}
	if p, err := tiers.Policy("paid"); p != paid || err != nil {
		t.Errorf("a tier replaced in the map afterwards: %p, %v; want the policy checked", p, err)
	}
	if got := strings.Join(tiers.Names(), ","); got != "free,paid" {
		t.Errorf("Names: %s; want free,paid", got)
	}

	ctx := context.Background()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := range 200 {
				p, err := tiers.Policy("paid")
				if err != nil {
					t.Error(err)
					return
				}
				p.Allow(ctx, "k"+strconv.Itoa(i))
				tiers.Names()
			}
		})
	}
	for i := range 200 {
		m["t"+strconv.Itoa(i)] = other
		delete(m, "paid")
		m["paid"] = other
	}
	wg.Wait()
}

// A calendar window always has a Clock: in a policy beside limits that
// have one too it is a limit like any other, decided at the first
// limit's clock.
func TestPolicyWithCalendarWindow(t *testing.T) {
	s := newStore(t)
	clock := fakeclock.New(time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC))
	perSecond, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 5, RefillRate: 5, RefillInterval: time.Second, Prefix: "s:", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	perDay, err := fixedwindow.NewCalendar(s, fixedwindow.CalendarConfig{Limit: 2, Period: fixedwindow.Day, Prefix: "d:", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "second", Limiter: perSecond}, {Name: "day", Limiter: perDay}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, want := range []bool{true, true, false} {
		d, err := p.Allow(ctx, "k")
		if err != nil || d.Allowed != want {
			t.Fatalf("request %d: %+v, %v; want allowed %v", i, d, err, want)
		}
		if !want && (d.Limits[0].Allowed != true || d.Limits[1].Allowed != false || d.RetryAfter != time.Minute) {
			t.Fatalf("request %d: limits %+v, RetryAfter %v; want denied by the day's limit, until midnight (1m)", i, d.Limits, d.RetryAfter)
		}
	}
	clock.Advance(time.Minute) // midnight: a new day
	if d, err := p.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("after midnight: %+v, %v", d, err)
	}
}

// valueStore is a store used by value whose type cannot be compared (it
// holds a slice): no two of them can be told to be the same store.
type valueStore struct {
	s    *memory.Store
	tags []string
}

func (v valueStore) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return v.s.RunScript(ctx, s, keys, args, reply)
}

// A policy of one limit on a store that cannot be compared builds and
// decides, and so do Tiers of one such policy: a limit is never compared
// with itself. Two limits on it are refused: they cannot be shown to
// share a store.
func TestPolicyOnAStoreThatCannotBeCompared(t *testing.T) {
	vs := valueStore{s: newStore(t), tags: []string{"x"}}
	a, b := bucket(t, vs, "a:", 5), bucket(t, vs, "b:", 5)
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "a", Limiter: a}}})
	if err != nil {
		t.Fatalf("a policy of one limit: %v", err)
	}
	if d, err := p.Allow(context.Background(), "k"); err != nil || !d.Allowed {
		t.Fatalf("Allow: %+v, %v", d, err)
	}
	if _, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"only": p}); err != nil {
		t.Fatalf("Tiers of one such policy: %v", err)
	}
	if _, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "a", Limiter: a}, {Name: "b", Limiter: b}}}); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "another store") {
		t.Fatalf("two limits on it: %v, want ErrInvalidConfig saying another store", err)
	}
}
