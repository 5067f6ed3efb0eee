package engine

import "fmt"

// Two bounds that several algorithms' Spec.Bound and Spec.LooseBound are
// made of. Each checks the intervals that end at the newest request of
// allowed, as every Bound does: the older ones were checked when they were
// the newest.

// RollingBound returns an error when the window (last-window, last] (µs)
// before the newest request, at last, holds more than max.
func RollingBound(max, window int64, allowed []Event) error {
	last := allowed[len(allowed)-1].At
	var sum int64
	for i := len(allowed) - 1; i >= 0 && allowed[i].At > last-window; i-- {
		sum += allowed[i].Cost
	}
	if sum > max {
		return fmt.Errorf("%d allowed in (%d, %d], at most %d may pass", sum, last-window, last, max)
	}
	return nil
}

// RateBound returns an error unless, over every closed interval [a, b]
// ending at the newest request, allowed*per <= burst*per + rate*(b-a): at
// most burst at once and rate per per (µs) beyond it.
func RateBound(burst, rate, per int64, allowed []Event) error {
	last := allowed[len(allowed)-1].At
	var sum int64
	for i := len(allowed) - 1; i >= 0; i-- {
		sum += allowed[i].Cost
		if sum*per > burst*per+rate*(last-allowed[i].At) {
			return fmt.Errorf("%d allowed in [%d, %d], more than %d + %d per %dµs", sum, allowed[i].At, last, burst, rate, per)
		}
	}
	return nil
}
