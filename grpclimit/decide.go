package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

// The metadata keys of the rate-limit fields: the IETF draft's header
// names (as httplimit sends them) in lower case, as gRPC metadata keys are.
var (
	mdPolicy     = strings.ToLower(ratelimitfield.PolicyName)
	mdState      = strings.ToLower(ratelimitfield.StateName)
	mdRetryAfter = strings.ToLower(ratelimitfield.RetryAfterName)
)

type ctxKey struct{}

// DecisionFromContext returns, in a handler, the decision of
// Config.Limiter (or of the limiter LimiterFor picked) on its call: a
// policy's holds each of its limits' in Limits. With Interceptors
// chained, it is the innermost one's.
func DecisionFromContext(ctx context.Context) (core.Decision, bool) {
	d, ok := ctx.Value(ctxKey{}).(core.Decision)
	return d, ok
}

// grant is an admitted call: its context, and what ends with it (a lease
// to release, a refund to decide).
type grant struct {
	in   *Interceptors
	ctx  context.Context
	call Call
	// lim, key, n and ps refund the call when Counts says it does not
	// count, or when a later step refuses it; lim is nil when there is
	// nothing to refund.
	lim core.Limiter
	key string
	n   int64
	ps  []core.Params
	// limits are the limits the rate-limit fields name.
	limits []ratelimitfield.Limit
	// lease is held while the call runs; stop ends its extensions.
	lease *concurrency.Lease
	stop  func()
}

