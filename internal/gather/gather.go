// Package gather holds what the two places that gather concurrent calls
// into one send share: ratekit.Coalesce (internal/engine, batch scripts)
// and the go-redis store's pipelining (store/scriptproto, pipelines):
// the hand-off between their callers (Line) and the context a gathered
// send goes out with (Context).
package gather

import (
	"context"
	"time"
)

// Context returns the context a gathered send goes out with, given its
// calls' contexts in order: the first call's values, no cancellation (no
// caller leaving may fail the others' calls), and the latest deadline of
// them all, none when one has none.
func Context[W any](calls []W, ctx func(W) context.Context) (context.Context, context.CancelFunc) {
	out := context.WithoutCancel(ctx(calls[0]))
	var latest time.Time
	for _, w := range calls {
		d, ok := ctx(w).Deadline()
		if !ok {
			return out, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(out, latest)
}
