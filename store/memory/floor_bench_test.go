package memory

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/internal/keyspace"
)

// BenchmarkTableFloor is the least a token bucket decision costs on this
// store's table: a decision written by hand (hash the parts, lock the
// shard, probe and compare, read the clock, one division, one write),
// without the engine, the step's Tx, the checks or a Decision, on the
// keys and in the order of BenchmarkAlgorithms. It is a measuring stick
// for the in-process path (bench/peers says what it showed), not a
// limiter: its arithmetic is not the token bucket's exact step.
func BenchmarkTableFloor(b *testing.B) {
	s, _ := New(WithSweepInterval(0))
	defer s.Close()
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	const prefix = "bench:tb:"
	ph := s.hash.prefix(prefix)
	decide := func(key string) bool {
		th := s.hash.tag(key)
		h := mix(ph, th, s.hash.none)
		sh := &s.shards[th>>(64-shardBits)]
		sh.mu.Lock()
		e, _ := sh.t.findParts(h, prefix, key)
		now, _ := s.now()
		if e == nil {
			e = sh.t.insert(h, keyspace.Key(prefix, key, ""))
		}
		capacity, rate, interval := int64(1<<30), int64(1<<30), int64(1000000)
		tokens, last := capacity, now
		if e.expireAt > now && e.n == 3 {
			tokens, last = e.inline[0], e.inline[1]
		}
		if tokens < capacity && now > last {
			if r := (now - last) / interval; r > 0 {
				tokens = min(capacity, tokens+r*rate)
				last += r * interval
			}
		}
		ok := tokens >= 1
		if ok {
			tokens--
		}
		reset := (capacity - tokens + rate - 1) / rate * interval
		fill(e, 3, time.Duration(reset)*time.Microsecond+time.Millisecond, now)
		e.inline[0], e.inline[1], e.inline[2] = tokens, last, now+reset
		sh.mu.Unlock()
		return ok
	}
	for _, k := range keys {
		decide(k)
	}
	b.Run("serial", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			decide(keys[(i*7919)%len(keys)])
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(104729))
			for pb.Next() {
				i += 7919
				decide(keys[i%len(keys)])
			}
		})
	})
}
