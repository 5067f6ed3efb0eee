// Package tokenbucket is the token bucket rate limiter of the Redis rate
// limiter guide: a bucket of Capacity tokens, full at first, that gains
// RefillRate tokens at the end of every whole RefillInterval and never holds
// more than Capacity. A request of cost n passes when n tokens are there, and
// takes them.
//
// The decision is one atomic script (tokenbucket.lua, run by the Redis
// stores) or its Go twin (twin.go, run by the memory store); both compute in
// integer microseconds and agree exactly.
//
// On top of the guide's script, ratekit adds costs, Peek, Reset, exact
// RetryAfter and ResetAfter, and a TTL on every key equal to the time until
// the bucket is full again. One difference from the guide is deliberate: a
// bucket that has refilled to Capacity forgets its refill phase and behaves
// exactly like a new bucket (its next refill comes a whole RefillInterval
// after its next request). That is what makes an expired key and a stale one
// decide alike on every store; the guide, which never expires keys, would
// keep the old phase and could refill a just-drained bucket early.
// Otherwise, configured alike, it makes the guide's decisions at the same
// times, which the seed-parity test checks against the guide's script on a
// real Redis.
package tokenbucket

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

//go:embed tokenbucket.lua
var lua string

var (
	allowScript = core.NewScript("tokenbucket", lua, twin, false)
	peekScript  = core.NewScript("tokenbucket", lua, twin, true)
)

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "ratekit:tb:"

// Config configures a token bucket.
type Config struct {
	// Capacity is the most tokens the bucket holds: the largest burst, and
	// the largest cost a single request may have. It starts full.
	Capacity int64
	// RefillRate is the number of tokens added at the end of each whole
	// RefillInterval. It may exceed Capacity: the bucket then fills in one
	// interval.
	RefillRate int64
	// RefillInterval is the time between refills, a whole number of
	// microseconds.
	RefillInterval time.Duration
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock, when set, gives the time of every decision, passed to the
	// store with the request. When nil, the store's clock is used: the
	// Redis server's TIME, or the memory store's own clock.
	Clock core.Clock
}

// Limiter is a token bucket limiter over a [core.ScriptRunner]. It is safe
// for concurrent use; all its state lives in the store.
type Limiter struct {
	runner   core.ScriptRunner
	clock    core.Clock
	prefix   string
	capacity int64
	rate     int64
	interval int64 // µs
}

var _ core.Limiter = (*Limiter)(nil)

// New returns a token bucket limiter storing its state through runner. It
// checks cfg and touches no store; an error wraps core.ErrInvalidConfig and
// names the bad field.
func New(runner core.ScriptRunner, cfg Config) (*Limiter, error) {
	if runner == nil {
		return nil, fmt.Errorf("%w: runner is nil", core.ErrInvalidConfig)
	}
	if err := params.Count("Capacity", cfg.Capacity); err != nil {
		return nil, err
	}
	if err := params.Count("RefillRate", cfg.RefillRate); err != nil {
		return nil, err
	}
	interval, err := params.Micros("RefillInterval", cfg.RefillInterval)
	if err != nil {
		return nil, err
	}
	if refills := params.CeilDiv(cfg.Capacity, cfg.RefillRate); refills > params.MaxSpan/interval {
		return nil, fmt.Errorf("%w: RefillInterval: a full refill takes %d intervals of %v, longer than %v", core.ErrInvalidConfig, refills, cfg.RefillInterval, time.Duration(params.MaxSpan)*time.Microsecond)
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := keyspace.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	return &Limiter{
		runner:   runner,
		clock:    cfg.Clock,
		prefix:   prefix,
		capacity: cfg.Capacity,
		rate:     cfg.RefillRate,
		interval: interval,
	}, nil
}

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (core.Decision, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN takes n tokens from key's bucket when it holds at least n, and
// reports the decision. Remaining is the tokens left. A denied request takes
// nothing; its RetryAfter is the wait until n tokens are there. n must be
// between 1 and Capacity.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.run(ctx, allowScript, key, n, 0)
}

// Peek reports, without writing anything, the decision Allow would get now:
// Remaining is the tokens in the bucket now.
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.run(ctx, peekScript, key, 1, 1)
}

// Reset refills key's bucket: its state is deleted.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if err := keyspace.CheckKey(key); err != nil {
		return err
	}
	_, err := l.runner.RunScript(ctx, keyspace.ResetScript, []string{keyspace.Key(l.prefix, key, "")}, nil)
	return err
}

func (l *Limiter) run(ctx context.Context, s *core.Script, key string, n, peek int64) (core.Decision, error) {
	if err := keyspace.CheckKey(key); err != nil {
		return core.Decision{}, err
	}
	if err := params.Cost(n, l.capacity); err != nil {
		return core.Decision{}, err
	}
	now, err := params.Now(l.clock)
	if err != nil {
		return core.Decision{}, err
	}
	reply, err := l.runner.RunScript(ctx, s,
		[]string{keyspace.Key(l.prefix, key, "")},
		[]int64{now, n, l.capacity, l.rate, l.interval, peek})
	if err != nil {
		return core.Decision{}, err
	}
	return params.Decision(reply, l.capacity)
}
