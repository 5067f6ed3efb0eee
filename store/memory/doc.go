// Package memory is ratekit's in-process store: a sharded keyspace in Go
// that runs each script's Go twin atomically, with no Lua interpreter and no
// server. It is the reference every other store is compared with by the
// conformance suite, the store for unit tests, and a fast limiter for a
// single process.
//
// Keys are sharded (1024 shards) by their Redis Cluster hash tag, so a
// multi-key script (whose keys share one tag) locks one shard, and the
// sweep, which locks one shard at a time, holds up a caller for one
// shard's scan at most. Every key has a time to live, measured on the
// store's clock: an expired key reads as absent at once, its entry is
// reused if the key is written again, and the background sweep, which Close
// stops, drops the rest.
package memory
