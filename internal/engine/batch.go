package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
	"github.com/ratekit/ratekit/internal/slot"
)

// maxBatch is the most decisions one batch script call makes. A script
// holds its server for every decision it makes, and the gain per
// decision flattens out after a few dozen (the call's parsing, lookup and
// reply are paid once per call); a larger group goes as several calls in
// the same round trip.
const maxBatch = 64

// maxCoalescedKey is the most requests on one key that a coalesced batch
// sends in one script call. A key's requests in two calls cost a round
// trip each (chunk, and the store's own waves keep them in order), so a
// hot key's queue goes in one call: with 256 goroutines on one key
// (rueidis, go test on this 2-core host) 1.15-1.25x the decisions per
// second of calls of maxBatch in successive round trips, and as many as
// those calls in one round trip made before. The queue is at most as
// long as the goroutines waiting; past this cap the rest waits for
// another round trip.
const maxCoalescedKey = 4 * maxBatch

// AllowMany decides every request, in order, each with its own result:
// as DecideRequest would, one after the other; every request's Op must
// be core.OpAllow. On a store that
// decides in process, that is what it does. On any other, requests go to
// the store in batch calls of the composed script, up to maxBatch
// requests each: on a store that is one node (core.SingleNode) any
// requests together, on any other those on the same user key (whose
// storage keys share one hash tag). The calls go in one RunScripts when
// the runner is a core.BatchRunner, unless a key has more than maxBatch
// requests: its next maxBatch go in a second RunScripts once the first is
// back, and so on (chunk).
func (e *Engine) AllowMany(ctx context.Context, reqs []core.Request) []core.Result {
	out := make([]core.Result, len(reqs))
	if e == nil {
		for i := range out {
			out[i].Err = ErrZero
		}
		return out
	}
	b := getBatch(len(reqs))
	defer b.put()
	items, valid := b.items, b.idx
	for i, r := range reqs {
		if r.Op != core.OpAllow {
			out[i].Err = fmt.Errorf("%w: AllowMany decides OpAllow requests, got %v: call Decide", core.ErrInvalidConfig, r.Op)
			continue
		}
		if err := keyspace.CheckKey(r.Key); err != nil {
			out[i].Err = err
			continue
		}
		if err := e.checkKeys(r.Keys); err != nil {
			out[i].Err = err
			continue
		}
		maxCost, err := e.given(r.Params)
		if err == nil {
			err = params.Cost(r.N, maxCost)
		}
		if err != nil {
			out[i].Err = err
			continue
		}
		items[i] = item{key: r.Key, n: r.N, ps: r.Params, keys: r.Keys}
		valid = append(valid, i)
	}
	// Then the clock and the context, in Decide's order: each request
	// gets the error AllowN would return for it.
	now, err := params.Now(e.clock)
	if err == nil {
		err = Ended(ctx)
	}
	if err != nil {
		for _, i := range valid {
			out[i].Err = err
		}
		return out
	}
	e.decideItems(ctx, b, now, items, valid, maxBatch, out)
	if e.onShadow != nil {
		for _, i := range valid {
			e.shadowDeny(ctx, reqs[i].Key, out[i].Decision, out[i].Err)
		}
	}
	return out
}

// item is one request of a batch: the user's key, the cost, the limits
// it gives (nil: the engine's own) and its limits' own keys (nil: none),
// checked.
type item struct {
	key  string
	n    int64
	ps   []core.Params
	keys []string
}

// batch holds the buffers of one batch's decisions (AllowMany's, a
// coalesced group's), reused from batch to batch: deciding a batch of a
// few requests allocates its results and what the store keeps, little
// more. Its slices are cut to length by the code that fills them.
type batch struct {
	items  []item
	idx    []int
	groups [][]int
	gid    []int // groupByTag: each request's group
	count  []int // groupByTag: each group's requests
	flat   []int // groupByTag: the groups' requests, group after group
	calls  []core.ScriptCall
	args   []int64
	keys   []string
	buf    []byte
}

