package memory

import (
	"fmt"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
)

// The store decides in process (core.LocalStore): a limiter on it locks
// the user key's shard (every storage key of one user key lives in one
// shard: keys are sharded by their hash tag), asks the Tx for the storage
// key of each of its limits' prefixes (Key), runs its steps on the Tx, and
// unlocks. No script call is built.

var _ core.LocalStore = (*Store)(nil)

// Lock locks the shard of the user key key and returns its Tx, at the
// store's time now, and the storage key of key under prefix (Key); or,
// with nothing locked, the error RunScript returns for a clock that reads
// a time ratekit cannot compute with (core.LocalStore). On a nil or zero
// Store it returns RunScript's error.
func (s *Store) Lock(key, prefix string) (core.Tx, string, error) {
	if !s.usable() {
		return nil, "", s.unusable()
	}
	th := s.hash.tag(key)
	sh := &s.shards[th>>(64-shardBits)]
	sh.mu.Lock()
	now, err := s.now()
	if err != nil {
		sh.mu.Unlock()
		return nil, "", err
	}
	sh.tx.lock(now, key, th)
	return &sh.tx, sh.tx.key(prefix), nil
}

// lock readies t for a call at now on the user key key, whose hash is th.
func (t *tx) lock(now int64, key string, th uint64) {
	t.nowUS, t.user, t.tagHash = now, key, th
	t.forget()
	t.scratch.reset()
	if len(t.sh.key) != 0 { // a write only when needed: see shardFields
		t.sh.key = t.sh.key[:0]
	}
}

// Key returns the storage key of tx's locked user key under prefix
// (core.LocalStore); tx is what Lock returned. It
// hashes the key from its parts (hasher) and finds its entry by comparing
// the parts with the entry's key (table.findParts): only a key that is not
// stored yet, or needs escapes, is built, in the shard's buffer, after the
// keys built before it in this call, which stay as they are. A decision
// on a known key allocates nothing and copies no key.
func (s *Store) Key(ctx core.Tx, prefix string) string {
	return ctx.(*tx).key(prefix)
}

// key is Key on the shard's tx.
func (t *tx) key(prefix string) string {
	h := mix(t.prefixHash(prefix), t.tagHash, t.hash.none)
	e, sure := t.sh.t.findParts(h, prefix, t.user)
	skey := ""
	if e != nil {
		skey = e.key
	} else {
		at := len(t.sh.key)
		t.sh.key = keyspace.AppendKey(t.sh.key, prefix, t.user, "")
		skey = unsafe.String(&t.sh.key[at], len(t.sh.key)-at)
		if !sure {
			e = t.sh.t.find(h, skey)
		}
	}
	t.found(skey, h, e)
	return skey
}

// prefixHash returns the hash of prefix, hashing it only when it is not
// one of the last few asked for. A limiter passes the same string at every
// call: the same bytes mean the same prefix, compared without reading
// them. An empty prefix is hashed every time (the cache's empty slots
// hold no hash).
func (t *tx) prefixHash(prefix string) uint64 {
	for i := range t.prefixes {
		c := &t.prefixes[i]
		if unsafe.StringData(prefix) == unsafe.StringData(c.prefix) && len(prefix) == len(c.prefix) && len(prefix) > 0 {
			return c.h
		}
	}
	h := t.hash.prefix(prefix)
	t.prefixes[t.nextPrefix] = hashedPrefix{prefix, h}
	t.nextPrefix = (t.nextPrefix + 1) % maxPrefixes
	return h
}

// Unlock ends the call Lock began on tx and unlocks its shard
// (core.LocalStore): the error of a Put the store refused, or nil.
func (s *Store) Unlock(t core.Tx) error { return t.(*tx).unlock() }

// unlock is Unlock on the shard's tx.
func (t *tx) unlock() error {
	err := t.takeErr()
	if t.nfound != 0 {
		// Keep no entry alive past the call: a sweep may drop it.
		clear(t.keys[:t.nfound])
		t.nfound = 0
	}
	if cap(t.sh.key) > keepScratch {
		t.sh.key = nil
	}
	t.sh.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: memory: a decision in process: %w", core.ErrStore, err)
	}
	return nil
}
