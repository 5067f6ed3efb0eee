package core

import "context"

// ScriptCall is one script run of a batch: the arguments of one
// ScriptRunner.RunScript call.
type ScriptCall struct {
	Script *Script
	Keys   []string
	Args   []int64
	// AnySlot lets Keys span Redis Cluster slots. A store that reports
	// itself one node (SingleNode) runs such a call as it is; any other
	// store refuses it, as it refuses every script whose keys span slots.
	// Limiters set it only when their store is one node.
	AnySlot bool
}

// ScriptResult is the outcome of one ScriptCall: its reply, or its own
// error.
type ScriptResult struct {
	Reply []int64
	Err   error
}

// BatchRunner is implemented by stores that can run many scripts in one
// round trip per server (a pipeline; calls on a key of an earlier call
// may wait for another). Limiters use it when their
// ScriptRunner has it, and run the calls one by one otherwise.
//
// RunScripts returns one result per call, in order. Calls on the same key
// run in the order given, even when the server must first be sent a
// script that it had not loaded (a Redis store that retries a call as
// EVAL after NOSCRIPT holds back later calls on its keys); each call is
// atomic, and one call's failure does not stop the others. Calls on
// different keys may run in any order.
type BatchRunner interface {
	RunScripts(ctx context.Context, calls []ScriptCall) []ScriptResult
}

// SingleNode is implemented by a store that can tell whether every key it
// holds lives on one server that lets a script's keys span cluster
// slots: one Redis server not in cluster mode, or the primary behind
// Sentinel. A limiter on such a store decides a batch of keys in any
// slots with one script call (ScriptCall.AnySlot) instead of one call per
// slot. A store that does not implement it, or reports false, is treated
// as a cluster: a script's keys must share a slot.
//
// A wrapper that forwards RunScripts to the store it wraps may forward
// SingleNode too (embedding the store does): the store, not the wrapper,
// checks AnySlot calls.
type SingleNode interface {
	SingleNode() bool
}

// Request is one request of a batch decision: a key and a cost.
type Request struct {
	Key string
	N   int64
}

// Result is the decision for one Request, or its own error.
type Result struct {
	Decision Decision
	Err      error
}
