package memory

import (
	"math"
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

// entry is one key's value and expiry, in two cache lines (128 bytes, a
// size class whose objects start on a 128-byte boundary, so that no entry
// shares a line with another): what a lookup compares (the key with its
// bytes when they fit, set when the entry is made) and the value's length
// (written only when it changes), then what a decision reads and writes
// (the expiry and a value of up to six integers). A decision on a known
// key with a short key and a fixed-size state reads both lines and writes
// only the second. The key's hash lives in its slot (cell), not here, and
// a long value's array behind a pointer: a third line for those made an
// entry 192 bytes, and a store of a million keys 226 bytes a key against
// 162 (BenchmarkManyKeys).
type entry struct {
	key  string // kbuf[:len(key)] when it fits there
	kbuf [inlineKey]byte
	// plain is plainAt(key): the length of its prefix when key is
	// prefix{T} with nothing to escape in T, else -1.
	plain int32
	// n is the value's length: inline[:n] when n <= inlineVals, else
	// (*long)[:n]. fill writes it only when it changes.
	n int32

	expireAt int64 // Unix µs on the store's clock
	inline   [inlineVals]int64
	// long holds the array of a value too long for inline, kept when the
	// value shrinks so that it allocates only past its largest size.
	long *[]int64
}

const (
	// inlineVals is the largest value kept inside its entry: every
	// algorithm but the sliding log stores at most this many integers.
	inlineVals = 6
	// inlineKey is the longest key kept inside its entry.
	inlineKey = 40
	// maxVals is the longest value an entry holds (n is an int32).
	maxVals = math.MaxInt32
)

// value returns e's value.
func (e *entry) value() []int64 {
	if e.n <= inlineVals {
		return e.inline[:e.n]
	}
	return (*e.long)[:e.n]
}

// longCap returns the capacity of e's array for long values, 0 when it
// has none.
func (e *entry) longCap() int {
	if e.long == nil {
		return 0
	}
	return cap(*e.long)
}

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
		if int(e.plain) == len(prefix) && len(e.key) == len(prefix)+len(key)+2 &&
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
	e := &entry{}
	if len(key) <= inlineKey {
		n := copy(e.kbuf[:], key)
		e.key = unsafe.String(&e.kbuf[0], n)
	} else {
		e.key = strings.Clone(key)
	}
	e.plain = -1
	if p := plainAt(e.key); p <= math.MaxInt32 {
		e.plain = int32(p)
	}
	t.place(cell{h, e})
	t.n++
	return e
}

func (t *table) place(c cell) {
	mask := uint64(len(t.slots) - 1)
	i := c.h & mask
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = c
}

// resize moves every entry to a table of size slots.
func (t *table) resize(size int) {
	old := t.slots
	t.slots = make([]cell, size)
	for _, s := range old {
		if s.e != nil {
			t.place(s)
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
// shrinks when it is mostly empty. A table with nothing to drop is only
// read: a sweep of live keys allocates nothing.
func (t *table) sweep(now int64) int {
	live := 0
	for _, s := range t.slots {
		if s.e != nil && s.e.expireAt > now {
			live++
		}
	}
	dropped := t.n - live
	if dropped == 0 {
		return 0
	}
	size := len(t.slots)
	for size > 8 && 8*live < size {
		size /= 2
	}
	if live == 0 {
		size = 0
	}
	old := t.slots
	t.slots, t.n = nil, live
	if size > 0 {
		t.slots = make([]cell, size)
		for _, s := range old {
			if s.e != nil && s.e.expireAt > now {
				t.place(s)
			}
		}
	}
	return dropped
}

// fill makes e a zeroed value of n integers (at most maxVals) expiring
// ttl after now, and returns it to be written. A value too large for the
// entry goes to its own array (long), grown by half again when it must
// grow and kept when the value shrinks, even to a few integers: a sliding
// log that grows by a few entries per decision, or empties and fills
// again, allocates only to pass its largest size yet.
func fill(e *entry, n int, ttl time.Duration, now int64) []int64 {
	// The length and expiry change last: should the allocation fail, the
	// entry keeps its earlier value.
	var v []int64
	switch {
	case n <= inlineVals:
		// A fixed-size state: three stores zero it, without clear's call.
		e.inline = [inlineVals]int64{}
		v = e.inline[:n]
	case e.longCap() < n:
		v = make([]int64, n, n+min(n/2, maxVals-n))
		if e.long == nil {
			e.long = new([]int64)
		}
		*e.long = v
	default:
		v = (*e.long)[:n]
		clear(v)
	}
	e.expireAt = now + int64(ttl/time.Microsecond)
	if e.n != int32(n) { // a write to the first line only when it changes
		e.n = int32(n)
	}
	return v
}
