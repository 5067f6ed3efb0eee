// Package grpclimit is gRPC server interceptors over any ratekit limiter,
// and a client interceptor that honours their retry advice. It is a
// module of its own (github.com/ratekit/ratekit/grpclimit), so that a
// program without gRPC never carries it.
//
//	lim, err := grpclimit.New(grpclimit.Config{Name: "api", Limiter: limiter})
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(lim.Unary()), grpc.ChainStreamInterceptor(lim.Stream()))
//
// It mirrors httplimit. A call is keyed by client address by default
// ([ClientIP], behind trusted proxies that set x-forwarded-for or another
// metadata key), or by a metadata value ([Metadata], bounded in length),
// by method ([Method]), by several of these ([Join]) or by a [Keyer] of
// your own. Config.Limiter is any core.Limiter; Config.LimiterFor picks
// one per call (its tier). A policy (ratekit.NewPolicy) decides every call
// against all its limits at once, counted by all of them or by none, with
// shadow limits and penalty blocks; Config.Counts refunds the calls that
// should not count, by status code; a [Concurrency] limit holds a lease
// while the call runs. A stream is decided once, when it opens. Limits of
// different keys (per client, for all clients of a method) are
// Interceptors chained one after another (grpc.ChainUnaryInterceptor,
// grpc.ChainStreamInterceptor): each adds its items to the fields.
//
// Every answer carries the rate-limit fields of the IETF draft that
// httplimit sends as headers, as header metadata in lower case:
//
//	ratelimit-policy: "api";q=100;w=60
//	ratelimit: "api";r=42;t=17
//
// one value per limit, written as httplimit writes them: q is the limit
// (the Decision's Limit), w its window in seconds (the Decision's Window,
// the time in which the limiter gives back its whole Limit, from its own
// configuration; or Config.Window), r what remains, and t the seconds
// until more quota is available, on a denial never later than
// retry-after (equal to it for the limit that denied; values added by
// Interceptors chained before the one that denied were written when they
// allowed the call); no Integer is above
// 999999999999999. Each enforced limit of a policy is one value, with its
// own w; shadow limits are left out (a client would throttle itself on a
// limit that is not enforced), and the calls they would have denied are
// logged at slog.LevelInfo. A denied call gets codes.ResourceExhausted,
// with the exact wait in an errdetails.RetryInfo detail, the limits that
// denied in an errdetails.QuotaFailure (one violation each, subject
// "ratekit:" and the limit's name, or "ratekit:blocked" for a penalty
// block), and retry-after (whole seconds, rounded up, never 0) in the
// metadata. [UnaryClientInterceptor] waits the RetryInfo delay and calls
// again, within the call's deadline.
//
// Every decision and refund is bounded by Config.Timeout (DefaultTimeout,
// 100 ms, when 0), whatever the store's client does with contexts and
// whatever the call's deadline: a store that hangs costs a call at most
// the timeout. When the store fails, the call is served (fail open) or,
// with FailClosed, answered codes.Unavailable; never in silence: the
// error goes to Config.OnError or to Config.Logger (slog.Default() when
// nil) at slog.LevelError, at most one line every 10 seconds, as httplimit
// does. A key or cost that cannot be read is the client's error:
// codes.InvalidArgument, logged at slog.LevelDebug. Clients get a short
// status message of their own ("bad request: invalid rate limit key",
// "rate limiter unavailable"); the error itself, which may name the
// server's configuration, goes only to the log or OnError.
package grpclimit
