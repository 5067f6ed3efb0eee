package faulttest

import (
	"time"

	"github.com/ratekit/ratekit/algorithms"
)

// limitParams gives every parameter of a: limit to the one that is its
// limit (capacity, limit, burst), other to every other count (rates), d
// to every duration (intervals, windows, periods), and every choice its
// default.
func limitParams(a algorithms.Algorithm, limit, other int64, d time.Duration) algorithms.Params {
	p := algorithms.Params{}
	for _, prm := range a.Params {
		switch {
		case prm.Limit:
			p[prm.Name] = limit
		case prm.Kind == algorithms.Duration:
			p[prm.Name] = int64(d)
		case prm.Kind == algorithms.Choice:
			p[prm.Name] = prm.Default
		default:
			p[prm.Name] = other
		}
	}
	return p
}