var batches = sync.Pool{New: func() any { return new(batch) }}

// maxPooled is the most requests a pooled batch is sized for: a larger
// one leaves its buffers to the garbage collector.
const maxPooled = 4 * maxBatch

// getBatch returns a batch whose items are n zero items and whose idx is
// empty, with room for n.
func getBatch(n int) *batch {
	b := batches.Get().(*batch)
	b.items = slices.Grow(b.items[:0], n)[:n]
	b.idx = slices.Grow(b.idx[:0], n)
	return b
}

// put returns b to the pool, holding none of its callers' keys, limits
// or scripts.
func (b *batch) put() {
	if cap(b.items) > maxPooled || cap(b.calls) > maxPooled || cap(b.buf) > 64<<10 {
		return
	}
	clear(b.items)
	clear(b.keys)
	clear(b.calls)
	clear(b.groups)
	batches.Put(b)
}

// SameParams reports whether two requests give the same limits (a batch
// call's limits are the same for every request in it), each checked by
// AsParams: Params of another type may not be comparable.
func SameParams(a, b []core.Params) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// singleNode reports whether the store is, now, one node on which a
// script's keys may span slots.
func (e *Engine) singleNode() bool {
	sn, ok := e.runner.(core.SingleNode)
	return ok && sn.SingleNode()
}

// decideItems decides the items at indexes idx, all valid, at now, in
// order, into out (indexed like items): grouped as the store allows,
// each group in batch calls of up to maxBatch decisions, or of up to
// keyCap on one key (chunk).
func (e *Engine) decideItems(ctx context.Context, b *batch, now int64, items []item, idx []int, keyCap int, out []core.Result) {
	if len(idx) == 0 {
		return
	}
	if e.local != nil {
		var buf [4*MaxLimits + 2]int64
		for _, i := range idx {
			it := &items[i]
			if it.keys != nil {
				// Keys of their own: through the script, whose twin the
				// store runs on every key it touches.
				out[i].Decision, out[i].Err = e.decide(ctx, it.key, it.n, ModeAllow, now, it.ps, it.keys)
				continue
			}
			r, err := e.inProcess(it.key, it.n, ModeAllow, now, it.ps, buf[:0])
			if err == nil {
				out[i].Decision, err = e.decode(it.key, r, it.ps)
			}
			out[i].Err = err
		}
		return
	}
	idx, apart := byParams(items, idx)
	anySlot := e.singleNode()
	var groups [][]int
	if anySlot {
		groups = splitByParams(b.groups[:0], items, idx)
		b.groups = groups
	} else {
		groups = b.groupByTag(items, idx)
	}
	retry := e.runGroups(ctx, b, now, items, groups, anySlot, keyCap, out)
	if len(retry) > 0 {
		// The store took itself for one node and met a cluster (it said
		// CROSSSLOT, running nothing): the same requests, key by key.
		e.runGroups(ctx, b, now, items, b.groupByTag(items, retry), false, keyCap, out)
	}
	// The requests on keys that others on the same key gave other limits
	// than: one call each, in order.
	for _, i := range apart {
		it := &items[i]
		f := frames.Get().(*frame)
		r, err := e.script(ctx, f, it.key, it.n, ModeAllow, now, it.ps, it.keys)
		if err == nil {
			out[i].Decision, err = e.decode(it.key, r, it.ps)
		}
		out[i].Err = err
		f.put()
	}
}

