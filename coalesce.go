package ratekit

import (
	"fmt"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// Coalesce returns a limiter that decides as l does, on the same keys and
// state, but gathers the Allow and AllowN calls that many goroutines make
// at once into batch script calls: for throughput on a Redis store under
// concurrent load, where each script call's parsing, lookup and reply,
// not the decision, is most of the server's work.
//
// Nothing waits for company. A call is sent at once, alone and exactly as
// l sends it, when fewer than two calls of its group are in flight; the
// calls that come while two are in flight are queued, and go together, as
// one batch (up to 64 decisions per script call, or up to 256 on one key,
// in one round trip; a key's requests past 256 in a second),
// as soon as one of them returns. Two in flight keep the server busy: the
// next batch is there while the last one's reply travels back. A lone
// call therefore costs what it costs on l. A group is
// every key on a store that is one node (core.SingleNode: a Redis server
// that is not a cluster), and one cluster slot on any other, where only
// calls on the same key share a script call (ratekit makes each key its
// own hash tag), so coalescing there helps hot keys and cannot help calls
// spread over many keys. On a store that decides in process (the memory
// store) there is nothing to gather: calls are decided as by l.
//
// Decisions are those of l: a batch decides its calls in the order they
// came, at the time it is sent, so each call is decided after every call
// that returned before it began. A call whose ctx ends while it waits in
// the queue returns an error wrapping core.ErrStore and ctx.Err(), and
// nothing is sent for it; one whose ctx ends after its batch went out
// returns the same error at once, but its decision may have counted, as
// with a call whose ctx ends while Redis runs it. A batch is sent with no
// cancellation (one caller leaving cancels no one else's decision) and
// the latest deadline of its calls, none when one of them has none; its
// context carries the values of its first call's ctx. While two calls
// are in flight the calls of their group wait for one: give calls deadlines, and
// the client a timeout, as for any call to a store.
//
// Peek, Refund, Reset and AllowMany go to l's store directly, and a
// policy built from the returned limiter decides as one built from l.
// Any Limiter coalesces, a policy too (its batches decide every limit of
// each request). Coalesce of a coalescing limiter returns it; a nil or
// zero l is an error wrapping core.ErrInvalidConfig.
func Coalesce(l *Limiter) (*Limiter, error) {
	if l.engine() == nil {
		return nil, fmt.Errorf("%w: ratekit.Coalesce: the limiter is nil or was not built by its New", core.ErrInvalidConfig)
	}
	if l.c != nil {
		return l, nil
	}
	return &Limiter{e: l.e, c: engine.NewCoalescer(l.e)}, nil
}
