package engine

import "github.com/ratekit/ratekit/core"

// scratcher is a core.Tx that lends a step memory for the length of one
// call: the memory store's, which reuses one array per shard.
type scratcher interface {
	Scratch(n int) []int64
}

// Scratch returns n integers, of any value, for a step to build a long
// state in (the sliding log's next log): they stay the step's until the
// call ends, and commit copies them into the store. A Tx that lends memory
// (the memory store's) saves the step an allocation per decision; any
// other gets a new slice.
func Scratch(tx core.Tx, n int) []int64 {
	if s, ok := tx.(scratcher); ok {
		return s.Scratch(n)
	}
	return make([]int64, n)
}
