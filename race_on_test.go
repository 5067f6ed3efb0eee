//go:build race

package ratekit_test

// raceEnabled: the race detector makes sync.Pool drop some of what it is
// given, so allocation counts that rely on a pool do not hold under it.
const raceEnabled = true
