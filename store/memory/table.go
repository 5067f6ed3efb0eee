package memory

import (
	"strings"
	"time"
	"unsafe"
)

// A shard's keys live in an open-addressing table of its own: slots of
// (hash of the key, entry), probed linearly from the hash, at most
// half full. A decision hashes its key once (hasher), finds the slot
// whose hash matches, and compares the key once, on that entry; the key's
// bytes sit inside the entry when they fit, beside its value. A decision
// on a known key then touches the shard, one slot and one entry: a map
// with string keys cost about twice as many cache misses (its header, its
// groups, the entry, the key's own array) and a third of a decision's time.

// entry is one key's value and expiry. Its fields are in the order a
// decision reads them: the key and how to compare it, the expiry, the
// key's bytes, then the value, so that a small entry's first 128 bytes
// hold all of it but the hash.
type entry struct {
	key string // kbuf[:len(key)] when it fits there
	// plain is plainAt(key): the length of its prefix when key is
	// prefix{T} with nothing to escape in T, else -1.
	plain    int
	expireAt int64 // Unix µs on the store's clock
	kbuf     [inlineKey]byte
	// vals is the value: inline[:n] when it fits there, so that reading a
	// fixed-size state touches the entry alone, or an array of its own.
	vals   []int64
	inline [inlineVals]int64
	h      uint64 // the hash of key
}

const (
	// inlineVals is the largest value kept inside its entry: every
	// algorithm but the sliding log stores at most this many integers.
	inlineVals = 6
	// inlineKey is the longest key kept inside its entry (the entry is
	// then 160 bytes, one allocation size class).
	inlineKey = 48
)

type cell struct {
	h uint64
	e *entry // nil: empty
}

// table is a shard's keys. Its zero value is empty.
type table struct {
	slots []cell // a power of two long, or nil
	n     int    // entries held
}

// find returns key's entry (live or expired), or nil.
func (t *table) find(h uint64, key string) *entry {
	if t.slots == nil {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && s.e.key == key {
			return s.e
		}
	}
}

// findParts returns the entry of keyspace.Key(prefix, key, "") (live or
// expired), comparing the parts with the entries' keys instead of building
// the key, and sure = true; or sure = false when an entry with hash h
// holds a key that needs escapes, which only the built key can be
// compared with (find).
func (t *table) findParts(h uint64, prefix, key string) (e *entry, sure bool) {
	if t.slots == nil {
		return nil, true
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil, true
		}
		if s.h != h {
			continue
		}
		e := s.e
		if e.plain < 0 {
			return nil, false
		}
		// A plain entry's tag holds nothing to escape: it equals key
		// exactly when key needs no escape and the keys are equal.
		if e.plain == len(prefix) && len(e.key) == len(prefix)+len(key)+2 &&
			e.key[len(prefix)+1:len(e.key)-1] == key && e.key[:len(prefix)] == prefix {
			return e, true
		}
	}
}

// insert adds an entry for key, which find did not find, copying the key
// (it may be the caller's reused buffer).
func (t *table) insert(h uint64, key string) *entry {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(8, 2*len(t.slots)))
	}
	e := &entry{h: h}
	if len(key) <= inlineKey {
		n := copy(e.kbuf[:], key)
		e.key = unsafe.String(&e.kbuf[0], n)
	} else {
		e.key = strings.Clone(key)
	}
	e.plain = plainAt(e.key)
	t.place(e)
	t.n++
	return e
}

func (t *table) place(e *entry) {
	mask := uint64(len(t.slots) - 1)
	i := e.h & mask
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = cell{e.h, e}
}

// resize moves every entry to a table of size slots.
func (t *table) resize(size int) {
	old := t.slots
	t.slots = make([]cell, size)
	for _, s := range old {
		if s.e != nil {
			t.place(s.e)
		}
	}
}

// remove drops key's entry and reports whether it was live at now.
func (t *table) remove(h uint64, key string, now int64) bool {
	if t.slots == nil {
		return false
	}
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for {
		s := t.slots[i]
		if s.e == nil {
			return false
		}
		if s.h == h && s.e.key == key {
			break
		}
		i = (i + 1) & mask
	}
	live := t.slots[i].e.expireAt > now
	// Shift the entries after it back, so that no probe sequence has a hole
	// (deletion without tombstones).
	for j := (i + 1) & mask; t.slots[j].e != nil; j = (j + 1) & mask {
		home := t.slots[j].h & mask
		// Move j into the hole at i unless its home lies cyclically in
		// (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = cell{}
	t.n--
	return live
}

// sweep drops every entry expired at now and returns how many; the table
// shrinks when it is mostly empty.
func (t *table) sweep(now int64) int {
	var live []*entry
	for _, s := range t.slots {
		if s.e != nil && s.e.expireAt > now {
			live = append(live, s.e)
		}
	}
	dropped := t.n - len(live)
	if dropped == 0 {
		return 0
	}
	size := len(t.slots)
	for size > 8 && 8*len(live) < size {
		size /= 2
	}
	if len(live) == 0 {
		size = 0
	}
	t.slots, t.n = nil, len(live)
	if size > 0 {
		t.slots = make([]cell, size)
		for _, e := range live {
			t.place(e)
		}
	}
	return dropped
}

// fill makes e a zeroed value of n integers expiring ttl after now, and
// returns it to be written. A value too large for the entry gets an array
// of its own, grown by half again when it must grow, and kept when the
// value shrinks, even to a few integers: a sliding log that grows by a
// few entries per decision, or empties and fills again, allocates only
// to pass its largest size yet.
func fill(e *entry, n int, ttl time.Duration, now int64) []int64 {
	e.expireAt = now + int64(ttl/time.Microsecond)
	if n <= inlineVals && !e.isLong() {
		// A fixed-size state: three stores zero it, without clear's call.
		e.inline = [inlineVals]int64{}
		e.vals = e.inline[:n]
		return e.vals
	}
	switch {
	case cap(e.vals) >= n && e.isLong():
		e.vals = e.vals[:n]
	case n <= inlineVals:
		e.vals = e.inline[:n]
	default:
		e.vals = make([]int64, n, n+n/2)
	}
	clear(e.vals)
	return e.vals
}

// isLong reports whether e's value has an array of its own.
func (e *entry) isLong() bool {
	return cap(e.vals) > inlineVals || cap(e.vals) > 0 && &e.vals[:1][0] != &e.inline[0]
}
