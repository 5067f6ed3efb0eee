// Package ratekit is the limiter every ratekit algorithm returns, and the
// map of the module.
//
// Start with an algorithm and a store:
//
//	store, _ := memory.New()                        // or goredisstore.New(rdb), rueidisstore.New(client), ...
//	lim, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second})
//	d, err := lim.Allow(ctx, "user:42")              // d.Allowed, d.Remaining, d.RetryAfter, ...
//
// The packages:
//
//   - algorithms/tokenbucket, fixedwindow, slidinglog, slidingcounter,
//     leakybucket, gcra: one algorithm each (Config, New). Each New returns
//     a *Limiter (GCRA's adds AllowAtMost).
//   - algorithms/concurrency: the requests in flight per key, with
//     leases (Acquire, Release, Extend), across processes.
//   - store/memory (in process), store/goredis, store/rueidis,
//     store/redigo, store/valkey: where the state lives. Every store runs
//     the same scripts, and the conformance package proves they decide
//     alike.
//   - core: the contracts the others share (ScriptRunner, Decision,
//     Clock, the sentinel errors).
//   - httplimit: net/http middleware with the IETF RateLimit headers.
//   - failsafe: what to do when the store fails; denycache: answer
//     denials in process; hotkey: decide a hot key in process from units
//     leased from its limit.
//   - otelratekit (a module of its own): OpenTelemetry metrics and traces
//     of stores, limiters, policies and concurrency limits.
//   - grpclimit (a module of its own): gRPC server interceptors with the
//     same fields as httplimit, and a client interceptor that honours
//     their RetryInfo.
//
// [Multi] decides one request against several limiters at once, in one
// script: counted by all of them or by none.
//
// [Coalesce] gathers the calls many goroutines make at once on a limiter
// into batch script calls, for throughput on Redis.
package ratekit
