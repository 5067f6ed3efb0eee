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
// by New, is refused when a limiter is built (Check). It copies every key
// it keeps, so limiters lend it keys in reused memory (CopiesKeysOf) and a
// decision on a known key allocates nothing.
//
// A limiter on the store decides one key in process: the engine locks the
// key here and runs the algorithm's step, the Go function the composed
// script's twin runs, on the shard's Tx, with no script call around it
// (internal/inproc; the limiter's batches and policies still run scripts).
// That path belongs to the Store itself: a type that embeds *Store, or
// wraps it as a core.ScriptRunner, sees every call through RunScript.
//
// Keys are sharded (256 shards) by a hash of the key, taken from its parts
// (prefix, hash tag unescaped, suffix) so that a limiter's call hashes its
// key without building it. Each shard is an open-addressing table whose
// entries hold small values and short keys inline, so a decision on a
// known key touches one lock, one slot and one entry. A script whose keys fall in several shards locks them all, in
// order; the sweep, which locks one shard at a time, holds up a caller for
// one shard's scan at most. Every key has a time to live, measured on the
// store's clock: an expired key reads as absent at once, its entry is
// reused if the key is written again, and the background sweep, which Close
// stops, drops the rest.
package memory
