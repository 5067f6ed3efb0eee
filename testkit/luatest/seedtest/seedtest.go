// Package seedtest runs the Redis rate limiter guide's scripts (the seed)
// beside ratekit's algorithms and compares their decisions. Its tests do so
// for each algorithm the guide has (<name>_test.go), replay the guide's
// floating-point ties, and check the sliding log's script on a real Redis
// when client clocks step back. It lives in the luatest module, since it
// runs the scripts through go-redis and miniredis.
//
// The guide's time-based scripts call redis.call('TIME'). WithTime wraps a
// script, unchanged, so that TIME answers a time passed as the last two
// arguments: the seed's own logic runs verbatim on a real Redis, at times
// the test chooses.
package seedtest

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/core"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// timeWrapper shadows redis with a table whose call answers TIME from the
// last two ARGV entries (seconds, microseconds) and passes everything else
// to the real redis.call.
const timeWrapper = `local real_redis = redis
local redis = setmetatable({
  call = function(cmd, ...)
    if cmd == 'TIME' or cmd == 'time' then return {ARGV[#ARGV - 1], ARGV[#ARGV]} end
    return real_redis.call(cmd, ...)
  end,
}, {__index = real_redis})
`

// WithTime returns the seed script lua, unchanged, preceded by a wrapper
// that makes TIME return the last two arguments.
func WithTime(lua string) string { return timeWrapper + lua }

// TimeArgs returns the two extra arguments WithTime reads for a time in
// Unix microseconds.
func TimeArgs(us int64) []any { return []any{us / 1e6, us % 1e6} }

// Step is one moment of a comparison.
type Step struct {
	// Seed runs the guide's script at now (µs) and reports its decision.
	Seed func(now int64) bool
	// Ours decides at now with ratekit's limiter.
	Ours func(now int64) bool
	// PeekOurs reports, without writing, ratekit's decision at now.
	PeekOurs func(now int64) bool
	// Tie reports whether, in ratekit's exact state before deciding at
	// now, the request sits exactly on the algorithm's threshold (for
	// example level + 1 == capacity): where floating point may round
	// either way. Needed only when the comparison is not exact.
	Tie func(now int64) bool
}

// Compare draws a sequence of times starting at start, advancing by steps
// drawn from step, and requires the seed and ratekit to decide alike at
// each. ratekit's Peek must agree with its Allow too.
//
// When exact is false (the seed computes in floating point), a difference
// is tolerated only at a tie, as reported by Step.Tie: the exact value
// sits on the threshold and the seed's rounding fell on the other side.
// The sequence ends at the first tie, since the two states differ
// afterwards. It returns the number of ties (0 or 1).
func Compare(t *rapid.T, start int64, step *rapid.Generator[int64], exact bool, s Step) (ties int) {
	now := start
	steps := rapid.IntRange(1, 60).Draw(t, "steps")
	for i := 0; i < steps; i++ {
		now += step.Draw(t, "advance")
		at := time.Duration(now-start) * time.Microsecond
		want := s.Seed(now)
		peek := s.PeekOurs(now)
		if peek != want {
			if exact || !s.Tie(now) {
				t.Fatalf("step %d at +%v: the guide's script says allowed=%v, ratekit says %v, and this is no tie", i, at, want, peek)
			}
			return 1
		}
		if got := s.Ours(now); got != peek {
			t.Fatalf("step %d at +%v: Peek said %v, Allow said %v", i, at, peek, got)
		}
	}
	return 0
}

// Ours fills in s.Ours and s.PeekOurs: lim.Allow and lim.Peek on key,
// after setTime(now) moves the clock the limiter decides by.
func Ours(t interface{ Fatalf(string, ...any) }, lim core.Limiter, key string, setTime func(now int64), s Step) Step {
	decide := func(now int64, peek bool) bool {
		setTime(now)
		f := lim.Allow
		if peek {
			f = lim.Peek
		}
		d, err := f(context.Background(), key)
		if err != nil {
			t.Fatalf("ratekit at %d: %v", now, err)
		}
		return d.Allowed
	}
	s.Ours = func(now int64) bool { return decide(now, false) }
	s.PeekOurs = func(now int64) bool { return decide(now, true) }
	return s
}

// State reads ratekit's state at key (nil when absent): packed, the byte
// 255 then big-endian doubles, as ratekit writes it on a real Redis, or
// colon-separated decimal integers, as it writes it on miniredis.
func State(t interface{ Fatalf(string, ...any) }, c *redis.Client, key string) []int64 {
	v, err := c.Get(context.Background(), key).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	var out []int64
	if len(v) > 0 && v[0] == 255 && len(v)%8 == 1 {
		for b := []byte(v[1:]); len(b) > 0; b = b[8:] {
			f := math.Float64frombits(binary.BigEndian.Uint64(b))
			if f != math.Trunc(f) || f < 0 || f > 1<<53 {
				t.Fatalf("state %q at %s: %v is not a stored integer", v, key, f)
			}
			out = append(out, int64(f))
		}
		return out
	}
	for _, f := range strings.Split(v, ":") {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("state %q at %s: %v", v, key, err)
		}
		out = append(out, n)
	}
	return out
}

// Client starts a throwaway redis-server for t and returns a go-redis
// client for it, closed when t ends.
func Client(t *testing.T) *redis.Client {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// Store returns the go-redis store of c, with opts, for ratekit's
// limiters beside the guide's scripts.
func Store(t interface{ Fatalf(string, ...any) }, c redis.Scripter, opts ...scriptproto.Option) core.ScriptRunner {
	s, err := goredisstore.New(c, opts...)
	if err != nil {
		t.Fatalf("goredisstore.New: %v", err)
	}
	return s
}

// Int runs a script and returns its reply's first integer.
func Int(t interface{ Fatalf(string, ...any) }, c redis.Scripter, s *redis.Script, keys []string, args ...any) int64 {
	v, err := s.Run(context.Background(), c, keys, args...).Int64Slice()
	if err != nil || len(v) == 0 {
		t.Fatalf("seed script: %v, %v", v, err)
	}
	return v[0]
}
