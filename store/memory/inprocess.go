package memory

import (
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/inproc"
	"github.com/ratekit/ratekit/internal/keyspace"
)

// The in-process path (internal/inproc): a limiter on this store decides
// one key by locking the key's shard here and running its algorithm's step
// against the shard's Tx itself, the step and commit its script's twin
// would run, without building a script call. InProcessOf returns that
// path, for ratekit's limiters: a program has no use for it.

var _ inproc.Store = (*Store)(nil)

// InProcessOf returns s and its in-process path: limiters on s decide one
// key without a script. A type that embeds *Store does not inherit that:
// the runner returned is the Store, so a wrapper's RunScript is never
// bypassed. Programs have no use for it.
func (s *Store) InProcessOf() (core.ScriptRunner, inproc.Path) { return s, (*inProcess)(s) }

// inProcess is the store's in-process path (inproc.Path), a type of its
// own so that its methods are not the Store's.
type inProcess Store

// Lock locks the shard of the storage key of (prefix, key) and returns
// the shard's Tx on it, at the store's time now, and the key; or, with
// nothing locked, the error RunScript returns for a clock that reads a
// time ratekit cannot compute with. It hashes
// the key from its parts (hasher.parts) and finds its entry by comparing
// the parts with the entry's key (table.findParts): only a key that is
// not stored yet, or needs escapes, is built, in the shard's buffer. A
// decision on a known key allocates nothing and copies no key.
func (p *inProcess) Lock(prefix string, ph uint64, key string) (core.Tx, string, error) {
	s := (*Store)(p)
	h := s.hash.parts(ph, key)
	sh := &s.shards[h>>(64-shardBits)]
	sh.mu.Lock()
	now, err := s.now()
	if err != nil {
		sh.mu.Unlock()
		return nil, "", err
	}
	e, sure := sh.t.findParts(h, prefix, key)
	var skey string
	if e != nil {
		skey = e.key
	} else {
		sh.key = keyspace.AppendKey(sh.key[:0], prefix, key, "")
		skey = unsafe.String(unsafe.SliceData(sh.key), len(sh.key))
		if !sure {
			e = sh.t.find(h, skey)
		}
	}
	sh.tx.found(now, skey, h, e)
	return &sh.tx, skey, nil
}

// PrefixHash returns the hash of prefix that Lock takes with it.
func (p *inProcess) PrefixHash(prefix string) uint64 { return p.hash.prefix(prefix) }

// Unlock ends the call Lock began on t and unlocks its shard.
func (p *inProcess) Unlock(t core.Tx, name string, panicked any) error {
	tx := t.(*tx)
	err := tx.takeErr()
	tx.lastKey, tx.last = "", nil
	if cap(tx.sh.key) > keepScratch {
		tx.sh.key = nil
	}
	tx.sh.mu.Unlock()
	switch {
	case panicked != nil:
		return panicError(name, panicked)
	case err != nil:
		return scriptError(name, err)
	}
	return nil
}
