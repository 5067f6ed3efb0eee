package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/hotkey"
)

// hotKey is the one key of the hot-key cases.
const hotKey = "hot"

// hotKeyLease and hotKeyTTL configure the hot-key cases' Budget: leases
// of up to 65,536 units (from 64, adapting), spent within 100 ms.
const (
	hotKeyLease    = 1 << 16
	hotKeyMinLease = 64
	hotKeyTTL      = 100 * time.Millisecond
)

type hotKeyCases struct {
	jobs  []job
	close func()
}

// hotKeyJobs measures every request on one key of the open limiter l (a
// GCRA limiter, which never denies here), at each concurrency: "onekey"
// decides with l, one round trip per decision on one server; "hotkey"
// through a hotkey.Budget that leases units of the key and decides in
// process.
func hotKeyJobs(l core.Limiter, store string, goroutines []int) (hotKeyCases, error) {
	b, err := hotkey.New(l, hotkey.Config{Lease: hotKeyLease, MinLease: hotKeyMinLease, TTL: hotKeyTTL})
	if err != nil {
		return hotKeyCases{}, fmt.Errorf("%s: hotkey: %w", store, err)
	}
	var c hotKeyCases
	for _, g := range goroutines {
		c.jobs = append(c.jobs,
			job{key: caseKey{"ratekit/" + store, "gcra", "onekey", g}, decide: oneKey(l), per: 1},
			job{key: caseKey{"ratekit/" + store, "gcra", "hotkey", g}, decide: oneKey(b), per: 1},
		)
	}
	c.close = func() { b.Close(context.Background()) }
	return c, nil
}

// oneKey decides every request on hotKey, whatever key it is given.
func oneKey(l core.Limiter) decideFunc {
	return func(ctx context.Context, _ string) (bool, error) {
		d, err := l.Allow(ctx, hotKey)
		return d.Allowed, err
	}
}
