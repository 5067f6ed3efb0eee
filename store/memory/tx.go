package memory

import (
	"errors"
	"time"
	"unsafe"

	"github.com/ratekit/ratekit/core"
)

// errTx is a core.Tx that remembers a misuse by the twin, reported as the
// call's error once the twin returns.
type errTx interface {
	core.Tx
	takeErr() error
}

var (
	errBadTTL = errors.New("Put with a non-positive TTL")
	errBadLen = errors.New("Put of a negative length, or of more than 2^31-1 integers")
)

// tx is the core.Tx of a call whose keys live in one shard; the shard's lock
// is held.
type tx struct {
	// What every call writes comes first, on the line of the shard's
	// lock (see shardFields); the rest is written only when it changes.
	nowUS int64
	// In a call in process (Lock): the user key and its hash.
	tagHash uint64
	user    string
	// The entry the call's last lookup found and its key's hash, so that
	// the usual Get-then-Put of one key hashes and looks it up once; when
	// the key was absent, last is nil and lastKey is the key (written only
	// then: a new key is rare, and lastKey is on the shard's next line).
	lastHash uint64
	last     *entry
	scratch  scratch // its count of integers handed out, on the same line
	lastKey  string
	sh       *shard
	bad      error // the twin's misuse of Put: errBadTTL or errBadLen
	hash     *hasher
	// The last prefixes Key was asked for, with their hashes, replaced
	// in turn: a policy's limits, or the limiters that share a shard,
	// ask for a few prefixes in turn, each hashed once.
	prefixes   [maxPrefixes]hashedPrefix
	nextPrefix int
	// The keys Key returned in this call, with their hashes and entries,
	// once it has returned more than one (a policy's): a step's Get and
	// the commit's Put of each then find it without hashing it again.
	// nfound is 0 while Key has returned at most one key, which last
	// holds, and between calls (unlock clears the list).
	nfound int
	keys   [maxFound]foundKey
}

// maxFound is how many keys of one call a tx remembers: a policy of up to
// three limits and its penalty block. Keys past them are hashed at each
// lookup.
const maxFound = 4

// maxPrefixes is how many prefixes a tx keeps the hashes of.
const maxPrefixes = 4

// hashedPrefix is a prefix Key was asked for, and its hash.
type hashedPrefix struct {
	prefix string
	h      uint64
}

// foundKey is a key Key returned, its hash and its entry (nil: absent).
type foundKey struct {
	key string
	h   uint64
	e   *entry
}

// found remembers key, which Key returns in this call, with its hash and
// entry (nil when absent): as last, and, from the call's second key on,
// among the call's keys.
func (t *tx) found(key string, h uint64, e *entry) {
	if t.last != nil || t.lastKey != "" {
		// Not the call's first key: the one before it joins the list.
		if t.nfound == 0 {
			t.keys[0], t.nfound = foundKey{t.current(), t.lastHash, t.last}, 1
		}
		if t.nfound < maxFound {
			t.keys[t.nfound], t.nfound = foundKey{key, h, e}, t.nfound+1
		}
	}
	t.remember(key, h, e)
}

// current returns the key last holds.
func (t *tx) current() string {
	if t.last != nil {
		return t.last.key
	}
	return t.lastKey
}

