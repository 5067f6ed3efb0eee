// Package conformance is ratekit's shared property-based test suite for
// stores. Any core.ScriptRunner, ours or a third party's, runs it from its
// own test in a few lines:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{Runner: myrunner.New(client)})
//	}
//
// For every algorithm of the registry (algorithms.All), rapid (pgregory.net/rapid) state machines drive a
// limiter on the store under test and the same limiter on the memory store
// (the reference) with the same random operations: keys from a small set
// (braces and escape characters included), random costs (invalid ones too),
// clock steps from zero to many refill intervals or windows, Peek and Reset
// mixed in, over a spread of configurations. At every step the two Decisions
// must be equal field by field (or both calls fail with the same sentinel
// error), each algorithm's own bound must hold on what was allowed, and a
// Refund (of a limiter or a policy) must return what Peek reports after it,
// on both stores, the clock behind the key's last write included. A
// failing case shrinks to a minimal sequence that rapid prints and replays.
// Decisions also go, at random, through a coalescing limiter
// (ratekit.Coalesce) over the same store and keys, and bursts of
// concurrent calls are made to queue behind the two calls a group may
// have in flight, held there, so that they reach the store as batches:
// each call's decision must be the reference's for the same requests one
// by one, and the store must see each group's first two calls alone and
// what queued behind them as one call. Batches (AllowMany) are now and
// then larger than one batch script call holds, so that a key's requests
// span calls; and a script call whose context has ended must fail with
// core.ErrStore and change nothing.
// Configurations are drawn from the registry's parameters (the limit 1 to
// 20, other counts 1 to 10 or to the limit + 2, durations from a second to
// a day), and each algorithm is held to what its step declares
// (engine.Spec): its bound, its longest wait, the size of its state. An
// algorithm of the registry that declares no bound fails the suite, by
// name. The concurrency limiter (algorithms/concurrency,
// not in the registry) has a state machine of its own: random acquires,
// releases and extensions of live, expired, forged and other keys' leases,
// peeks, resets, clock steps and configuration changes, where both stores
// must also answer as a model of the leases does.
//
// The number of runs follows rapid's flags and environment: -rapid.checks
// (RAPID_CHECKS, default 100) and -rapid.steps (RAPID_STEPS, default 30).
//
// Time: by default the suite passes its own fake clock to every limiter
// (client-clock mode), so the store's clock is never read. A store whose
// clock the test can set (miniredis, the memory store) runs in server-time
// mode by giving Harness.SetTime: limiters then get no clock, and the suite
// sets the store's time before each step.
//
// A store whose clock the test cannot set (a real Redis) runs
// RunServerClock as well: it checks the store's own clock, which Run never
// reads in client-clock mode, against each algorithm's bounds.
package conformance
