package memory

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// The table against a map, with hashes drawn from a few values so that
// keys share hashes and home slots and probe sequences wrap around:
// every key inserted is found until it is removed or swept, and no other.
func TestTableAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var tb table
		model := map[string]int64{} // key -> expireAt
		hashOf := map[string]uint64{}
		hashes := 1 + r.IntN(12)
		for op := 0; op < 300; op++ {
			k := "k" + strconv.Itoa(r.IntN(40))
			if round%2 == 0 {
				k += strings.Repeat("x", inlineKey) // stored outside the entry
			}
			h, ok := hashOf[k]
			if !ok {
				// Small hashes: every key's home is in the low slots,
				// and many keys share a hash.
				h = uint64(r.IntN(hashes)) * 7
				hashOf[k] = h
			}
			now := int64(op)
			switch r.IntN(4) {
			case 0, 1:
				e := tb.find(h, k)
				if _, in := model[k]; in != (e != nil) {
					t.Fatalf("round %d op %d: find(%q) = %v, in model %v", round, op, k, e, in)
				}
				if e == nil {
					e = tb.insert(h, k)
				}
				fill(e, 1+r.IntN(10), 1000, now)
				e.expireAt = now + int64(r.IntN(50))
				model[k] = e.expireAt
			case 2:
				exp, in := model[k]
				if live := tb.remove(h, k, now); live != (in && exp > now) {
					t.Fatalf("round %d op %d: remove(%q) = %v, model %v %d", round, op, k, live, in, exp)
				}
				delete(model, k)
			case 3:
				want := 0
				for k, exp := range model {
					if exp <= now {
						delete(model, k)
						want++
					}
				}
				if got := tb.sweep(now); got != want {
					t.Fatalf("round %d op %d: sweep dropped %d, want %d", round, op, got, want)
				}
			}
			if tb.n != len(model) {
				t.Fatalf("round %d op %d: %d entries, model %d", round, op, tb.n, len(model))
			}
			for k := range hashOf {
				e := tb.find(hashOf[k], k)
				exp, in := model[k]
				if in != (e != nil) || (e != nil && (e.key != k || e.expireAt != exp)) {
					t.Fatalf("round %d op %d: find(%q) = %+v, model %v %d", round, op, k, e, in, exp)
				}
			}
		}
	}
}

// A value lives in its entry until it outgrows it; from then on it keeps
// an array of its own, grown in place by half again, even when it
// shrinks: it allocates only past its largest size.
func TestFill(t *testing.T) {
	var e entry
	big := false
	for _, n := range []int{1, 6, 7, 8, 30, 3, 40, 6} {
		before := e.longCap()
		v := fill(&e, n, 1000, 0)
		big = big || n > inlineVals
		if len(v) != n || (e.long != nil) != big || len(e.value()) != n || &e.value()[0] != &v[0] {
			t.Fatalf("fill(%d): len %d, own array %v", n, len(v), e.long != nil)
		}
		if (n <= inlineVals) != (&v[0] == &e.inline[0]) {
			t.Fatalf("fill(%d): inline %v", n, &v[0] == &e.inline[0])
		}
		if grew := e.longCap() != before; big && grew != (n > before) {
			t.Fatalf("fill(%d): cap %d -> %d", n, before, e.longCap())
		}
		for i := range v {
			if v[i] != 0 {
				t.Fatalf("fill(%d): not zeroed", n)
			}
			v[i] = int64(i + 1)
		}
	}
}

// The layouts the comments on entry and shardFields promise: a decision
// on a known key writes one line of its entry and one of its shard.
func TestLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("SKIPPED: the layout is laid out for 64-bit platforms")
	}
	var e entry
	var sh shardFields
	for _, c := range []struct {
		what        string
		first, last uintptr // offsets of the first and last byte
		wantLine    uintptr
	}{
		{"entry's key", unsafe.Offsetof(e.key), unsafe.Offsetof(e.kbuf) + inlineKey - 1, 0},
		{"entry's plain and length", unsafe.Offsetof(e.plain), unsafe.Offsetof(e.n) + unsafe.Sizeof(e.n) - 1, 0},
		{"entry's written fields", unsafe.Offsetof(e.expireAt), unsafe.Offsetof(e.inline) + unsafe.Sizeof(e.inline) - 1, 1},
		{"shard's written fields", unsafe.Offsetof(sh.mu), unsafe.Offsetof(sh.tx) + unsafe.Offsetof(sh.tx.scratch) + unsafe.Offsetof(sh.tx.scratch.used) + unsafe.Sizeof(sh.tx.scratch.used) - 1, 0},
		{"shard's in-process fields", unsafe.Offsetof(sh.tx) + unsafe.Offsetof(sh.tx.tagHash), unsafe.Offsetof(sh.tx) + unsafe.Offsetof(sh.tx.last) + unsafe.Sizeof(sh.tx.last) - 1, 0},
	} {
		if c.first/64 != c.wantLine || c.last/64 != c.wantLine {
			t.Errorf("%s: bytes %d-%d, want them on line %d", c.what, c.first, c.last, c.wantLine)
		}
	}
	if unsafe.Sizeof(e) != 128 {
		t.Errorf("entry is %d bytes, want 128 (a size class whose objects start a pair of lines)", unsafe.Sizeof(e))
	}
}

// A sweep that finds nothing expired only reads the table.
func TestSweepLiveAllocatesNothing(t *testing.T) {
	var tb table
	for i := range 1000 {
		k := "k" + strconv.Itoa(i)
		fill(tb.insert(uint64(i)*0x9E3779B97F4A7C15, k), 3, time.Second, 0)
	}
	if a := testing.AllocsPerRun(10, func() { tb.sweep(1) }); a != 0 {
		t.Errorf("sweep of live keys: %v allocations, want 0", a)
	}
	if got := tb.sweep(1 << 40); got != 1000 || tb.n != 0 {
		t.Errorf("sweep after every TTL dropped %d, %d left", got, tb.n)
	}
}