// byParams returns the items at indexes idx that may go in batch calls,
// and apart, those on a key whose requests give different limits (a
// call's limits are the same for each of its requests, and a key's
// requests in two calls of one round would run in any order): each in
// the order of idx. When every request gives the same limits, as is
// usual, apart is nil.
func byParams(items []item, idx []int) (batch, apart []int) {
	if same(items, idx) {
		return idx, nil
	}
	first := make(map[string]int, len(idx)) // key -> its first item
	split := map[string]bool{}              // keys whose requests differ
	for _, i := range idx {
		if f, ok := first[items[i].key]; !ok {
			first[items[i].key] = i
		} else if !SameParams(items[i].ps, items[f].ps) {
			split[items[i].key] = true
		}
	}
	if len(split) == 0 {
		return idx, nil
	}
	for _, i := range idx {
		if split[items[i].key] {
			apart = append(apart, i)
		} else {
			batch = append(batch, i)
		}
	}
	return batch, apart
}

// splitByParams appends to groups the items at indexes idx split into
// groups that give the same limits, each in the order of idx, the groups
// in order of their first item. When every item gives the same limits,
// as is usual, the one group is idx.
func splitByParams(groups [][]int, items []item, idx []int) [][]int {
	if len(idx) == 0 {
		return groups
	}
	if same(items, idx) {
		return append(groups, idx)
	}
next:
	for _, i := range idx {
		for g := range groups {
			if SameParams(items[groups[g][0]].ps, items[i].ps) {
				groups[g] = append(groups[g], i)
				continue next
			}
		}
		groups = append(groups, []int{i})
	}
	return groups
}

// same reports whether the items at indexes idx give the same limits.
func same(items []item, idx []int) bool {
	if len(idx) == 0 {
		return true
	}
	for _, i := range idx[1:] {
		if !SameParams(items[i].ps, items[idx[0]].ps) {
			return false
		}
	}
	return true
}

// runGroups sends each group as batch calls (one decision: the single
// script), marked AnySlot when anySlot, in the rounds of chunk, and
// decodes each reply into out. It returns, in order,
// the items of AnySlot calls the store refused for spanning slots, and
// every item of the rounds after the first such refusal (sent with the
// retry, they keep their place behind the refused ones).
func (e *Engine) runGroups(ctx context.Context, b *batch, now int64, items []item, groups [][]int, anySlot bool, keyCap int, out []core.Result) (retry []int) {
	if _, ok := e.runner.(core.BatchRunner); !ok && !anySlot {
		// The calls run one by one, in order, and none is refused for
		// its slots to be sent again: a key's requests may span them,
		// and one round holds every call.
		var calls [][]int
		for _, g := range groups {
			calls = split(calls, g)
		}
		return e.runRound(ctx, b, now, items, calls, anySlot, out)
	}
	if !slices.ContainsFunc(groups, func(g []int) bool { return len(g) > maxBatch }) {
		// chunk's one round, a call per group: most batches.
		return e.runRound(ctx, b, now, items, groups, anySlot, out)
	}
	for _, calls := range chunk(items, groups, keyCap) {
		// As chunk builds rounds, a refused call holds only keys' last
		// blocks, so no later round has its keys: deferring the later
		// rounds keeps each key's order whatever chunk becomes.
		if len(retry) > 0 {
			for _, c := range calls {
				retry = append(retry, c...)
			}
			continue
		}
		retry = e.runRound(ctx, b, now, items, calls, anySlot, out)
	}
	return retry
}

