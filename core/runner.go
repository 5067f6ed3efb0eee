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
type ScriptRunner interface {
	RunScript(ctx context.Context, s *Script, keys []string, args []int64, reply []int64) ([]int64, error)
}
