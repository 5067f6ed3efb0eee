package grpclimit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/callcheck"
	"github.com/ratekit/ratekit/internal/logpace"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

// Limiter is the one method the interceptors need of a rate limiter; every
// ratekit limiter has it.
type Limiter interface {
	AllowN(ctx context.Context, key string, n int64) (core.Decision, error)
}

// Policy is one limiter the interceptors apply, named in the metadata.
type Policy struct {
	// Name is the policy's name in ratelimit-policy and ratelimit:
	// printable ASCII, at most 64 bytes. Empty means "default".
	Name string
	// Limiter decides the calls. Required: New refuses nil, a nil pointer
	// (a typed nil) included.
	Limiter Limiter
	// Window, when set, is advertised as w= (whole seconds, rounded up),
	// beside q, which is the Limiter's Decision.Limit: it must be the time
	// in which the Limiter gives back its whole Limit, so that q per w is
	// the rate it enforces. For a fixed or sliding window, its Window; for
	// GCRA and the token bucket, whose Limit is the burst (the capacity),
	// the time a burst takes to come back: gcra.Config{Rate: 10, Period:
	// time.Minute, Burst: 2} is q=2 with a Window of 12 s (2 per 12 s is
	// 10 a minute), not a minute, which would advertise 2 a minute. New
	// cannot check it: a Limiter says its Limit only when it decides.
	Window time.Duration
	// Key, when set, replaces Config.Key for this policy: for example
	// Method{} for a limit shared by all clients of a method.
	Key Keyer
}

// PolicyLimiter is what the interceptors need of a ratekit.Policy:
// *ratekit.Policy has it, and so has otelratekit's Policy, which reports
// its decisions.
type PolicyLimiter interface {
	AllowN(ctx context.Context, key string, n int64) (ratekit.PolicyDecision, error)
	Refund(ctx context.Context, key string, n int64) (ratekit.PolicyDecision, error)
}

// PolicyFunc picks the policy of a call: its tier (for example, one of a
// ratekit.Tiers). An error answers codes.Internal and is logged as the
// server's failure.
type PolicyFunc func(ctx context.Context, c Call) (PolicyLimiter, error)

// ConcurrencyLimiter is what the interceptors need of a concurrency
// limiter, as httplimit.ConcurrencyLimiter: *concurrency.Limiter has it,
// and so has otelratekit's Concurrency, which reports its leases.
type ConcurrencyLimiter interface {
	AcquireN(ctx context.Context, key string, n int64) (concurrency.Lease, core.Decision, error)
	Release(ctx context.Context, lease concurrency.Lease) (bool, error)
	Extend(ctx context.Context, lease concurrency.Lease) (bool, error)
}

// Concurrency caps the calls in flight per key, as httplimit.Concurrency
// does for HTTP: each call acquires a lease of its cost before its handler
// runs (a stream, when it opens) and releases it when the handler returns
// or panics, even if the client went away. A full key is denied like a
// rate limit, with the time until enough leases expire as RetryInfo (an
// upper bound: a release frees a slot sooner).
type Concurrency struct {
	// Name names the limit in the denial: printable ASCII, at most 64
	// bytes. Empty means "concurrency".
	Name string
	// Limiter hands out the leases. Required: New refuses nil, a nil
	// pointer (a typed nil) included.
	Limiter ConcurrencyLimiter
	// Key, when set, replaces Config.Key.
	Key Keyer
	// Code answers a call refused because its key is full:
	// codes.ResourceExhausted (the default, when 0, which is codes.OK) or
	// codes.Unavailable. Either carries RetryInfo.
	Code codes.Code
	// ExtendEvery, when positive, extends the lease at this interval while
	// the handler runs and its client is connected, for calls (streams,
	// above all) that may outlast the lease's TTL: a third of the TTL is a
	// good choice. Zero never extends: a call that outlasts the TTL loses
	// its slot to the next one.
	ExtendEvery time.Duration
	// ReleaseTimeout bounds a release (and an extension), which does not
	// use the call's context: 0 means 5 s. A lease whose release failed
	// expires by itself after its TTL.
	ReleaseTimeout time.Duration
}

