// Package concurrency caps the requests in flight per key, across
// processes: a request acquires a lease before its work and releases it
// after, and at no instant do the leases live on one key cost more than
// Limit, whatever the number of processes and clients sharing the store.
// Rate limits cap how often; this caps how many at once (slow report
// requests, connections, jobs).
//
//	lease, d, err := lim.Acquire(ctx, "tenant:7")
//	if err != nil { ... }
//	if !d.Allowed { ... full: retry after d.RetryAfter }
//	defer lim.Release(ctx, lease)
//
// A lease lives TTL, so the slots of a process that crashes or hangs come
// back by themselves: an expired lease stops counting, on the store's clock
// (TIME on the Redis server) or the configured Clock. A request that works
// longer than TTL calls Extend before its lease expires. Releasing a lease
// that is not live (expired, released already, another key's, or forged) is
// a harmless no-op that says so: Release returns false and frees nothing.
// Lease ids are 128 random bits from crypto/rand, so a lease cannot be
// guessed.
//
// Every lease is one sorted-set member per unit of cost (one slice element
// per lease in the memory store), scored by its expiry: an acquire, a
// release and an extension are O(log m + n) for m units in flight and a
// cost of n, and memory per key is O(Limit). Limit is therefore capped at
// MaxLimit. The Lua step and its Go twin decide alike on every store; the
// conformance suite checks them with random acquires, releases,
// extensions, clock steps and configuration changes.
//
// The limiter is not in algorithms.All, the registry of rate algorithms:
// it has no Allow (a request holds a lease, and gives it back), so it is
// not a core.Limiter, cannot join a policy, and is offered by name
// to nothing that picks an algorithm at run time. httplimit.Concurrency is
// its middleware.
//
// # Time and configuration changes
//
// A lease expires at the time of its acquire (or its last extension) plus
// the TTL of the limiter that wrote it. Leases are decided at the clock's
// time, not at the time of the key's last write as the rate algorithms
// are: a clock that steps back only makes leases written at a later
// reading look longer-lived (and an expired lease that no write has
// dropped yet count again until the clock catches up), so it never lets
// more than Limit in. RetryAfter and ResetAfter count from the clock. A
// limiter built with another configuration over the same prefix reads the
// same leases: a lowered Limit bites at once (Remaining is never negative),
// and each lease keeps the expiry it was written with; Extend gives a
// lease the new TTL from now, but never shortens it. State the limiter did
// not write is refused with core.ErrCorruptState.
//
// # In flight
//
// Peek reports, without changing anything, the decision an acquire of
// cost 1 would get now: Limit minus Remaining is the cost in flight (when
// Limit was not lowered below it).
package concurrency

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

//go:embed concurrency.lua
var lua string

// The step's parameters, in the order the scripts take them, then (but
// for a peek) the lease's id, two int64s.
const (
	limit = iota
	ttl
	leaseID
)

// The modes of a call besides engine.ModeAllow (acquire) and
// engine.ModePeek: a release is the lease's refund.
const (
	modeRelease = engine.ModeRefund
	modeExtend  = engine.ModeExtend
)

var spec = engine.NewSpec(engine.Spec{
	Name: "concurrency",
	Params: []engine.Param{
		limit: {Name: "limit", Field: "Limit", Kind: engine.Count},
		ttl:   {Name: "ttl_us", Field: "TTL", Kind: engine.Micros},
	},
	Lua:  lua,
	Step: step,
})

// leaseScript acquires, releases and extends: the step with the lease's id.
var leaseScript = engine.ArgsScript(spec, "concurrency:lease", []string{"lease_a", "lease_b"})

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "ratekit:cc:"

// MaxLimit is the largest Limit New accepts: a key holds one entry per
// unit of cost in flight, about 1 MB in Redis at this size.
const MaxLimit = 10000

// Config configures a concurrency limiter.
type Config struct {
	// Limit is the most cost in flight per key: the sum of the costs of
	// its live leases (the number of leases, when every cost is 1). At
	// most MaxLimit.
	Limit int64
	// TTL is how long a lease lives unless it is released or extended: a
	// bound on how long a crashed or hung holder keeps its slots. Make it
	// longer than the work a lease covers, or Extend the lease while the
	// work goes on. A whole number of microseconds.
	TTL time.Duration
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'. Limiters that share leases share a
	// prefix and a store.
	Prefix string
	// Clock, when set, gives the time of every call, and so the leases'
	// expiries; when nil the store's clock is used (the Redis server's
	// TIME), so that many application servers agree.
	Clock core.Clock
}

