//go:build !race

package ratekit_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
