// Package ratekit is the one limiter type every kind of ratekit limiter
// is ([Limiter]: an algorithm's, a policy of several limits decided at
// once, a tier's policy, a coalescing limiter), the ways to build the
// composed kinds ([NewPolicy], [NewTiers], [Coalesce]), and the map of the
// library.
//
// # Where to start
//
// Pick an algorithm and a store, and ask the limiter about each request:
//
//	store, err := memory.New() // in process; or a Redis store, below
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	lim, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second})
//	if err != nil {
//		return err
//	}
//	d, err := lim.Allow(ctx, "user:42") // d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter
//
// The algorithms, each a package with a Config and a New that returns a
// [*Limiter]: algorithms/tokenbucket, fixedwindow, slidinglog,
// slidingcounter, leakybucket and gcra (whose limiter also grants part of
// a request: [Limiter.AllowAtMost]); package algorithms lists them all, by
// name, with their parameters. algorithms/concurrency caps the requests in
// flight per key instead, with leases (Acquire, Release, Extend).
//
// The stores, where the state lives; every store runs the same scripts, and
// package conformance proves that they decide alike:
//
//   - store/memory: in process, no server (this module).
//   - store/goredis (package goredisstore), store/rueidis (rueidisstore),
//     store/redigo (redigostore), store/valkey (valkeystore): Redis through
//     each client, each a module of its own, all built on store/scriptproto,
//     the Redis protocol an adapter for another client uses too.
//
// Every limiter, and every wrapper of one, is a core.Limiter, so any
// wrapper wraps any limiter:
//
//   - [NewPolicy] and [Tiers]: several limits of one key decided in one
//     script, counted by all or by none, with shadow limits and penalties;
//     Tiers holds one policy per tier.
//   - [Coalesce]: the calls many goroutines make at once on a limiter,
//     gathered into batch script calls, for throughput on Redis.
//   - httplimit: net/http middleware with the IETF RateLimit fields, every
//     decision bounded by a timeout of its own.
//   - failsafe: fail open, fail closed or fall back to a local limiter when
//     the store fails; denycache: answer repeated denials in process;
//     hotkey: decide a very hot key in process from units leased from the
//     shared limit.
//   - core: the contracts the others share (Limiter, Decision, the store
//     contract whose one required method is ScriptRunner.RunScript, Clock,
//     the sentinel errors ErrStore, ErrInvalidConfig, ...).
//   - fakeclock: a clock that moves only when told, for tests of code that
//     uses ratekit; conformance: the property-based suite a store, ours or a
//     third party's, runs from its tests.
//
// # Modules
//
// A program's module graph holds every requirement of every ratekit module
// it imports, so anything heavy is a module of its own. This module,
// github.com/ratekit/ratekit, holds everything above but the Redis stores
// and requires only pgregory.net/rapid (package conformance) and
// go.uber.org/goleak (its tests). The others:
//
//   - github.com/ratekit/ratekit/store/goredis, .../store/rueidis,
//     .../store/redigo, .../store/valkey: one Redis adapter each, with its
//     client.
//   - github.com/ratekit/ratekit/otelratekit: OpenTelemetry metrics and
//     traces of stores, limiters, policies and concurrency limits.
//   - github.com/ratekit/ratekit/grpclimit: gRPC server interceptors with
//     the same fields as httplimit, and a client interceptor that honours
//     their RetryInfo.
//   - github.com/ratekit/ratekit/cmd/demo: the demo, a web page over every
//     algorithm (cd cmd/demo && go run .).
//
// The repository's README has the tour; docs/ has a page per topic (Redis,
// failures, HTTP and gRPC, performance, testing), and docs/design.md the
// design and the module footprints.
package ratekit