// chunk splits groups into script calls of up to maxBatch decisions, in
// rounds sent one after the other: a storage key's first keyCap requests
// go in the first round, its next keyCap in the second, and so on, and
// within a round all of a key's requests go in one call (of more than
// maxBatch decisions when keyCap allows, holding that key alone). The
// calls of a round share no key, so the store may run them in any order
// (a Redis server runs a call whose script it had to load after the calls
// that followed it) without changing a decision. A group of up to
// maxBatch requests is one call of the first round, as are most batches;
// a call's requests keep the order they came in. keyCap is at least
// maxBatch.
func chunk(items []item, groups [][]int, keyCap int) (rounds [][][]int) {
	rounds = [][][]int{nil}
	for _, g := range groups {
		if len(g) <= maxBatch {
			rounds[0] = append(rounds[0], g)
			continue
		}
		// Number the group's keys in order of first request, and count
		// each key's requests.
		ids := make(map[string]int, len(g))
		kid := make([]int, len(g))
		var count []int
		for x, i := range g {
			id, ok := ids[items[i].key]
			if !ok {
				id = len(count)
				ids[items[i].key] = id
				count = append(count, 0)
			}
			kid[x] = id
			count[id]++
		}
		if len(count) == len(g) {
			// Every request on a key of its own.
			rounds[0] = split(rounds[0], g)
			continue
		}
		// Key by key, place each of its blocks (keyCap requests, the
		// rest last) in its round's open call while it has room for
		// maxBatch, in a new call otherwise: first[id] + r is where
		// call[] says which call of round r holds block r of key id.
		first := make([]int, len(count))
		var call []int
		// Calls are numbered across rounds: open[r] is the one being
		// filled in round r, size[j] the requests placed in call j, and
		// where[j] its round and its index there.
		var open, size []int
		var where [][2]int
		for id, n := range count {
			first[id] = len(call)
			for r := 0; n > 0; r++ {
				block := min(n, keyCap)
				n -= block
				if r == len(open) {
					open = append(open, -1)
				}
				if j := open[r]; j < 0 || size[j]+block > maxBatch {
					open[r] = len(size)
					size = append(size, 0)
					where = append(where, [2]int{r, -1})
				}
				size[open[r]] += block
				call = append(call, open[r])
			}
		}
		calls := make([][]int, len(size))
		for j := range calls {
			r := where[j][0]
			for len(rounds) <= r {
				rounds = append(rounds, nil)
			}
			calls[j] = make([]int, 0, size[j])
			rounds[r] = append(rounds[r], nil)
			where[j][1] = len(rounds[r]) - 1
		}
		seen := make([]int, len(count))
		for x, i := range g {
			id := kid[x]
			j := call[first[id]+seen[id]/keyCap]
			seen[id]++
			calls[j] = append(calls[j], i)
		}
		for j, c := range calls {
			rounds[where[j][0]][where[j][1]] = c
		}
	}
	return rounds
}

// split appends g to calls as calls of maxBatch requests in order, the
// rest last.
func split(calls [][]int, g []int) [][]int {
	for len(g) > maxBatch {
		calls = append(calls, g[:maxBatch:maxBatch])
		g = g[maxBatch:]
	}
	return append(calls, g)
}

// runRound sends calls, the chunks of one round, in one RunScripts (call
// by call on a store that is no core.BatchRunner) and decodes each reply
// into out. It returns, in order, the items of AnySlot calls the store
// refused for spanning slots.
func (e *Engine) runRound(ctx context.Context, b *batch, now int64, items []item, chunks [][]int, anySlot bool, out []core.Result) (retry []int) {
	calls := slices.Grow(b.calls[:0], len(chunks))
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	// One backing array for every call's arguments, one for its keys and
	// one for the keys' bytes, the batch's: each sized first, so that
	// no append moves what a call or a key points to.
	K, need := e.sh.keys(), 0
	for _, c := range chunks {
		for _, i := range c {
			need += e.keyBytes(items[i].key, items[i].keys)
		}
	}
	args := slices.Grow(b.args[:0], n+len(chunks)*(2+len(e.args)))
	keys := slices.Grow(b.keys[:0], n*K)
	buf := slices.Grow(b.buf[:0], need)
	for _, c := range chunks {
		start, kstart := len(args), len(keys)
		for _, i := range c {
			keys, buf = e.appendKeys(keys, buf, items[i].key, items[i].keys)
		}
		args = e.appendArgs(append(args, now, int64(ModeAllow)), now, items[c[0]].ps)
		args = appendCosts(args, items, c)
		calls = append(calls, core.ScriptCall{
			Script:  e.rw,
			Keys:    keys[kstart:len(keys):len(keys)],
			Args:    args[start:len(args):len(args)],
			AnySlot: anySlot && len(c) > 1,
		})
	}
	b.calls, b.args, b.keys, b.buf = calls, args, keys, buf // for the next round's, and put's clear
	var results []core.ScriptResult
	if br, ok := e.runner.(core.BatchRunner); ok {
		results = br.RunScripts(ctx, calls)
	} else {
		results = make([]core.ScriptResult, len(calls))
		for j, c := range calls {
			results[j].Reply, results[j].Err = e.runner.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
		}
	}
	R := e.sh.replyLen()
	for j, c := range chunks {
		if len(results) != len(calls) {
			// A store that answers a batch of n with another number of
			// results cannot be trusted on any of them.
			err := fmt.Errorf("%w: %w: a batch of %d calls got %d results", core.ErrStore, core.ErrUnexpectedReply, len(calls), len(results))
			for _, i := range c {
				out[i].Err = err
			}
			continue
		}
		res := results[j]
		if calls[j].AnySlot && errors.Is(res.Err, slot.ErrCrossSlot) {
			retry = append(retry, c...)
			continue
		}
		if res.Err == nil && len(res.Reply) != R*len(c) {
			res.Err = fmt.Errorf("%w: %w: %d decisions got a reply of %d integers", core.ErrStore, core.ErrUnexpectedReply, len(c), len(res.Reply))
		}
		for x, i := range c {
			if res.Err != nil {
				out[i].Err = res.Err
				continue
			}
			out[i].Decision, out[i].Err = e.decode(items[i].key, res.Reply[R*x:R*x+R], items[i].ps)
		}
	}
	return retry
}

