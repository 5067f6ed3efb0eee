package grpclimit

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/bound"
	"github.com/ratekit/ratekit/internal/logpace"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

// DefaultTimeout is Config.Timeout when it is 0: the longest a decision
// (or a refund) may take before the call is served without it (or
// answered Unavailable with FailClosed), as httplimit.DefaultTimeout. A
// Redis round trip takes well under a millisecond; the bound is for a
// store that hangs.
const DefaultTimeout = 100 * time.Millisecond

// maxInFlight is the most decisions and refunds of one Interceptors that
// may run at once, counting those abandoned at their timeout that the
// store has not finished: a call beyond it fails at once, as a store
// failure.
const maxInFlight = 1000

// ConcurrencyLimiter is what the interceptors need of a concurrency
// limiter, as httplimit.ConcurrencyLimiter: *concurrency.Limiter has it,
// and so has otelratekit's Concurrency, which reports its leases. Limit
// is 0 for a limiter that cannot decide (nil, or not built by its New),
// which New refuses.
type ConcurrencyLimiter interface {
	AcquireN(ctx context.Context, key string, n int64) (concurrency.Lease, core.Decision, error)
	Release(ctx context.Context, lease concurrency.Lease) (bool, error)
	Extend(ctx context.Context, lease concurrency.Lease) (bool, error)
	Limit() int64
}

var _ ConcurrencyLimiter = (*concurrency.Limiter)(nil)

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
	// Limiter hands out the leases. Required: New refuses nil, and a
	// limiter whose Limit is below 1 (a nil pointer, or one not built by
	// its New).
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
	// Limiter decides every call: any core.Limiter (an algorithm's
	// limiter, a policy of several limits decided at once, a wrapper of
	// one). At most one of Limiter and LimiterFor is set; at least one of
	// them or Concurrency.
	Limiter core.Limiter
	// LimiterFor picks each call's limiter: its tier, say (one of a
	// ratekit.Tiers). An error answers codes.Internal and is logged as the
	// server's failure.
	LimiterFor func(ctx context.Context, c Call) (core.Limiter, error)
	// Params, when set, returns the limits each call is decided against
	// instead of the limiter's own (core.Request.Params): a customer's
	// contract, say, read from a cache of what a database holds, built
	// with an algorithm package's NewParams. A nil result keeps the
	// limiter's own. The decision, and so the ratelimit fields, report the
	// limits applied; a refund (Counts, Concurrency) gives the same. An
	// error answers codes.Internal and is logged as the server's failure.
	Params func(ctx context.Context, c Call) ([]core.Params, error)
	// Name names the limiter's item in ratelimit-policy and ratelimit, and
	// the limit in a denial: printable ASCII, at most 64 bytes; "default"
	// when empty. A policy's items are named after its limits instead.
	Name string
	// Window, when positive, is advertised as w (whole seconds, rounded
	// up) for a limiter that is not a policy, instead of the Window of its
	// decisions (core.Decision.Window: the time in which it gives back its
	// whole Limit, from its own configuration). A policy's items carry
	// each limit's own Window.
	Window time.Duration
	// Key returns the call's key; nil means ClientIP{} (the peer address,
	// no proxy trusted, IPv6 grouped by /64). New checks the settings of
	// a ClientIP or Metadata given here or in Concurrency.
	Key Keyer
	// Cost returns a call's cost; nil means 1. An error answers
	// codes.InvalidArgument.
	Cost func(ctx context.Context, c Call) (int64, error)
	// Skip, when set, exempts the calls it returns true for: health
	// checks, reflection.
	Skip func(fullMethod string) bool
	// Counts, with Limiter or LimiterFor, decides after the handler
	// whether a call counts, by the code it ended with: one that does not
	// is refunded (core.Limiter's Refund). For example, to count only
	// failed logins:
	//
	//	Counts: func(c codes.Code) bool { return c == codes.Unauthenticated },
	//
	// A handler that panics counts. nil counts every call.
	Counts func(code codes.Code) bool
	// Concurrency, when set, caps the calls in flight per key; it applies
	// after the rate limit, to the calls it allows. A call it refuses (its
	// key full or unreadable, or its store failing with FailClosed) is
	// refunded to the Limiter, so that a call counts only when it runs,
	// and the fields say what the refund left.
	Concurrency *Concurrency
	// Timeout bounds every decision and refund, whatever the store's
	// client does with contexts and whatever the call's deadline: a store
	// that hangs costs a call at most Timeout, after which the call is
	// served (or answered Unavailable with FailClosed). A Concurrency
	// lease's acquire runs with a context deadline of Timeout, but is not
	// abandoned at it (an acquire abandoned after the store granted it
	// would hold its slot until its TTL). 0 means DefaultTimeout; it must
	// not be negative. For a limit of its own while the store is down,
	// give a failsafe.Limiter with FailLocal and a shorter Timeout as
	// Limiter.
	Timeout time.Duration
	// Logger receives the errors the interceptors meet, unless OnError is
	// set; nil means slog.Default(). The server's failures (a store that
	// is down, too slow or refuses the password, a Keyer or LimiterFor
	// misconfigured, a ClientIP on a listener without IP addresses) are
	// logged at slog.LevelError, at most one line every 10 seconds, each
	// counting in its "suppressed" attribute the errors left out since the
	// one before. The client's errors (a key or cost that cannot be read
	// or that the limiter refuses) and calls cut short by the client are
	// logged at slog.LevelDebug, every one. Shadow limits that would have
	// denied are logged at slog.LevelInfo, paced as errors are. Clients
	// get a short message of their own, never the error.
	Logger *slog.Logger
	// OnError, when set, receives every error instead of the Logger, with
	// its call: store errors (wrapping core.ErrStore when they come from a
	// ratekit store), key and cost errors. It is called from the call's
	// goroutine and must be safe for concurrent use.
	OnError func(ctx context.Context, c Call, err error)
	// FailClosed answers codes.Unavailable when the store fails; by
	// default the call is served (fail open).
	FailClosed bool
}

