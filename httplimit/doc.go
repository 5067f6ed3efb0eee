// Package httplimit is net/http middleware over any ratekit limiter.
//
// Every response carries the rate-limit fields of the IETF draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-10):
//
//	RateLimit-Policy: "api";q=100;w=60
//	RateLimit: "api";r=42;t=17
//
// one list item per limit, where q is the limit (the Decision's Limit), w
// its window in seconds (the Decision's Window, the time in which the
// limiter gives back its whole Limit, from its own configuration; or
// Config.Window), r what remains and t the seconds "until additional
// quota associated with the quota policy is made available", as the draft
// defines it. The draft also says "the Retry-After field value SHOULD NOT
// reference a point in time earlier than the reset parameter", so t is:
// on an allowed response, the seconds until the limiter is full again
// (ResetAfter, rounded up), by when more quota has come back; on a denied
// one, the seconds until the request would pass, equal to Retry-After for
// the limit that denied, and no other t is later than Retry-After. Every
// Integer in the fields is at most 999999999999999, the largest a
// Structured Field holds (RFC 8941): a larger limit or remaining count is
// sent as that, since a larger Integer would make the whole field
// malformed. Optionally it also sends the legacy X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset for the first item;
// X-RateLimit-Reset is in seconds from now (the same value as t), not a
// Unix time. A denied request gets 429 Too Many Requests with Retry-After
// in whole seconds, rounded up and never 0, and a short body: plain text,
// or JSON when the request accepts application/json.
//
// Config.Limiter is any core.Limiter; Config.LimiterFor picks one per
// request (its tier). A policy (ratekit.NewPolicy) decides every request
// against all its limits at once, counted by all of them or by none, and
// each of its enforced limits is one item of both headers. Shadow limits
// are left out of every header a client reads (RateLimit,
// RateLimit-Policy, the X-RateLimit ones): they never deny, and a client
// that throttled itself on them would defeat a shadow rollout; the
// middleware logs the requests they would have denied at slog.LevelInfo,
// paced like errors. While a penalty blocks the key each limit says r=0
// and t the block's end. A 429 names the limits that denied, or the
// penalty block; and Config.Counts refunds the requests that should not
// count, by response status (for example, count only responses with status
// >= 400). Middlewares stack: each adds its items to the fields, so limits
// of different keys (per client, for all clients) are middlewares in a
// row.
//
// Every decision is bounded by Config.Timeout (DefaultTimeout, 100 ms,
// when 0), whatever the store's client does with contexts and whether the
// request has a deadline: a store that hangs costs a request at most the
// timeout, then the request is served, or answered 503 with FailClosed.
//
// Requests are keyed by client IP by default ([ClientIP]). The client IP is
// the connection's remote address. Behind proxies, name them in
// ClientIP.TrustedProxies and name the one header they set in
// ClientIP.Header: X-Forwarded-For, Forwarded (RFC 7239) or X-Real-IP. That
// header alone is read, only when the remote address is a trusted proxy,
// from the right, skipping trusted hops, so a client cannot choose its own
// key by writing hops of its own or by sending another header. IPv6
// clients are grouped by prefix (/64 by default), so that one host cannot
// escape its limit by rotating addresses. [New] checks a ClientIP's settings
// and refuses bad ones with core.ErrInvalidConfig.
//
// When the store fails, the middleware fails open by default (the request
// is served) or, with FailClosed, answers 503. It never panics on a store
// error, and never fails in silence: the error goes to [Config].OnError or,
// without one, to Config.Logger (slog.Default() when nil) at
// slog.LevelError, at most one line every 10 seconds, each line counting
// the errors left out since the one before. Errors in the request itself
// are answered with 400 and logged at slog.LevelDebug. A ClientIP on a
// listener without IP addresses (a unix socket) is the server's mistake:
// 500, logged at slog.LevelError ([ErrRemoteNotIP]).
//
// [Concurrency] is middleware of its own for the concurrency limiter
// (algorithms/concurrency): each request holds a lease for as long as its
// handler runs, released when the handler returns or panics, and also when
// its client has gone away (the release does not use the request's ended
// context); a request whose key is full gets 429, or 503 if configured,
// with Retry-After. Wrap it inside New's middleware to apply rate limits
// first.
package httplimit
