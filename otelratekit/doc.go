// Package otelratekit reports what ratekit limiters do as OpenTelemetry
// metrics and traces. It is a module of its own
// (github.com/ratekit/ratekit/otelratekit), so that a program that does not
// use OpenTelemetry never carries it.
//
// Wrap the store, build the limiter on it, then wrap the limiter:
//
//	tel, err := otelratekit.New(otelratekit.Config{MeterProvider: mp, TracerProvider: tp})
//	redisStore, err := goredisstore.New(rdb)
//	store, err := tel.Store(redisStore)                // store latency, errors, a span per store call
//	lim, err := tokenbucket.New(store, cfg)
//	api, err := tel.Limiter("api", lim)                // decisions, a span per decision
//	d, err := api.Allow(ctx, key)
//
// [Telemetry.Limiter] wraps any core.Limiter (an algorithm's limiter, a
// policy of several limits from ratekit.NewPolicy, a wrapper of either)
// and is one itself, so it goes wherever the limiter would (httplimit,
// grpclimit, failsafe). It looks through the wrappers it is given
// (anything with an Unwrap() core.Limiter method: failsafe, denycache,
// another Limiter of this package) for what it reports: the algorithm and
// the store of the ratekit limiter at the end of the chain ("policy" for
// a policy, and each of its limits' algorithm), the state of a failsafe
// limiter, the hits of a deny cache. Wrap the outermost limiter, the one
// your code calls, so that every decision is counted, the cached ones and
// the failure policy's included.
//
// # Metrics
//
// Names and attributes follow OpenTelemetry's semantic-convention style.
// No attribute ever holds a user's key: every value comes from a short,
// fixed list or from the program's configuration, so the number of series
// stays bounded whatever the traffic.
//
//	ratekit.decisions               counter    {decision}  ratekit.limiter.name, ratekit.algorithm, ratekit.store, ratekit.outcome, error.type, ratekit.blocked
//	ratekit.policy.limit.decisions  counter    {decision}  ratekit.limiter.name, ratekit.limit.name, ratekit.algorithm, ratekit.store, ratekit.outcome
//	ratekit.store.duration          histogram  s           ratekit.store, ratekit.store.operation, ratekit.script, error.type
//	ratekit.store.errors            counter    {error}     ratekit.store, ratekit.store.operation, ratekit.script, error.type
//	ratekit.failsafe.state          gauge      {state}     ratekit.limiter.name, ratekit.failsafe.state
//	ratekit.denycache.hits          counter    {hit}       ratekit.limiter.name, ratekit.algorithm, ratekit.store
//	ratekit.concurrency.leases      up-down    {lease}     ratekit.limiter.name, ratekit.algorithm, ratekit.store
//
// ratekit.decisions counts Allow, AllowN and each request of AllowMany (not
// Peek, Refund or Reset) and a concurrency limiter's acquires
// ([Concurrency]); a policy's requests have ratekit.algorithm "policy".
// ratekit.outcome is "allowed", "denied" or "error"; an error also has
// error.type (see below). A policy's request is "shadow" when it was
// allowed although a shadow limit would have denied it, and a denial
// while a penalty blocks the key has ratekit.blocked "true".
//
// ratekit.policy.limit.decisions counts each limit's part in a policy's
// requests, by the limit's name (ratekit.limit.name) and algorithm, so
// that each limit's "allowed" is what it counted. A policy counts a
// request by all its limits or by none, and ratekit.outcome says which
// for each:
//
//	allowed      the request was allowed, and this limit counted it
//	denied       this limit denied the request (or would, while a penalty blocks the key)
//	not_counted  this limit would have allowed, but another limit (or a penalty block) denied the request: it counted nothing
//	shadow       this limit runs in shadow and would have denied: it counted nothing, and denied nothing
//
// With limits "second" and "minute", 8 requests of which "second" denied
// 3 count allowed 5 and denied 3 on "second", and allowed 5 and
// not_counted 3 on "minute" (Example_prometheus_policy).
//
// A decision made by a failure policy counts as the caller got it: a
// failsafe limiter that fails open counts "allowed", while the store's
// error shows in ratekit.store.errors.
//
// ratekit.store.duration measures every call to the store: one script
// (ratekit.store.operation "run_script", with ratekit.script, the
// script's name: the algorithm's, such as "tokenbucket", a policy's, such
// as "policy:tokenbucket+fixedwindow", or "reset") or one pipelined batch ("run_scripts", without ratekit.script
// or error.type; each failed call of a batch counts in
// ratekit.store.errors). Its buckets run from 100 µs to 10 s.
//
// ratekit.failsafe.state is 1 for the state a failsafe limiter is in
// ("up", "down" or "probing", see failsafe.State) and 0 for the others.
// ratekit.denycache.hits counts the denials a deny cache answered without
// a round trip (denycache.Limiter.Hits). Both are observed when the meter
// provider collects, from the limiters found behind a [Limiter];
// [Limiter.Close] stops that.
//
// ratekit.concurrency.leases counts the leases a [Concurrency] acquired and
// has not released yet: the requests in flight in this process.
//
// error.type is one of "timeout" (a context deadline, failsafe's Timeout
// included), "canceled", "busy" (failsafe's MaxInFlight), "unexpected_reply",
// "corrupt_state", "invalid_key", "invalid_cost", "invalid_lease",
// "invalid_time", "invalid_config", "store" (any other store failure) and
// "_OTHER".
//
// # Traces
//
// Each call of a [Limiter] is a span ("ratekit.AllowN", "ratekit.Peek",
// "ratekit.Reset", "ratekit.Refund", "ratekit.AllowMany" for a whole batch;
// "ratekit.Acquire", "ratekit.Release" and "ratekit.Extend" for a
// [Concurrency]), a child of the span in the caller's context, with the
// limiter's attributes, the cost (ratekit.cost) or batch size
// (ratekit.batch.size), and the outcome, limit, remaining and retry-after
// (ratekit.outcome, ratekit.limit, ratekit.remaining, ratekit.retry_after
// in seconds); a policy's decision adds the limits that denied
// (ratekit.denied), those in shadow that would have
// (ratekit.shadow_denied) and ratekit.blocked. Each store call made
// through a [Store] is a child span of the decision ("ratekit.store.RunScript"
// or "ratekit.store.RunScripts", kind client). Errors set the span's status
// and error.type, and are recorded as events. No span attribute holds a
// key, but an error's message does for a few errors (state at a key that
// another algorithm wrote, keys in two cluster slots). Tracing is
// optional: give a TracerProvider, or set the global one; without either,
// spans cost almost nothing.
package otelratekit