// admit decides a call to method: nil and the grant when it may run, or
// the status error to answer it with. setHeader sends the rate-limit
// fields.
func (in *Interceptors) admit(ctx context.Context, method string, setHeader func(context.Context, metadata.MD) error) (*grant, error) {
	c := Call{FullMethod: method}
	if p, ok := peer.FromContext(ctx); ok {
		c.Peer = p.Addr
	}
	c.Metadata, _ = metadata.FromIncomingContext(ctx)
	g := &grant{in: in, ctx: ctx, call: c, n: 1}
	if in.cfg.Cost != nil {
		n, err := in.cfg.Cost(ctx, c)
		if err != nil {
			in.report(ctx, c, slog.LevelDebug, "grpclimit: bad request", fmt.Errorf("grpclimit: cost: %w", err))
			return nil, status.Error(codes.InvalidArgument, msgInvalidCost)
		}
		g.n = n
	}
	var retry int64 // Retry-After, when a limit denies
	var err error
	if in.cfg.Limiter != nil || in.cfg.LimiterFor != nil {
		retry, err = in.decide(g)
	}
	if err == nil && in.cfg.Concurrency != nil {
		retry, err = in.acquire(g)
	}
	md := metadata.MD{}
	policies, states := ratelimitfield.Fields(g.limits, retry)
	for i := range policies {
		md.Append(mdPolicy, policies[i])
		md.Append(mdState, states[i])
	}
	if retry > 0 {
		md.Set(mdRetryAfter, strconv.FormatInt(retry, 10))
	}
	if len(md) > 0 {
		// The fields go with the answer, a denial's included, added to
		// those of Interceptors chained before. Failing to send them
		// changes no decision.
		_ = setHeader(ctx, md)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// decide decides g with Config.Limiter, or the limiter LimiterFor picks,
// within Config.Timeout. A denial returns its Retry-After in seconds with
// its status.
func (in *Interceptors) decide(g *grant) (int64, error) {
	lim := in.cfg.Limiter
	if in.cfg.LimiterFor != nil {
		var err error
		if lim, err = in.cfg.LimiterFor(g.ctx, g.call); err == nil && (lim == nil || lim.MaxCost() < 1) {
			err = errors.New("it returned a limiter that cannot decide (nil, or not built by its New)")
		}
		if err != nil {
			in.report(g.ctx, g.call, slog.LevelError, "grpclimit: LimiterFor failed, call answered Internal", fmt.Errorf("grpclimit: LimiterFor: %w", err))
			return 0, status.Error(codes.Internal, msgMisconfigured)
		}
	}
	var ps []core.Params
	if in.cfg.Params != nil {
		var err error
		if ps, err = in.cfg.Params(g.ctx, g.call); err != nil {
			in.report(g.ctx, g.call, slog.LevelError, "grpclimit: Params failed, call answered Internal", fmt.Errorf("grpclimit: Params: %w", err))
			return 0, status.Error(codes.Internal, msgMisconfigured)
		}
	}
	key, err := in.key(g, in.cfg.Key, in.cfg.Name)
	if err != nil {
		return 0, err
	}
	n := g.n
	d, err := in.calls.Do(g.ctx, func(ctx context.Context) (core.Decision, error) {
		return lim.Decide(ctx, core.Request{Key: key, N: n, Params: ps})
	})
	if err != nil {
		return 0, in.failed(g, err, in.cfg.Name)
	}
	if shadow := d.DeniedBy(true); d.Allowed && shadow != nil {
		in.log(g.ctx, &in.shadow, slog.LevelInfo, "grpclimit: shadow limits would have denied the call", slog.String("method", g.call.FullMethod), slog.Any("limits", shadow))
	}
	g.limits = ratelimitfield.Limits(in.cfg.Name, in.cfg.Window, d)
	g.ctx = context.WithValue(g.ctx, ctxKey{}, d)
	if !d.Allowed {
		return in.deny(d)
	}
	g.lim, g.key, g.ps = lim, key, ps
	return 0, nil
}

// deny returns the status of a call the limiter denied with d, naming
// the limits that denied it (a policy's) or the limiter (Config.Name),
// and the penalty block, and its Retry-After in seconds.
func (in *Interceptors) deny(d core.Decision) (int64, error) {
	denied := d.DeniedBy(false)
	if d.Limits == nil || (len(denied) == 0 && !d.Blocked) {
		return denial(codes.ResourceExhausted, d.RetryAfter, "limit "+in.cfg.Name, []string{in.cfg.Name})
	}
	why := "limit " + strings.Join(denied, ", ")
	subjects := denied
	if d.Blocked {
		why = "blocked after exceeding a limit"
		if len(denied) > 0 {
			why += " (" + strings.Join(denied, ", ") + ")"
		}
		subjects = append(subjects, "blocked")
	}
	return denial(codes.ResourceExhausted, d.RetryAfter, why, subjects)
}

// denial returns the status of a denied call, with the wait as RetryInfo
// and the limits that denied as QuotaFailure violations, and its
// Retry-After in seconds.
func denial(code codes.Code, retry time.Duration, why string, limits []string) (int64, error) {
	secs := ratelimitfield.RetryAfter(retry)
	st := status.New(code, "rate limit exceeded ("+why+"), retry in "+strconv.FormatInt(secs, 10)+"s")
	qf := &errdetails.QuotaFailure{}
	for _, l := range limits {
		qf.Violations = append(qf.Violations, &errdetails.QuotaFailure_Violation{Subject: "ratekit:" + l, Description: "rate limit exceeded"})
	}
	if with, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(max(retry, 0))}, qf); err == nil {
		st = with
	}
	return secs, st.Err()
}

// acquire takes g's concurrency lease, or denies g (returning its
// Retry-After in seconds with its status). A call it refuses is refunded
// to its limiter.
func (in *Interceptors) acquire(g *grant) (int64, error) {
	cc := in.cfg.Concurrency
	keyer := in.cfg.Key
	if cc.Key != nil {
		keyer = cc.Key
	}
	key, err := in.key(g, keyer, cc.Name)
	if err != nil {
		g.refund()
		return 0, err
	}
	// A deadline, not an abandoned call: see Config.Timeout.
	actx, cancel := context.WithTimeout(g.ctx, in.cfg.Timeout)
	lease, d, err := cc.Limiter.AcquireN(actx, key, g.n)
	cancel()
	if err != nil {
		if err := in.failed(g, err, cc.Name); err != nil {
			g.refund()
			return 0, err
		}
		return 0, nil // fail open: no lease
	}
	if !d.Allowed {
		g.refund()
		return denial(cc.Code, d.RetryAfter, "concurrency "+cc.Name, []string{cc.Name})
	}
	g.lease = &lease
	g.stop = in.keepAlive(g, lease)
	return 0, nil
}