// Interceptors are the server interceptors New returns: install both, so
// that unary and streaming calls are limited alike. Interceptors New did
// not make (a zero value, or nil) limit nothing, and so let nothing
// through: they answer every call Internal without running its handler.
type Interceptors struct {
	cfg   Config
	now   func() time.Time
	calls bound.Calls
	// errors paces the lines logged for the server's failures, shadow
	// those for shadow limits that would have denied, remote those for
	// peers that are not IP addresses.
	errors, shadow, remote logpace.Pacer
}

// New checks cfg and returns the interceptors, or an error wrapping
// core.ErrInvalidConfig that names the bad field. To apply limiters of
// different keys (one per client, one for all clients of a method),
// chain several Interceptors (grpc.ChainUnaryInterceptor and
// grpc.ChainStreamInterceptor): each adds its items to the rate-limit
// fields, and a call must pass all of them; an outer one has counted the
// call when an inner one denies it. To decide several limits of one key
// at once, counted by all or by none, give a policy (ratekit.NewPolicy).
func New(cfg Config) (*Interceptors, error) {
	switch {
	case cfg.Limiter != nil && cfg.LimiterFor != nil:
		return nil, fmt.Errorf("%w: grpclimit: set at most one of Limiter and LimiterFor", core.ErrInvalidConfig)
	case cfg.Limiter != nil && cfg.Limiter.MaxCost() < 1:
		return nil, fmt.Errorf("%w: grpclimit: Limiter cannot decide (nil, or not built by its New)", core.ErrInvalidConfig)
	case cfg.Limiter == nil && cfg.LimiterFor == nil && cfg.Concurrency == nil:
		return nil, fmt.Errorf("%w: grpclimit: no limit: set Limiter, LimiterFor or Concurrency", core.ErrInvalidConfig)
	case cfg.Counts != nil && cfg.Limiter == nil && cfg.LimiterFor == nil:
		return nil, fmt.Errorf("%w: grpclimit: Counts needs Limiter or LimiterFor, whose calls it refunds", core.ErrInvalidConfig)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: grpclimit: Timeout is negative", core.ErrInvalidConfig)
	case cfg.Window < 0:
		return nil, fmt.Errorf("%w: grpclimit: Window is negative", core.ErrInvalidConfig)
	}
	if cfg.Name == "" {
		cfg.Name = ratelimitfield.DefaultName
	}
	if err := ratelimitfield.CheckName(cfg.Name); err != nil {
		return nil, fmt.Errorf("%w: grpclimit: Name: %w", core.ErrInvalidConfig, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if c := cfg.Concurrency; c != nil {
		cc := *c
		if cc.Limiter == nil || cc.Limiter.Limit() < 1 {
			return nil, fmt.Errorf("%w: grpclimit: Concurrency.Limiter is nil or cannot decide (not built by its New)", core.ErrInvalidConfig)
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
	in := &Interceptors{cfg: cfg, now: time.Now}
	in.calls = bound.Calls{Timeout: cfg.Timeout, Max: maxInFlight}
	return in, nil
}

// built reports whether New made in. Interceptors it did not make (a zero
// value, or nil) hold no limit: rather than let every call through, they
// answer each one Internal (errUnbuilt), never running its handler.
func (in *Interceptors) built() bool { return in != nil && in.now != nil }

// The short messages clients get; the error itself goes to the log or
// OnError.
const (
	msgMisconfigured = "rate limiter misconfigured"
	msgUnavailable   = "rate limiter unavailable"
	msgBadKey        = "bad request: missing or invalid rate limit key"
	msgInvalidKey    = "bad request: invalid rate limit key"
	msgInvalidCost   = "bad request: invalid request cost"
)

var errUnbuilt = status.Error(codes.Internal, msgMisconfigured)

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
