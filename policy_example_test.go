package ratekit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// A policy of two limits, decided in one script: a burst of 2 refilled
// every second, and 3 per day. The daily limit denies the fourth request
// (a second later, with the burst refilled), and the burst counts nothing
// for it. The decision's own fields are the binding limit's; Limits holds
// each limit's.
func ExampleNewPolicy() {
	clock := fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	burst, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 2, RefillInterval: time.Second, Prefix: "ex:burst:", Clock: clock})
	daily, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 3, Window: 24 * time.Hour, Prefix: "ex:daily:", Clock: clock})
	policy, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "burst", Limiter: burst},
		{Name: "daily", Limiter: daily},
	}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if i == 2 {
			clock.Advance(time.Second)
		}
		d, err := policy.Allow(ctx, "user:42")
		if err != nil {
			panic(err)
		}
		var denied []string
		for _, l := range d.Limits {
			if !l.Allowed {
				denied = append(denied, l.Name)
			}
		}
		fmt.Println(d.Allowed, d.Remaining, denied, d.RetryAfter)
	}
	d, _ := burst.Peek(ctx, "user:42")
	fmt.Println("burst tokens left:", d.Remaining)
	// Output:
	// true 1 [] 0s
	// true 0 [] 0s
	// true 0 [] 0s
	// false 0 [daily] 23h59m59s
	// burst tokens left: 1
}

// Tiers: one policy per tier, one shape. A tenant that upgrades keeps its
// state: the free tier spent its 2 requests, and the paid tier's 5 count
// them.
func ExampleTiers() {
	store, _ := memory.New()
	defer store.Close()
	tier := func(limit int64) *ratekit.Limiter {
		perMinute, err := slidinglog.New(store, slidinglog.Config{Limit: limit, Window: time.Minute, Prefix: "ex:tiers:"})
		if err != nil {
			panic(err)
		}
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "minute", Limiter: perMinute}}})
		if err != nil {
			panic(err)
		}
		return p
	}
	tiers, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"free": tier(2), "paid": tier(5)})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	plan := map[string]string{"tenant:7": "free"} // the application's own record
	for i := 0; i < 4; i++ {
		if i == 3 {
			plan["tenant:7"] = "paid"
		}
		p, err := tiers.Policy(plan["tenant:7"])
		if err != nil {
			panic(err)
		}
		d, _ := p.Allow(ctx, "tenant:7")
		fmt.Println(plan["tenant:7"], d.Allowed, d.Remaining)
	}
	// Output:
	// free true 1
	// free true 0
	// free false 0
	// paid true 2
}

// A new limit rolled out in shadow: it decides and counts, and reports the
// requests it would have denied, but never denies one.
func ExampleLimit_shadow() {
	store, _ := memory.New()
	defer store.Close()
	current, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second, Prefix: "ex:current:"})
	stricter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Second, Prefix: "ex:stricter:"})
	policy, _ := ratekit.NewPolicy(ratekit.PolicyConfig{
		Limits: []ratekit.Limit{
			{Name: "current", Limiter: current},
			{Name: "stricter", Limiter: stricter, Shadow: true},
		},
		OnShadowDeny: func(ctx context.Context, key string, d core.Decision) {
			var by []string
			for _, l := range d.Limits {
				if l.Shadow && !l.Allowed {
					by = append(by, l.Name)
				}
			}
			fmt.Println("  would have denied", key, "by", by)
		},
	})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		d, _ := policy.Allow(ctx, "user:42")
		fmt.Println("allowed:", d.Allowed)
	}
	// Output:
	// allowed: true
	// allowed: true
	//   would have denied user:42 by [stricter]
	// allowed: true
}

// Count by outcome: every login attempt is decided, and a successful one
// is refunded, so only failures count toward the limit of 3.
func ExampleLimiter_Refund() {
	store, _ := memory.New()
	defer store.Close()
	failures, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 3, Window: 15 * time.Minute, Prefix: "ex:logins:"})
	policy, _ := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "failed-logins", Limiter: failures}}})
	ctx := context.Background()
	for _, passwordOK := range []bool{false, true, true, false, false, false} {
		d, err := policy.Allow(ctx, "login:alice")
		if err != nil {
			panic(err)
		}
		if !d.Allowed {
			fmt.Println("locked out for", d.RetryAfter.Round(time.Minute))
			continue
		}
		if passwordOK {
			d, _ = policy.Refund(ctx, "login:alice", 1)
		}
		fmt.Println("attempts left:", d.Remaining)
	}
	// Output:
	// attempts left: 2
	// attempts left: 2
	// attempts left: 2
	// attempts left: 1
	// attempts left: 0
	// locked out for 15m0s
}

// A penalty: a key that exceeds its rate is blocked for a minute, however
// fast its rate limit would let it back in.
func ExampleLimit_penalty() {
	clock := fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	rate, _ := gcra.New(store, gcra.Config{Rate: 1, Period: time.Second, Burst: 2, Clock: clock})
	policy, _ := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "rate", Limiter: rate, Penalty: time.Minute},
	}})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		d, _ := policy.Allow(ctx, "client:9")
		fmt.Println(d.Allowed, d.Blocked, d.RetryAfter)
	}
	clock.Advance(30 * time.Second) // the rate alone would allow again
	d, _ := policy.Allow(ctx, "client:9")
	fmt.Println(d.Allowed, d.Blocked, d.RetryAfter)
	clock.Advance(30 * time.Second)
	d, _ = policy.Allow(ctx, "client:9")
	fmt.Println(d.Allowed, d.Blocked, d.RetryAfter)
	// Output:
	// true false 0s
	// true false 0s
	// false true 1m0s
	// false true 30s
	// true false 0s
}
