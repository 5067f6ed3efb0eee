// Package grpclimit is gRPC server interceptors over ratekit limiters, and
// a client interceptor that honours their retry advice. It is a module of
// its own (github.com/ratekit/ratekit/grpclimit), so that a program
// without gRPC never carries it.
//
//	lim, err := grpclimit.New(grpclimit.Config{
//		Policies: []grpclimit.Policy{{Name: "api", Limiter: limiter, Window: time.Minute}},
//	})
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(lim.Unary()), grpc.ChainStreamInterceptor(lim.Stream()))
//
// It mirrors httplimit. A call is keyed by client address by default
// ([ClientIP], behind trusted proxies that set x-forwarded-for or another
// metadata key), or by a metadata value ([Metadata], bounded in length),
// by method ([Method]), by several of these ([Join]) or by a [Keyer] of
// your own. It is decided by a ratekit.Policy (several limits at once,
// tiers with PolicyFor, shadow limits, refunds by status code with
// Counts), or by limiters applied in order (Policies); a [Concurrency]
// limit holds a lease while the call runs. A stream is decided once, when
// it opens.
//
// Every answer carries the rate-limit fields of the IETF draft that
// httplimit sends as headers, as header metadata in lower case:
//
//	ratelimit-policy: "api";q=100;w=60
//	ratelimit: "api";r=42;t=17
//
// one value per enforced limit (shadow limits are left out), written as
// httplimit writes them: t is the seconds until more quota is available,
// and on a denial never later than retry-after (equal to it for the limit
// that denied); no Integer is above 999999999999999. A denied call gets codes.ResourceExhausted, with
// the exact wait in an errdetails.RetryInfo detail, the limits that denied
// in an errdetails.QuotaFailure (one violation each, subject "ratekit:"
// and the limit's name, or "ratekit:blocked" for a penalty block), and
// retry-after (whole seconds, rounded up, never 0) in the metadata. [UnaryClientInterceptor] waits the
// RetryInfo delay and calls again, within the call's deadline.
//
// When the store fails, the call is served (fail open) or, with
// FailClosed, answered codes.Unavailable; never in silence: the error goes
// to Config.OnError or to Config.Logger (slog.Default() when nil) at
// slog.LevelError, at most one line every 10 seconds, as httplimit does.
// A key or cost that cannot be read is the client's error:
// codes.InvalidArgument, logged at slog.LevelDebug.
package grpclimit