// Limiter caps the cost in flight per key. It is safe for concurrent use;
// all its state lives in the store, under the configuration's key prefix.
// The zero Limiter, and a nil *Limiter, cannot decide: every call returns
// an error wrapping core.ErrInvalidConfig, and Limit returns 0.
type Limiter struct {
	e   *engine.Engine
	ttl time.Duration
}

// Lease is a grant of N units of cost on Key, to give back with Release.
// It is plain data: it may be kept, logged or sent to another process,
// which releases or extends it with a limiter of the same prefix and store.
type Lease struct {
	// Key is the user key the lease was acquired on.
	Key string
	// N is the lease's cost.
	N int64
	// ID names the lease: 32 lowercase hex digits, 128 random bits from
	// crypto/rand. A lease with another ID (or Key, or N) frees nothing.
	ID string
}

// New returns a concurrency limiter keeping its leases in store. It sends
// nothing to the store; an error wraps core.ErrInvalidConfig and names the
// field: Limit and TTL must be positive, Limit at most MaxLimit, TTL a
// whole number of microseconds. Its decisions' Window is the TTL, by
// which every lease has come back.
func New(store core.ScriptRunner, cfg Config) (*Limiter, error) {
	l, err := spec.Limit(cfg.Prefix, DefaultPrefix, cfg.Limit, []int64{
		limit: cfg.Limit,
		ttl:   int64(cfg.TTL),
	})
	if err != nil {
		return nil, err
	}
	if cfg.Limit > MaxLimit {
		return nil, fmt.Errorf("%w: Limit %d needs up to %d entries per key, more than MaxLimit (%d)", core.ErrInvalidConfig, cfg.Limit, cfg.Limit, MaxLimit)
	}
	l.Window = cfg.TTL
	e, err := engine.New(engine.Config{Store: store, Clock: cfg.Clock, Limits: []engine.Limit{l}})
	if err != nil {
		return nil, err
	}
	return &Limiter{e: e, ttl: cfg.TTL}, nil
}

// engine returns l's engine: nil for a nil or zero Limiter, whose calls
// then return engine.ErrZero (wrapping core.ErrInvalidConfig).
func (l *Limiter) engine() *engine.Engine {
	if l == nil {
		return nil
	}
	return l.e
}

// Limit returns the configured Limit: every Decision's Limit.
func (l *Limiter) Limit() int64 { return l.engine().MaxCost() }

// TTL returns the configured TTL, the life of a lease from its acquire
// or its last extension.
func (l *Limiter) TTL() time.Duration {
	if l == nil {
		return 0
	}
	return l.ttl
}

// Algorithm returns "concurrency", the name of the limiter's step. It is
// fixed, never derived from a key, so metrics and traces use it as an
// attribute, as they use ratekit.Limiter's.
func (l *Limiter) Algorithm() string { return l.engine().Name() }

// Store returns the store the limiter runs its scripts on, as given to
// New. Stores name themselves with core.StoreNamer.
func (l *Limiter) Store() core.ScriptRunner { return l.engine().Store() }

// Acquire is AcquireN(ctx, key, 1).
func (l *Limiter) Acquire(ctx context.Context, key string) (Lease, core.Decision, error) {
	return l.AcquireN(ctx, key, 1)
}