// Config configures the interceptors.
type Config struct {
	// Policy decides every call against all of its limits at once, in one
	// call to the store: counted by all of them or by none. Each enforced
	// limit is one item of ratelimit-policy and ratelimit; shadow limits
	// are left out (they are not enforced, and a client would throttle
	// itself on them). A denial names the limits that denied. At most one of Policy,
	// PolicyFor and Policies is set.
	Policy PolicyLimiter
	// PolicyFor picks each call's policy (its tier), as Policy.
	PolicyFor PolicyFunc
	// Policies are applied in order; a call must pass all of them. A
	// denial stops the chain: the policies before it have counted the
	// call (use Policy to decide several limits at once). Policies never
	// refund, since a Policy's Limiter need only decide (AllowN): a call
	// refused after a policy allowed it, by a later policy, a key error,
	// FailClosed or Concurrency, stays counted by that policy, and the
	// fields say so.
	Policies []Policy
	// Concurrency, when set, caps the calls in flight per key; it applies
	// after the rate limits, to the calls they allow. A call it refuses
	// (its key full or unreadable, or its store failing with FailClosed)
	// is refunded to Policy or PolicyFor, so that a call counts only when
	// it runs, and the fields say what the refund left; Policies are not
	// refunded (see Policies). At least one of Policy, PolicyFor, Policies
	// and Concurrency is set.
	Concurrency *Concurrency
	// Key returns the call's key; nil means ClientIP{} (the peer address,
	// no proxy trusted, IPv6 grouped by /64). New checks the settings of
	// a ClientIP or Metadata given here or in a Policy or Concurrency.
	Key Keyer
	// Cost returns a call's cost; nil means 1. An error answers
	// codes.InvalidArgument.
	Cost func(ctx context.Context, c Call) (int64, error)
	// Skip, when set, exempts the calls it returns true for: health
	// checks, reflection.
	Skip func(fullMethod string) bool
	// Logger receives the errors the interceptors meet, unless OnError is
	// set; nil means slog.Default(). The server's failures (a store that
	// is down, a Keyer or PolicyFor misconfigured, a ClientIP on a
	// listener without IP addresses) are logged at
	// slog.LevelError, at most one line every 10 seconds, each counting in
	// its "suppressed" attribute the errors left out since the one before.
	// The client's errors (a key or cost that cannot be read or that the
	// limiter refuses) and calls cut short by the client are logged at
	// slog.LevelDebug, every one. Shadow limits that would have denied are
	// logged at slog.LevelInfo, paced as errors are.
	Logger *slog.Logger
	// OnError, when set, receives every error instead of the Logger, with
	// its call: store errors (wrapping core.ErrStore when they come from a
	// ratekit store), key and cost errors. It is called from the call's
	// goroutine and must be safe for concurrent use.
	OnError func(ctx context.Context, c Call, err error)
	// FailClosed answers codes.Unavailable when the store fails; by
	// default the call is served (fail open).
	FailClosed bool
	// Counts, with Policy or PolicyFor, decides after the handler whether
	// a call counts, by the code it ended with: one that does not is
	// refunded (ratekit.Policy.Refund). For example, to count only failed
	// logins:
	//
	//	Counts: func(c codes.Code) bool { return c == codes.Unauthenticated },
	//
	// A handler that panics counts. nil counts every call.
	Counts func(code codes.Code) bool
}

// Interceptors are the server interceptors New returns: install both, so
// that unary and streaming calls are limited alike. Interceptors New did
// not make (a zero value, or nil) limit nothing, and so let nothing
// through: they answer every call Internal without running its handler.
type Interceptors struct {
	cfg Config
	now func() time.Time
	// errors paces the lines logged for the server's failures, shadow
	// those for shadow limits that would have denied, remote those for
	// peers that are not IP addresses.
	errors, shadow, remote logpace.Pacer
}

