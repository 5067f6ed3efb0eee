//go:build race

package memory_test

// raceEnabled: the race detector makes sync.Pool drop some of what it is
// given, so allocation counts that rely on a pool (the script path's
// frames) do not hold under it.
const raceEnabled = true