// keepAlive extends lease every Concurrency.ExtendEvery until the
// returned stop is called or the client goes away.
func (in *Interceptors) keepAlive(g *grant, lease concurrency.Lease) (stop func()) {
	cc := in.cfg.Concurrency
	every := cc.ExtendEvery
	if every <= 0 {
		return func() {}
	}
	var mu sync.Mutex // guards t and stopped
	stopped := false
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		if g.ctx.Err() != nil {
			return // the client went away: the lease is no longer extended
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(g.ctx), cc.ReleaseTimeout)
		live, err := cc.Limiter.Extend(ctx, lease)
		cancel()
		if err != nil {
			in.report(g.ctx, g.call, slog.LevelError, "grpclimit: extending a lease failed, it may expire while the call runs", fmt.Errorf("grpclimit: %s: extend: %w", cc.Name, err))
		} else if !live {
			in.report(g.ctx, g.call, slog.LevelDebug, "grpclimit: a lease expired while its call ran", fmt.Errorf("grpclimit: %s: the lease is no longer live", cc.Name))
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t.Reset(every)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// end ends an admitted call that returned err (or panicked): its lease is
// released, and with Counts a call that does not count is refunded.
func (g *grant) end(panicked bool, err error) {
	if g.lease != nil {
		g.stop()
		cc := g.in.cfg.Concurrency
		ctx, cancel := context.WithTimeout(context.WithoutCancel(g.ctx), cc.ReleaseTimeout)
		live, rerr := cc.Limiter.Release(ctx, *g.lease)
		switch {
		case rerr != nil:
			g.in.report(g.ctx, g.call, slog.LevelError, "grpclimit: releasing a lease failed, it expires after its TTL", fmt.Errorf("grpclimit: %s: release: %w", cc.Name, rerr))
		case !live:
			g.in.report(g.ctx, g.call, slog.LevelWarn, "grpclimit: a lease expired before its call ended: the call outlasted its TTL", fmt.Errorf("grpclimit: %s: the lease had expired", cc.Name))
		}
		cancel()
	}
	if g.in.cfg.Counts != nil && !panicked && !g.in.cfg.Counts(status.Code(err)) {
		g.refund()
	}
}

// refund gives the call's cost back to its limiter, within
// Config.Timeout: it was counted, but is not served or does not count.
// The limits the fields name are then what the refund reports, so that
// the fields of a call refused after its limiter allowed it say what it
// left behind: nothing.
func (g *grant) refund() {
	if g.lim == nil {
		return
	}
	r := core.Request{Key: g.key, N: g.n, Op: core.OpRefund, Params: g.ps}
	lim := g.lim
	d, err := g.in.calls.Do(context.WithoutCancel(g.ctx), func(ctx context.Context) (core.Decision, error) {
		return lim.Decide(ctx, r)
	})
	if err != nil {
		g.in.report(g.ctx, g.call, slog.LevelError, "grpclimit: refund failed, the call stays counted", fmt.Errorf("grpclimit: refund: %w", err))
	} else {
		g.limits = ratelimitfield.Limits(g.in.cfg.Name, g.in.cfg.Window, d)
	}
	g.lim = nil
}

// key returns g's key by keyer, or the status to answer it with
// (InvalidArgument for the client's error, Internal for a misconfigured
// Keyer). name names the limit in errors.
func (in *Interceptors) key(g *grant, keyer Keyer, name string) (string, error) {
	key, err := keyer.Key(g.ctx, g.call)
	if err == nil {
		return key, nil
	}
	err = fmt.Errorf("grpclimit: %s: key: %w", name, err)
	switch {
	case errors.Is(err, core.ErrInvalidConfig):
		in.report(g.ctx, g.call, slog.LevelError, "grpclimit: Keyer misconfigured, call answered Internal", err)
	case errors.Is(err, ErrRemoteNotIP):
		// Every call fails alike: one line now and then, on a pacer of
		// its own, so that store failures still get theirs.
		if in.cfg.OnError != nil {
			in.cfg.OnError(g.ctx, g.call, err)
		} else {
			in.log(g.ctx, &in.remote, slog.LevelError, "grpclimit: ClientIP on a listener without IP addresses (a unix socket?), call answered Internal: set Config.Key", slog.String("method", g.call.FullMethod), slog.Any("error", err))
		}
	default:
		in.report(g.ctx, g.call, slog.LevelDebug, "grpclimit: bad request", err)
		return "", status.Error(codes.InvalidArgument, msgBadKey)
	}
	return "", status.Error(codes.Internal, msgMisconfigured)
}

// failed reports a limiter's error and returns the status to answer the
// call with, or nil when it is to be served regardless (fail open):
// InvalidArgument for a key or cost the limiter refuses, the context's
// own status when the client went away, Unavailable with FailClosed.
// name names the limit in errors.
func (in *Interceptors) failed(g *grant, err error, name string) error {
	err = fmt.Errorf("grpclimit: %s: %w", name, err)
	switch {
	case errors.Is(err, core.ErrInvalidKey):
		in.report(g.ctx, g.call, slog.LevelDebug, "grpclimit: bad request", err)
		return status.Error(codes.InvalidArgument, msgInvalidKey)
	case errors.Is(err, core.ErrInvalidCost):
		in.report(g.ctx, g.call, slog.LevelDebug, "grpclimit: bad request", err)
		return status.Error(codes.InvalidArgument, msgInvalidCost)
	}
	if cerr := g.ctx.Err(); cerr != nil {
		in.report(g.ctx, g.call, slog.LevelDebug, "grpclimit: limiter call cut short, the client went away", err)
		return status.FromContextError(cerr).Err()
	}
	if in.cfg.FailClosed {
		in.report(g.ctx, g.call, slog.LevelError, "grpclimit: limiter failed, call answered Unavailable (FailClosed)", err)
		return status.Error(codes.Unavailable, msgUnavailable)
	}
	in.report(g.ctx, g.call, slog.LevelError, "grpclimit: limiter failed, call served without this limit (fail open)", err)
	return nil
}

// report hands err to OnError or, without one, logs msg and err at level:
// at slog.LevelError, at most one line every 10 seconds.
func (in *Interceptors) report(ctx context.Context, c Call, level slog.Level, msg string, err error) {
	if in.cfg.OnError != nil {
		in.cfg.OnError(ctx, c, err)
		return
	}
	if level < slog.LevelError {
		in.logger().LogAttrs(ctx, level, msg, slog.String("method", c.FullMethod), slog.Any("error", err))
		return
	}
	in.log(ctx, &in.errors, level, msg, slog.String("method", c.FullMethod), slog.Any("error", err))
}

func (in *Interceptors) logger() *slog.Logger {
	if in.cfg.Logger == nil {
		return slog.Default()
	}
	return in.cfg.Logger
}

// log logs a line paced by p: at most one every 10 s, each counting the
// lines left out since the one before.
func (in *Interceptors) log(ctx context.Context, p interface {
	Allow(time.Time) (bool, int64)
}, level slog.Level, msg string, attrs ...slog.Attr) {
	logger := in.logger()
	if !logger.Enabled(ctx, level) {
		return
	}
	ok, suppressed := p.Allow(in.now())
	if !ok {
		return
	}
	logger.LogAttrs(ctx, level, msg, append(attrs, slog.Int64("suppressed", suppressed))...)
}