// appendCosts appends the costs of the items at indexes c as a batch
// script reads them: one cost when every item has it (the common case of
// AllowMany: the server reads one argument instead of one per key), one
// per item otherwise.
func appendCosts(args []int64, items []item, c []int) []int64 {
	n := items[c[0]].n
	for _, i := range c[1:] {
		if items[i].n != n {
			for _, i := range c {
				args = append(args, items[i].n)
			}
			return args
		}
	}
	return append(args, n)
}

// groupByTag splits the items at indexes idx into groups of the same
// hash tag, each in the order of idx, the groups in order of their first
// item, in b's buffers. Keys with one tag share a cluster slot, and a
// go-redis Ring shard too: the Ring places a script by its first key's
// tag, so keys of two tags in one slot may live on two shards, and never
// go in one script.
func (b *batch) groupByTag(items []item, idx []int) [][]int {
	// Every storage key of a request has its user key as tag. Number the
	// tags in order of first item, by a scan of the first items when
	// there are few, by a map otherwise, and count each tag's items.
	gid := slices.Grow(b.gid[:0], len(idx))[:len(idx)]
	first := b.flat[:0] // each group's first item; flat is rebuilt below
	var byTag map[string]int
	if len(idx) > 16 {
		byTag = make(map[string]int, len(idx))
	}
	for x, i := range idx {
		t, g := items[i].key, -1
		if byTag != nil {
			if id, ok := byTag[t]; ok {
				g = id
			}
		} else {
			for id, f := range first {
				if items[f].key == t {
					g = id
					break
				}
			}
		}
		if g < 0 {
			g = len(first)
			first = append(first, i)
			if byTag != nil {
				byTag[t] = g
			}
		}
		gid[x] = g
	}
	// Lay the groups out in one array, group after group.
	groups := slices.Grow(b.groups[:0], len(first))[:len(first)]
	count := slices.Grow(b.count[:0], len(first))[:len(first)]
	clear(count)
	for _, g := range gid {
		count[g]++
	}
	flat := slices.Grow(b.flat[:0], len(idx))[:len(idx)]
	at := 0
	for g, n := range count {
		groups[g] = flat[at : at : at+n]
		at += n
	}
	for x, i := range idx {
		groups[gid[x]] = append(groups[gid[x]], i)
	}
	b.gid, b.count, b.flat, b.groups = gid, count, flat, groups
	return groups
}
