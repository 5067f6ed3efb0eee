package core

import "context"

// ScriptRunner runs one script atomically and returns its reply, an array of
// integers. It is the whole storage abstraction: the Redis adapters run the
// script's Lua source with EVALSHA (EVAL on NOSCRIPT), the memory store runs
// its Go twin under a lock.
//
// keys are the full storage keys the script touches (KEYS in Lua); args are
// the script's integer arguments (ARGV in Lua, sent as decimal strings).
// The reply's integers are appended to reply, which may be nil or a
// caller's buffer (reply[:0]) to save an allocation; the extended slice is
// returned, as with append. keys, args and reply belong to the caller: an
// implementation must not keep them, or anything they hold, after it
// returns. Implementations wrap their own failures with [ErrStore].
//
// An implementation must not send anything to its server when ctx has
// already ended: it returns an error wrapping ErrStore and ctx.Err(), and
// the call changed nothing.
type ScriptRunner interface {
	RunScript(ctx context.Context, s *Script, keys []string, args []int64, reply []int64) ([]int64, error)
}

// Checker is implemented by a [ScriptRunner] that can tell, without a round
// trip, that it cannot run scripts at all: a store built around a nil
// client, or a zero value that was not made by its constructor. Limiter
// constructors call Check and refuse such a runner with an error wrapping
// [ErrInvalidConfig], so the mistake shows when the limiter is built, not
// on its first request.
type Checker interface {
	Check() error
}

// KeyCopier is implemented by a [ScriptRunner] that copies every key it
// keeps, so that a caller may reuse a key's memory as soon as RunScript
// returns. Limiters lend such a runner keys built in a reused buffer, which
// saves an allocation per decision.
//
// The promise belongs to one runner value, not to every type that embeds
// it: limiters lend keys to a runner r only when r.CopiesKeysOf() == r. An
// implementation returns its own receiver. A wrapper that embeds a
// KeyCopier (to record calls, say) therefore does not inherit the promise,
// since the promoted method names the embedded runner, not the wrapper;
// a wrapper that does copy every key it keeps may say so with a
// CopiesKeysOf method of its own.
type KeyCopier interface {
	ScriptRunner
	CopiesKeysOf() ScriptRunner
}
