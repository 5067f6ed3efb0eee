package engine

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// groupByTag's groups hold every request once, those of one key in one
// group, in the order they came, the groups in order of their first
// request; whether it numbers the keys by a scan (few requests) or a map
// (many), and with the buffers of a batch used before.
func TestGroupByTag(t *testing.T) {
	b := getBatch(0)
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.OneOf(rapid.IntRange(1, 16), rapid.IntRange(17, 300)).Draw(t, "requests")
		nkeys := rapid.IntRange(1, n).Draw(t, "keys")
		items := make([]item, n+1)
		var idx []int
		for i := 1; i <= n; i++ { // item 0 is never asked for
			items[i] = item{key: fmt.Sprint("k", rapid.IntRange(0, nkeys-1).Draw(t, "key"))}
			idx = append(idx, i)
		}
		// Some requests left out, as a retry leaves out those decided.
		idx = slices.DeleteFunc(idx, func(int) bool { return rapid.IntRange(0, 9).Draw(t, "skip") == 0 })
		if len(idx) == 0 {
			return
		}
		// What a map of slices gives.
		var want [][]int
		at := map[string]int{}
		for _, i := range idx {
			g, ok := at[items[i].key]
			if !ok {
				g = len(want)
				at[items[i].key] = g
				want = append(want, nil)
			}
			want[g] = append(want[g], i)
		}
		got := b.groupByTag(items, idx)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("groups %v, want %v", got, want)
		}
	})
}
