// Package luatest is the root of a module that holds the library's tests
// that run the Lua scripts on Redis through a Redis client: seedtest (the
// Redis rate limiter guide's scripts beside ours, the guide's
// floating-point ties, the sliding log's script when client clocks step
// back) and concurrency (the concurrency limiter's leases on its Lua step,
// on miniredis, beside its Go twin). It is a module of its own because
// go-redis and miniredis are not requirements of the library: a program
// that uses only the memory store must not find them in its module graph.
// It has no code outside its subpackages' tests and the seedtest kit.
package luatest
