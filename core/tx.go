package core

import "time"

// Tx is the data access a [TwinFunc] gets from a store that runs scripts
// natively (the memory store). Every value is a vector of integers; its
// meaning belongs to the script that wrote it, as the value format of a Redis
// key belongs to its Lua script.
//
// A Tx is valid only during the twin call that received it, and only for the
// keys passed to that call.
type Tx interface {
	// Now returns the store's current time in Unix microseconds: the twin's
	// equivalent of TIME inside a Lua script.
	Now() int64
	// Get returns the live value stored at key, or ok == false when the key is
	// absent or expired. The slice belongs to the store: read it, do not keep
	// it or write to it.
	Get(key string) (vals []int64, ok bool)
	// Put stores a value of n integers at key with the given time to live,
	// and returns the slice to fill in. It replaces any earlier value; ttl
	// must be positive.
	Put(key string, n int, ttl time.Duration) []int64
	// Del removes key and reports whether it was live.
	Del(key string) bool
}
