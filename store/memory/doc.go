// Package memory is ratekit's in-process store: a sharded keyspace in Go
// that runs each script's Go twin atomically, with no Lua interpreter and no
// server. It is the reference every other store is compared with by the
// conformance suite, the store for unit tests, and a fast limiter for a
// single process.
//
// It keeps the promises every ratekit store keeps: a script whose keys span
// Redis Cluster slots is refused (core.ErrStore wrapping the error the
// Redis adapters return), since a Redis store would refuse it; a call whose
// context has ended changes nothing; and a nil *Store, or a Store not made
// by New, fails every call and is refused when a limiter is built (its
// StoreName is ""). It copies every key it keeps, so a decision on a known
// key allocates nothing.
//
// A limiter on the store decides in process (core.LocalStore): it locks
// the request's user key here (Lock) and runs its algorithms' steps, the
// Go functions the composed scripts' twins run, on the shard's Tx, with no
// script call around them; a policy's limits and penalty block, and a
// batch's requests, go the same way. A type that embeds *Store has Lock
// too; a wrapper that must see every call (to count or break them) holds
// the store in a named field and implements RunScript alone.
//
// Keys are sharded (256 shards) by a hash of their hash tag (the user
// key), so that all the keys of one user key, a policy's limits and its
// penalty block, live in one shard; within it a key is found by a hash
// taken from its parts (prefix, hash tag unescaped, suffix), so that a
// limiter's call hashes its key without building it. Each shard is an
// open-addressing table whose entries hold small values and short keys
// inline, so a decision on a known key touches one lock, one slot and one
// entry. A script whose keys fall in several shards locks them all, in
// order; the sweep, which locks one shard at a time, holds up a caller for
// one shard's scan at most. Every key has a time to live, measured on the
// store's clock: an expired key reads as absent at once, its entry is
// reused if the key is written again, and the background sweep, which
// Close stops, drops the rest.
package memory