// same reports whether a and b are the same string: a limiter passes the
// very string Key returned, compared without reading its bytes.
func same(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// begin readies t for a call at now whose first key, key, has hash h:
// the twin's first Get, of that key, then finds it already looked up.
func (t *tx) begin(now int64, key string, h uint64) {
	t.nowUS = now
	t.remember(key, h, t.sh.t.find(h, key))
	t.scratch.reset()
}

func (t *tx) takeErr() error {
	err := t.bad
	if err != nil {
		t.bad = nil
	}
	return err
}

func (t *tx) Now() int64 { return t.nowUS }

// lookup returns key's hash and entry, from the last Get when it was the
// same key.
func (t *tx) lookup(key string) (uint64, *entry) {
	// A step's Get and the commit's Put pass the very string Key returned
	// (the entry's own key, when it exists): the same bytes, compared
	// without reading them.
	if e := t.last; e != nil {
		if len(key) == len(e.key) && (unsafe.StringData(key) == unsafe.StringData(e.key) || t.nfound == 0 && key == e.key) {
			return t.lastHash, e
		}
	} else if len(key) == len(t.lastKey) && key != "" &&
		(unsafe.StringData(key) == unsafe.StringData(t.lastKey) || t.nfound == 0 && key == t.lastKey) {
		return t.lastHash, nil
	}
	// A policy's keys are often of one length: compared by identity
	// first, by their bytes only when none is the same string.
	for i := range t.nfound {
		if f := &t.keys[i]; len(key) == len(f.key) && unsafe.StringData(key) == unsafe.StringData(f.key) {
			t.remember(f.key, f.h, f.e)
			return f.h, f.e
		}
	}
	for i := range t.nfound {
		if f := &t.keys[i]; key == f.key {
			t.remember(f.key, f.h, f.e)
			return f.h, f.e
		}
	}
	h, _ := t.hash.key(key)
	e := t.sh.t.find(h, key)
	t.remember(key, h, e)
	return h, e
}

// setFound records that the call's key now has the entry e (nil: none):
// after a Put made it, or a Del removed it.
func (t *tx) setFound(key string, e *entry) {
	for i := range t.nfound {
		if f := &t.keys[i]; same(key, f.key) {
			f.e = e
		}
	}
}

// remember keeps key's hash and entry (nil when absent) for the next
// lookup of the same key.
func (t *tx) remember(key string, h uint64, e *entry) {
	t.lastHash, t.last = h, e
	if e == nil {
		t.lastKey = key
	} else if t.lastKey != "" {
		t.lastKey = ""
	}
}

// forget drops what lookup remembered.
func (t *tx) forget() {
	t.last = nil
	if t.lastKey != "" {
		t.lastKey = ""
	}
}

func (t *tx) Get(key string) ([]int64, bool) {
	_, e := t.lookup(key)
	if e == nil || e.expireAt <= t.nowUS {
		return nil, false
	}
	return e.value(), true
}

func (t *tx) Put(key string, n int, ttl time.Duration) []int64 {
	if err := checkPut(n, ttl); err != nil {
		t.bad = err
		return discard(n)
	}
	h, e := t.lookup(key)
	if e == nil {
		e = t.sh.t.insert(h, key)
		t.setFound(key, e)
		t.remember(e.key, h, e)
	}
	return fill(e, n, ttl, t.nowUS)
}

// checkPut returns the error of a twin's Put of n integers with ttl that
// the store refuses: a key must never live forever, and an entry holds at
// most maxVals integers. Both are twin bugs, not a caller's.
func checkPut(n int, ttl time.Duration) error {
	switch {
	case ttl <= 0:
		return errBadTTL
	case n < 0 || n > maxVals:
		return errBadLen
	}
	return nil
}

// discard returns what a refused Put returns: n integers the twin may
// write, which nothing keeps, or none when n is negative or too many to
// allocate.
func discard(n int) []int64 {
	if n < 0 || n > maxVals {
		return nil
	}
	return make([]int64, n)
}

func (t *tx) Del(key string) bool {
	h, _ := t.lookup(key)
	t.forget()
	t.setFound(key, nil)
	return t.sh.t.remove(h, key, t.nowUS)
}

// Scratch returns n integers that stay the call's own until it ends (see
// engine.Scratch): a step builds a long value there, such as a sliding
// log, instead of allocating it.
func (t *tx) Scratch(n int) []int64 { return t.scratch.take(n) }

// multiTx is the core.Tx of a call whose keys span shards, all locked.
type multiTx struct {
	s       *Store
	nowUS   int64
	err     error
	scratch scratch
}

func (t *multiTx) takeErr() error { return t.err }

func (t *multiTx) Now() int64 { return t.nowUS }

func (t *multiTx) shard(key string) (*table, uint64) {
	i, h := t.s.shardOf(key)
	return &t.s.shards[i].t, h
}

func (t *multiTx) Get(key string) ([]int64, bool) {
	sh, h := t.shard(key)
	e := sh.find(h, key)
	if e == nil || e.expireAt <= t.nowUS {
		return nil, false
	}
	return e.value(), true
}

func (t *multiTx) Put(key string, n int, ttl time.Duration) []int64 {
	if err := checkPut(n, ttl); err != nil {
		t.err = err
		return discard(n)
	}
	sh, h := t.shard(key)
	e := sh.find(h, key)
	if e == nil {
		e = sh.insert(h, key)
	}
	return fill(e, n, ttl, t.nowUS)
}

func (t *multiTx) Del(key string) bool {
	sh, h := t.shard(key)
	return sh.remove(h, key, t.nowUS)
}

// Scratch is tx.Scratch.
func (t *multiTx) Scratch(n int) []int64 { return t.scratch.take(n) }

// scratch hands out integers for the length of one call, from one array
// reused by the shard's calls. An array grown past keepScratch integers is
// dropped when the call ends, so that a shard keeps no more than that.
type scratch struct {
	used int // first: a shard's Tx keeps it on the line of the shard's lock
	buf  []int64
}

const keepScratch = 4096

func (s *scratch) take(n int) []int64 {
	if s.used+n > cap(s.buf) {
		// Earlier slices keep the old array; the new one serves the rest
		// of the call.
		s.buf, s.used = make([]int64, max(n, 2*cap(s.buf), 64)), 0
	}
	out := s.buf[s.used : s.used+n : s.used+n]
	s.used += n
	return out
}

func (s *scratch) reset() {
	if s.used != 0 { // a write only when needed: see shardFields
		s.used = 0
	}
	if cap(s.buf) > keepScratch {
		s.buf = nil
	}
}