// AcquireN acquires a lease of cost n on key when the cost in flight plus
// n is at most Limit. Allowed, the Decision's Remaining is what is left
// after it and ResetAfter the time until every lease on key (this one
// included) has expired. Denied, it returns the zero Lease and writes
// nothing, and RetryAfter is the time until enough leases expire for n to
// fit, if none is released before (a release frees room sooner). n must be
// between 1 and Limit (core.ErrInvalidCost); a key must be 1 to
// core.MaxKeyLen bytes (core.ErrInvalidKey). Store failures wrap
// core.ErrStore; a call whose ctx has ended sends nothing.
func (l *Limiter) AcquireN(ctx context.Context, key string, n int64) (Lease, core.Decision, error) {
	if l.engine() == nil {
		return Lease{}, core.Decision{}, engine.ErrZero
	}
	if err := keyspace.CheckKey(key); err != nil {
		return Lease{}, core.Decision{}, err
	}
	if err := params.Cost(n, l.e.MaxCost()); err != nil {
		return Lease{}, core.Decision{}, err
	}
	var id [16]byte
	rand.Read(id[:]) // never fails (crypto/rand)
	a, b := int64(binary.BigEndian.Uint64(id[:8])), int64(binary.BigEndian.Uint64(id[8:]))
	d, err := l.e.RunArgs(ctx, leaseScript, key, n, engine.ModeAllow, a, b)
	if err != nil || !d.Allowed {
		return Lease{}, d, err
	}
	return Lease{Key: key, N: n, ID: hex.EncodeToString(id[:])}, d, nil
}

// Release gives lease back and reports whether it was live: true when its
// slots are free again, false when it had expired, was released already,
// or was never issued on its Key by a limiter with this prefix (a forged
// lease, or another key's): then nothing changes. A zero Lease, or one
// whose ID is not 32 lowercase hex digits, whose N is outside 1 to
// MaxLimit or whose Key is not a key (then wrapping core.ErrInvalidKey
// too), is an error wrapping core.ErrInvalidLease; its message never
// holds the ID, which is a secret. Store failures wrap core.ErrStore; a
// lease whose release failed expires by itself.
func (l *Limiter) Release(ctx context.Context, lease Lease) (bool, error) {
	return l.call(ctx, lease, modeRelease)
}

// Extend makes a live lease live TTL from now (never less than it already
// would) and reports true; for a lease that is not live it reports false
// and changes nothing (see Release). A request that outlasts TTL extends
// its lease before it expires.
func (l *Limiter) Extend(ctx context.Context, lease Lease) (bool, error) {
	return l.call(ctx, lease, modeExtend)
}

func (l *Limiter) call(ctx context.Context, lease Lease, mode engine.Mode) (bool, error) {
	a, b, err := parseLease(lease)
	if err != nil {
		return false, err
	}
	d, err := l.engine().RunArgs(ctx, leaseScript, lease.Key, lease.N, mode, a, b)
	return d.Allowed, err
}

// parseLease checks a lease's form and returns its id as two int64s.
func parseLease(lease Lease) (int64, int64, error) {
	if lease == (Lease{}) {
		return 0, 0, fmt.Errorf("%w: the zero Lease (a denied acquire grants none)", core.ErrInvalidLease)
	}
	var id [16]byte
	if len(lease.ID) != 32 || !lowerHex(lease.ID) {
		// Not the ID itself: it is a secret, and errors reach logs and
		// traces.
		return 0, 0, fmt.Errorf("%w: the ID (%d bytes) is not 32 lowercase hex digits", core.ErrInvalidLease, len(lease.ID))
	}
	hex.Decode(id[:], []byte(lease.ID))
	if lease.N < 1 || lease.N > MaxLimit {
		return 0, 0, fmt.Errorf("%w: N = %d is outside 1 to %d", core.ErrInvalidLease, lease.N, MaxLimit)
	}
	if err := keyspace.CheckKey(lease.Key); err != nil {
		return 0, 0, fmt.Errorf("%w: Key: %w", core.ErrInvalidLease, err)
	}
	return int64(binary.BigEndian.Uint64(id[:8])), int64(binary.BigEndian.Uint64(id[8:])), nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Peek reports the decision Acquire would get on key now, and writes
// nothing (EVALSHA_RO on Redis): Remaining is Limit minus the cost in
// flight (at least 0), RetryAfter, when full, the time until enough
// leases have expired for one more unit to fit (the oldest lease's expiry,
// unless a lowered Limit or Extend keeps more in flight), and ResetAfter
// the time until every lease has.
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.engine().Decide(ctx, key, 1, engine.ModePeek)
}

// Reset deletes every lease on key: the slots are free at once, and the
// leases it deleted are no longer live (releasing one reports false).
func (l *Limiter) Reset(ctx context.Context, key string) error {
	return l.engine().Reset(ctx, key)
}
