package core

import "context"

// The store contract. A store is where limiters keep their state: the
// memory store (store/memory), a Redis server through one of the client
// adapters (store/goredis, store/rueidis, store/valkey, store/redigo,
// built on store/scriptproto), or one of your own. A store must implement
// [ScriptRunner], and nothing else; it may add any of [BatchRunner],
// [SingleNode], [StoreNamer] and [LocalStore], which limiters find with a
// type assertion and use when they are there. A wrapper of a store (to
// count or trace its calls) that embeds it has the optional methods the
// store has; a wrapper that must see every call a limiter makes holds the
// store in a named field instead, and implements only what it forwards.
//
// Every store's constructor refuses what cannot run scripts (a nil
// client, say) with an error wrapping [ErrInvalidConfig]; a store's zero
// value, or a nil pointer to one, fails every call with an error wrapping
// [ErrStore] and [ErrInvalidConfig], and its StoreName is "", so that
// limiters refuse it when they are built.

// ScriptRunner runs one script atomically and returns its reply, an array of
// integers. It is the whole storage abstraction: the Redis adapters run the
// script's Lua source with EVALSHA (EVAL on NOSCRIPT), the memory store runs
// its Go twin under a lock.
//
// keys are the full storage keys the script touches (KEYS in Lua); args are
// the script's integer arguments (ARGV in Lua, sent as decimal strings).
// The reply's integers are appended to reply, which may be nil or a
// caller's buffer (reply[:0]) to save an allocation; the extended slice is
// returned, as with append. keys, args and reply belong to the caller and
// are valid only until RunScript returns: limiters build keys in memory
// they reuse, so an implementation copies any key it keeps (strings.Clone),
// and sends nothing of them once it has returned. Implementations wrap
// their own failures with [ErrStore].
//
// An implementation must not send anything to its server when ctx has
// already ended: it returns an error wrapping ErrStore and ctx.Err(), and
// the call changed nothing.
type ScriptRunner interface {
	RunScript(ctx context.Context, s *Script, keys []string, args []int64, reply []int64) ([]int64, error)
}

// ScriptCall is one script run of a batch: the arguments of one
// ScriptRunner.RunScript call.
type ScriptCall struct {
	Script *Script
	Keys   []string
	Args   []int64
	// AnySlot lets Keys span Redis Cluster slots. A store that reports
	// itself one node (SingleNode) runs such a call as it is; any other
	// store refuses it, as it refuses every script whose keys span slots.
	// Limiters set it only when their store is one node.
	AnySlot bool
}

// ScriptResult is the outcome of one ScriptCall: its reply, or its own
// error.
type ScriptResult struct {
	Reply []int64
	Err   error
}

// BatchRunner is implemented by a store that can run many scripts in one
// round trip per server (a pipeline). Limiters use it for AllowMany and
// coalescing, and run the calls one by one on a store without it.
//
// RunScripts returns one result per call, in order. Calls on the same key
// run in the order given, even when the server must first be sent a
// script that it had not loaded (a Redis store that retries a call as
// EVAL after NOSCRIPT holds back later calls on its keys); each call is
// atomic, and one call's failure does not stop the others. Calls on
// different keys may run in any order. Keys and arguments are the
// caller's, as for RunScript.
type BatchRunner interface {
	RunScripts(ctx context.Context, calls []ScriptCall) []ScriptResult
}

// SingleNode is implemented by a store that can tell whether every key it
// holds lives on one server that lets a script's keys span cluster
// slots: one Redis server not in cluster mode, or the primary behind
// Sentinel. A limiter on such a store decides a batch of keys in any
// slots with one script call (ScriptCall.AnySlot) instead of one call per
// slot. A store that does not implement it, or reports false, is treated
// as a cluster: a script's keys must share a slot. The answer may change
// (a server that refuses a call with CROSSSLOT is a cluster after all).
type SingleNode interface {
	SingleNode() bool
}

// StoreNamer is implemented by a store that has a short name for
// metrics, traces and logs: the name of its package's directory under
// store/ ("memory", "goredis", "rueidis", "redigo", "valkey"). The name is
// fixed for a type, never derived from an address or a key, so it is safe
// as a metric attribute; it is "" for a store that cannot run scripts (a
// nil or zero value), which limiters then refuse when they are built.
type StoreNamer interface {
	StoreName() string
}

// LocalStore is implemented by a store that keeps its state in this
// process (store/memory). A limiter on one decides without a script: it
// locks the request's user key, runs its algorithms' Go steps (the code
// the scripts' Go twins run) on the [Tx] it gets, and unlocks. The
// decisions are those of the scripts; what is saved is the script call
// (its arguments, its reply buffer, their packing and unpacking).
type LocalStore interface {
	ScriptRunner
	// Lock locks the state of the user key key: every storage key whose
	// Redis Cluster hash tag is key. It returns a Tx on them at the
	// store's time, valid until Unlock, and the storage key of key under
	// prefix, as Key returns it (a limiter's first, often only, key: one
	// call finds the user key's shard and the key in it); or, locking
	// nothing, an error wrapping ErrStore (the store's clock out of
	// range, say). key is not empty; the caller holds no other lock of
	// the store.
	Lock(key, prefix string) (Tx, string, error)
	// Key returns the storage key of tx's locked user key under prefix,
	// prefix + "{" + the key, escaped + "}", as the limiter's scripts
	// name it: the key to Get, Put and Del. The string is valid until
	// Unlock. prefix holds no brace.
	Key(tx Tx, prefix string) string
	// Unlock unlocks tx's user key. It returns an error wrapping
	// ErrStore when the call misused the Tx (a Put the store refused),
	// and nil otherwise; the Tx is not used again.
	Unlock(tx Tx) error
}
