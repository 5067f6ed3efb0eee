package memory

import (
	"hash/maphash"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/inproc"
	"github.com/ratekit/ratekit/internal/keyspace"
)

// The in-process path (internal/inproc): a limiter on this store decides
// one key by locking the key's shard here and running its algorithm's step
// against the shard's Tx itself, the step and commit its script's twin
// would run, without building a script call.

var _ inproc.Store = (*Store)(nil)

// InProcessOf returns s: limiters on s decide one key without a script.
// A type that embeds *Store does not inherit that: the method names the
// Store, so a wrapper's RunScript is never bypassed.
func (s *Store) InProcessOf() core.ScriptRunner { return s }

// Lock locks the shard of the storage key of (prefix, key) and returns
// the shard's Tx on it, at the store's time now. The key is built on the
// stack to be hashed, then copied into the shard's buffer once its lock
// is held: the Tx's key lives as long as the call, and a decision
// allocates nothing.
func (s *Store) Lock(prefix, key string) inproc.Tx {
	var buf [128]byte
	k := keyspace.AppendKey(buf[:0], prefix, key, "")
	h := maphash.Bytes(s.seed, k)
	sh := &s.shards[h>>(64-shardBits)]
	sh.mu.Lock()
	sh.key = append(sh.key[:0], k...)
	t := &sh.tx
	t.key = unsafe.String(unsafe.SliceData(sh.key), len(sh.key))
	t.begin(s.now(), t.key, h)
	return t
}

// Key returns the storage key of the call Lock began.
func (t *tx) Key() string { return t.key }

// Unlock ends the call Lock began and unlocks its shard.
func (t *tx) Unlock(name string, panicked any) error {
	err := t.takeErr()
	t.key, t.lastKey, t.last = "", "", nil
	if cap(t.sh.key) > keepScratch {
		t.sh.key = nil
	}
	t.sh.mu.Unlock()
	switch {
	case panicked != nil:
		return panicError(name, panicked)
	case err != nil:
		return scriptError(name, err)
	}
	return nil
}
