package engine

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

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

// AllowMany decides every request, in order, each with its own result.
// Requests go to the store in batch script calls of up to maxBatch
// decisions: on a store that is one node (core.SingleNode) any requests
// together, on any other those whose keys share a hash tag (the same
// user key). All the calls go in one RunScripts when the runner is a
// core.BatchRunner.
func (e *Engine) AllowMany(ctx context.Context, reqs []core.Request) []core.Result {
	out := make([]core.Result, len(reqs))
	var now int64
	err := ErrZero
	if e != nil {
		now, err = params.Now(e.clock)
	}
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	// One backing array for every key: a batch allocates per batch, not
	// per request.
	items := make([]item, len(reqs))
	size := 0
	for _, r := range reqs {
		size += len(e.prefix) + len(r.Key) + 2
	}
	keyBuf := make([]byte, 0, size) // grows only when keys need escaping
	valid := make([]int, 0, len(reqs))
	for i, r := range reqs {
		if err := keyspace.CheckKey(r.Key); err != nil {
			out[i].Err = err
			continue
		}
		if err := params.Cost(r.N, e.limit); err != nil {
			out[i].Err = err
			continue
		}
		// The key's bytes are never written again once appended (a
		// grown buffer is a copy), so the string may share them.
		at := len(keyBuf)
		keyBuf = keyspace.AppendKey(keyBuf, e.prefix, r.Key, "")
		items[i] = item{key: r.Key, skey: unsafe.String(&keyBuf[at], len(keyBuf)-at), n: r.N}
		valid = append(valid, i)
	}
	if err := Ended(ctx); err != nil {
		for _, i := range valid {
			out[i].Err = err
		}
		return out
	}
	e.decideItems(ctx, now, items, valid, out)
	return out
}

// item is one request of a batch: the user's key, its storage key and
// the cost.
type item struct {
	key, skey string
	n         int64
}

// singleNode reports whether the store is, now, one node on which a
// script's keys may span slots.
func (e *Engine) singleNode() bool {
	sn, ok := e.runner.(core.SingleNode)
	return ok && sn.SingleNode()
}

// decideItems decides the items at indexes idx, all valid, at now, in
// order, into out (indexed like items): grouped as the store allows,
// each group in batch calls of up to maxBatch.
func (e *Engine) decideItems(ctx context.Context, now int64, items []item, idx []int, out []core.Result) {
	if len(idx) == 0 {
		return
	}
	anySlot := e.singleNode()
	var groups [][]int
	if anySlot {
		groups = [][]int{idx}
	} else {
		groups = groupByTag(items, idx)
	}
	retry := e.runGroups(ctx, now, items, groups, anySlot, out)
	if len(retry) > 0 {
		// The store took itself for one node and met a cluster (it said
		// CROSSSLOT, running nothing): the same requests, key by key.
		e.runGroups(ctx, now, items, groupByTag(items, retry), false, out)
	}
}

// runGroups sends each group, in order, as batch calls of up to maxBatch
// decisions (one decision: the single script), marked AnySlot when
// anySlot, and decodes each reply into out. It returns, in order, the
// items of AnySlot calls the store refused for spanning slots.
func (e *Engine) runGroups(ctx context.Context, now int64, items []item, groups [][]int, anySlot bool, out []core.Result) (retry []int) {
	var chunks [][]int
	for _, g := range groups {
		for len(g) > maxBatch {
			chunks = append(chunks, g[:maxBatch])
			g = g[maxBatch:]
		}
		chunks = append(chunks, g)
	}
	calls := make([]core.ScriptCall, 0, len(chunks))
	k := len(e.params)
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	// One backing array for every call's arguments and one for its keys.
	args := make([]int64, 0, n*(k+3)+len(chunks)*(k+2))
	keys := make([]string, 0, n)
	for _, c := range chunks {
		start, kstart := len(args), len(keys)
		for _, i := range c {
			keys = append(keys, items[i].skey)
		}
		s := e.spec.allow
		if len(c) == 1 {
			args = append(args, now, items[c[0]].n, ModeAllow)
			args = e.AppendParams(args, now)
		} else {
			s = e.spec.batch
			args = append(args, now)
			args = e.AppendParams(args, now)
			args = appendCosts(args, items, c)
		}
		calls = append(calls, core.ScriptCall{
			Script:  s,
			Keys:    keys[kstart:len(keys):len(keys)],
			Args:    args[start:len(args):len(args)],
			AnySlot: anySlot && len(c) > 1,
		})
	}
	var results []core.ScriptResult
	if br, ok := e.runner.(core.BatchRunner); ok {
		results = br.RunScripts(ctx, calls)
	} else {
		results = make([]core.ScriptResult, len(calls))
		for j, c := range calls {
			results[j].Reply, results[j].Err = e.runner.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
		}
	}
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
		if res.Err == nil && len(res.Reply) != 4*len(c) {
			res.Err = fmt.Errorf("%w: %w: %d decisions got a reply of %d integers", core.ErrStore, core.ErrUnexpectedReply, len(c), len(res.Reply))
		}
		for x, i := range c {
			if res.Err != nil {
				out[i].Err = res.Err
				continue
			}
			out[i].Decision, out[i].Err = e.Decode(items[i].key, res.Reply[4*x:4*x+4])
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
// item. Keys with one tag share a cluster slot, and a go-redis Ring shard
// too: the Ring places a script by its first key's tag, so keys of two
// tags in one slot may live on two shards, and never go in one script.
func groupByTag(items []item, idx []int) [][]int {
	byTag := make(map[string]int, len(idx)) // tag -> group index
	groups := make([][]int, 0, len(idx))
	for _, i := range idx {
		t := keyspace.Tag(items[i].skey)
		g, ok := byTag[t]
		if !ok {
			g = len(groups)
			byTag[t] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}
