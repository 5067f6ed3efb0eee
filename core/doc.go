// Package core holds the small contracts that every ratekit limiter,
// wrapper and store shares: the [Limiter] interface every kind of limiter
// and every wrapper implements, the [Decision] it returns, the store
// contract (store.go: the one-method [ScriptRunner] that is the whole
// storage abstraction, and the optional interfaces a store may add), the
// [Script] an algorithm runs (Lua for Redis, a Go twin for the memory
// store), the [Tx] those twins use, the [Clock] that can be injected, and
// the sentinel errors callers match with errors.Is.
//
// core imports no Redis client. Algorithms live in algorithms/<name>, stores
// in store/<name>.
package core
