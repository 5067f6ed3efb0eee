package memory

import (
	"errors"
	"strings"
	"time"

	"github.com/ratekit/ratekit/core"
)

// errTx is a core.Tx that remembers a misuse by the twin, reported as the
// call's error once the twin returns.
type errTx interface {
	core.Tx
	takeErr() error
}

var errBadTTL = errors.New("Put with a non-positive TTL")

// tx is the core.Tx of a call whose keys live in one shard; the shard's lock
// is held.
type tx struct {
	sh    *shard
	nowUS int64
	err   error
	// last is the entry the call's last Get found (live or expired) at
	// lastKey, so that the usual Get-then-Put of one key looks it up once.
	last    *entry
	lastKey string
}

// begin readies t for a call at now.
func (t *tx) begin(now int64) { t.nowUS, t.last, t.lastKey = now, nil, "" }

func (t *tx) takeErr() error { err := t.err; t.err = nil; return err }

func (t *tx) Now() int64 { return t.nowUS }

func (t *tx) Get(key string) ([]int64, bool) {
	e, ok := t.sh.m[key]
	if !ok {
		t.last = nil
		return nil, false
	}
	t.last, t.lastKey = e, key
	if e.expireAt <= t.nowUS {
		return nil, false
	}
	return e.vals, true
}

func (t *tx) Put(key string, n int, ttl time.Duration) []int64 {
	if t.last != nil && t.lastKey == key && ttl > 0 {
		return fill(t.last, n, ttl, t.nowUS)
	}
	return put(t.sh, key, n, ttl, t.nowUS, &t.err)
}

func (t *tx) Del(key string) bool {
	t.last = nil
	return del(t.sh, key, t.nowUS)
}

// multiTx is the core.Tx of a call whose keys span shards, all locked.
type multiTx struct {
	s     *Store
	nowUS int64
	err   error
}

func (t *multiTx) takeErr() error { return t.err }

func (t *multiTx) Now() int64 { return t.nowUS }

func (t *multiTx) Get(key string) ([]int64, bool) {
	return get(&t.s.shards[t.s.shardOf(key)], key, t.nowUS)
}

func (t *multiTx) Put(key string, n int, ttl time.Duration) []int64 {
	return put(&t.s.shards[t.s.shardOf(key)], key, n, ttl, t.nowUS, &t.err)
}

func (t *multiTx) Del(key string) bool {
	return del(&t.s.shards[t.s.shardOf(key)], key, t.nowUS)
}

// get returns key's live value. An expired entry reads as absent; it stays
// in the map, to be reused by the next put of the same key (no allocation)
// or dropped by the sweep.
func get(sh *shard, key string, now int64) ([]int64, bool) {
	e, ok := sh.m[key]
	if !ok || e.expireAt <= now {
		return nil, false
	}
	return e.vals, true
}

func put(sh *shard, key string, n int, ttl time.Duration, now int64, errp *error) []int64 {
	if ttl <= 0 {
		// A twin bug, not a caller's: a key must never live forever.
		*errp = errBadTTL
		return make([]int64, n)
	}
	e, ok := sh.m[key]
	if !ok {
		e = &entry{}
		sh.m[strings.Clone(key)] = e // key may be the caller's reused buffer
	}
	return fill(e, n, ttl, now)
}

// fill makes e a zeroed value of n integers expiring ttl after now, and
// returns it to be written.
func fill(e *entry, n int, ttl time.Duration, now int64) []int64 {
	if cap(e.vals) < n {
		e.vals = make([]int64, n)
	}
	e.vals = e.vals[:n]
	clear(e.vals)
	e.expireAt = now + int64(ttl/time.Microsecond)
	return e.vals
}

func del(sh *shard, key string, now int64) bool {
	e, ok := sh.m[key]
	if !ok {
		return false
	}
	delete(sh.m, key)
	return e.expireAt > now
}
