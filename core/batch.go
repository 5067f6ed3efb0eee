package core

import "context"

// ScriptCall is one script run of a batch: the arguments of one
// ScriptRunner.RunScript call.
type ScriptCall struct {
	Script *Script
	Keys   []string
	Args   []int64
}

// ScriptResult is the outcome of one ScriptCall: its reply, or its own
// error.
type ScriptResult struct {
	Reply []int64
	Err   error
}

// BatchRunner is implemented by stores that can run many scripts in one
// round trip per server (a pipeline). Limiters use it when their
// ScriptRunner has it, and run the calls one by one otherwise.
//
// RunScripts returns one result per call, in order. Calls on the same key
// run in the order given; each call is atomic, and one call's failure does
// not stop the others.
type BatchRunner interface {
	RunScripts(ctx context.Context, calls []ScriptCall) []ScriptResult
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
