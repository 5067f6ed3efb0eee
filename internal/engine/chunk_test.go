package engine

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// chunk's calls hold requests of one group each, in the order they came,
// at most maxBatch of them, or more of one key alone; no key has requests
// in two calls of one round, and a key's requests go round by round in
// order, keyCap in each: the store may run the calls of a round in any
// order.
func TestChunk(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keyCap := rapid.SampledFrom([]int{maxBatch, maxCoalescedKey}).Draw(t, "keyCap")
		nkeys := rapid.IntRange(1, 300).Draw(t, "keys")
		var items []item
		var groups [][]int
		for g := range rapid.IntRange(1, 4).Draw(t, "groups") {
			var grp []int
			for range rapid.OneOf(rapid.IntRange(1, 70), rapid.IntRange(60, 700)).Draw(t, "size") {
				k := rapid.IntRange(0, nkeys-1).Draw(t, "key")
				grp = append(grp, len(items))
				// Groups never share a key, as groups of slots or tags.
				items = append(items, item{key: fmt.Sprintf("g%d:k%d", g, k)})
			}
			groups = append(groups, grp)
		}
		groupOf := map[int]int{}
		perKey := map[string]int{}
		for g, grp := range groups {
			for _, i := range grp {
				groupOf[i] = g
				perKey[items[i].key]++
			}
		}
		rounds := chunk(items, groups, keyCap)
		type place struct{ round, call, pos int }
		at := map[int]place{}
		for r, calls := range rounds {
			owner := map[string]int{} // key -> its call in round r
			for j, c := range calls {
				if len(c) == 0 || len(c) > max(maxBatch, keyCap) {
					t.Fatalf("round %d call %d holds %d requests", r, j, len(c))
				}
				if len(c) > maxBatch {
					for _, i := range c {
						if items[i].key != items[c[0]].key {
							t.Fatalf("round %d call %d of %d requests holds two keys", r, j, len(c))
						}
					}
				}
				for x, i := range c {
					if _, dup := at[i]; dup {
						t.Fatalf("request %d sent twice", i)
					}
					at[i] = place{r, j, x}
					if groupOf[i] != groupOf[c[0]] {
						t.Fatalf("round %d call %d mixes groups", r, j)
					}
					if x > 0 && c[x-1] >= i {
						t.Fatalf("round %d call %d out of order: %v", r, j, c)
					}
					k := items[i].key
					if o, ok := owner[k]; ok && o != j {
						t.Fatalf("key %s in calls %d and %d of round %d", k, o, j, r)
					}
					owner[k] = j
				}
			}
		}
		if len(at) != len(items) {
			t.Fatalf("%d of %d requests sent", len(at), len(items))
		}
		// A key's n-th request goes in round n / keyCap.
		seen := map[string]int{}
		for i := range items {
			k := items[i].key
			if r := at[i].round; r != seen[k]/keyCap {
				t.Fatalf("request %d, number %d of key %s, in round %d", i, seen[k], k, r)
			}
			seen[k]++
		}
		// A group of up to maxBatch requests is one call.
		for g, grp := range groups {
			calls := map[[2]int]int{}
			for _, i := range grp {
				calls[[2]int{at[i].round, at[i].call}]++
			}
			if len(grp) <= maxBatch && len(calls) != 1 {
				t.Fatalf("group %d of %d requests in %d calls", g, len(grp), len(calls))
			}
		}
	})
}
