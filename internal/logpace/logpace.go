// Package logpace paces error lines: at most one per interval, each
// counting the lines left out since the one before, so that a dead store
// answering every request with an error does not flood the log.
// httplimit and grpclimit log their store failures through it.
package logpace

import (
	"sync/atomic"
	"time"
)

// Every is the least time between two paced lines.
const Every = 10 * time.Second

// Pacer decides which lines are logged. The zero Pacer is ready to use,
// and safe for concurrent use.
type Pacer struct {
	// next is when, in Unix nanoseconds, the next line may be logged;
	// suppressed counts the lines left out since the last.
	next       atomic.Int64
	suppressed atomic.Int64
}

// Allow reports whether a line may be logged at now and, when it may, how
// many lines were left out since the last one logged. A line that may not
// be logged is counted as left out.
func (p *Pacer) Allow(now time.Time) (ok bool, suppressed int64) {
	t := now.UnixNano()
	next := p.next.Load()
	if t < next || !p.next.CompareAndSwap(next, t+int64(Every)) {
		p.suppressed.Add(1)
		return false, 0
	}
	return true, p.suppressed.Swap(0)
}
