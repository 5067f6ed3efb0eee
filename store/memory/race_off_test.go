//go:build !race

package memory_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
