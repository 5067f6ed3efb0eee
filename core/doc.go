// Package core holds the small contracts that every ratekit algorithm and
// store shares: the one-method [ScriptRunner] that is the whole storage
// abstraction, the [Script] an algorithm runs (Lua for Redis, a Go twin for
// the memory store), the [Tx] those twins use, the [Decision] a limiter
// returns, the [Clock] that can be injected, and the sentinel errors callers
// match with errors.Is.
//
// core imports no Redis client. Algorithms live in algorithms/<name>, stores
// in store/<name>.
package core