// New checks cfg and returns the interceptors, or an error wrapping
// core.ErrInvalidConfig that names the bad field.
func New(cfg Config) (*Interceptors, error) {
	set := 0
	for _, b := range []bool{cfg.Policy != nil, cfg.PolicyFor != nil, len(cfg.Policies) > 0} {
		if b {
			set++
		}
	}
	if cfg.Policy != nil {
		if why := callcheck.Unusable(cfg.Policy); why != "" {
			return nil, fmt.Errorf("%w: grpclimit: Policy is %s", core.ErrInvalidConfig, why)
		}
	}
	if set > 1 {
		return nil, fmt.Errorf("%w: grpclimit: more than one of Policy, PolicyFor and Policies is set", core.ErrInvalidConfig)
	}
	if cfg.Counts != nil && cfg.Policy == nil && cfg.PolicyFor == nil {
		return nil, fmt.Errorf("%w: grpclimit: Counts needs Policy or PolicyFor, which can refund", core.ErrInvalidConfig)
	}
	if set == 0 && cfg.Concurrency == nil {
		return nil, fmt.Errorf("%w: grpclimit: no limit: set Policy, PolicyFor, Policies or Concurrency", core.ErrInvalidConfig)
	}
	cfg.Policies = slices.Clone(cfg.Policies)
	names := ratelimitfield.Names{}
	for i := range cfg.Policies {
		p := &cfg.Policies[i]
		if why := callcheck.Unusable(p.Limiter); why != "" {
			return nil, fmt.Errorf("%w: grpclimit: Policies[%d].Limiter is %s", core.ErrInvalidConfig, i, why)
		}
		if p.Key != nil {
			k, err := checkKeyer(p.Key)
			if err != nil {
				return nil, fmt.Errorf("%w: grpclimit: Policies[%d].Key: %w", core.ErrInvalidConfig, i, err)
			}
			p.Key = k
		}
		if err := names.Check(i, &p.Name, p.Window); err != nil {
			return nil, fmt.Errorf("%w: grpclimit: %w", core.ErrInvalidConfig, err)
		}
	}
	if c := cfg.Concurrency; c != nil {
		cc := *c
		if why := callcheck.Unusable(cc.Limiter); why != "" {
			return nil, fmt.Errorf("%w: grpclimit: Concurrency.Limiter is %s", core.ErrInvalidConfig, why)
		}
		if cc.Name == "" {
			cc.Name = "concurrency"
		}
		if err := ratelimitfield.CheckName(cc.Name); err != nil {
			return nil, fmt.Errorf("%w: grpclimit: Concurrency.Name: %w", core.ErrInvalidConfig, err)
		}
		if cc.Key != nil {
			k, err := checkKeyer(cc.Key)
			if err != nil {
				return nil, fmt.Errorf("%w: grpclimit: Concurrency.Key: %w", core.ErrInvalidConfig, err)
			}
			cc.Key = k
		}
		if cc.ReleaseTimeout < 0 || cc.ExtendEvery < 0 {
			return nil, fmt.Errorf("%w: grpclimit: Concurrency.ReleaseTimeout and ExtendEvery must not be negative", core.ErrInvalidConfig)
		}
		switch cc.Code {
		case codes.OK:
			cc.Code = codes.ResourceExhausted
		case codes.ResourceExhausted, codes.Unavailable:
		default:
			return nil, fmt.Errorf("%w: grpclimit: Concurrency.Code %v is not ResourceExhausted or Unavailable", core.ErrInvalidConfig, cc.Code)
		}
		if cc.ReleaseTimeout == 0 {
			cc.ReleaseTimeout = 5 * time.Second
		}
		cfg.Concurrency = &cc
	}
	if cfg.Key == nil {
		cfg.Key = ClientIP{}
	}
	k, err := checkKeyer(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: grpclimit: Key: %w", core.ErrInvalidConfig, err)
	}
	cfg.Key = k
	return &Interceptors{cfg: cfg, now: time.Now}, nil
}

// built reports whether New made in. Interceptors it did not make (a zero
// value, or nil) hold no limit: rather than let every call through, they
// answer each one Internal (errUnbuilt), never running its handler.
func (in *Interceptors) built() bool { return in != nil && in.now != nil }

var errUnbuilt = status.Error(codes.Internal, "rate limiter misconfigured")

// Unary returns the unary server interceptor: each call is decided before
// its handler runs.
func (in *Interceptors) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		if !in.built() {
			return nil, errUnbuilt
		}
		if in.cfg.Skip != nil && in.cfg.Skip(info.FullMethod) {
			return handler(ctx, req)
		}
		g, err := in.admit(ctx, info.FullMethod, grpc.SetHeader)
		if err != nil {
			return nil, err
		}
		panicked := true
		defer func() { g.end(panicked, err) }()
		resp, err = handler(g.ctx, req)
		panicked = false
		return resp, err
	}
}

// Stream returns the stream server interceptor: each stream is decided
// once, when it opens, as one call (and holds its concurrency lease until
// it ends); the messages on it are not decided one by one.
func (in *Interceptors) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		if !in.built() {
			return errUnbuilt
		}
		if in.cfg.Skip != nil && in.cfg.Skip(info.FullMethod) {
			return handler(srv, ss)
		}
		g, err := in.admit(ss.Context(), info.FullMethod, func(_ context.Context, md metadata.MD) error { return ss.SetHeader(md) })
		if err != nil {
			return err
		}
		panicked := true
		defer func() { g.end(panicked, err) }()
		err = handler(srv, &stream{ServerStream: ss, ctx: g.ctx})
		panicked = false
		return err
	}
}

// stream is a ServerStream whose context carries the decision.
type stream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *stream) Context() context.Context { return s.ctx }
