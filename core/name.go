package core

// StoreNamer is implemented by a [ScriptRunner] that has a short name for
// metrics, traces and logs: the name of its package's directory under
// store/ ("memory", "goredis", "rueidis", "redigo", "valkey"). The name is
// fixed for a type, never derived from an address or a key, so it is safe
// as a metric attribute. A wrapper of a store (one that records calls, say)
// returns the name of the store it wraps.
type StoreNamer interface {
	StoreName() string
}
