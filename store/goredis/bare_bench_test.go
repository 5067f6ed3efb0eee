package goredisstore_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// BenchmarkAgainstBareScript measures, in one run on one server with the
// same client options, ratekit's token bucket on go-redis beside the
// bare call a go-redis user would write without ratekit:
// redis.NewScript(the guide's token bucket).Run, at 1, 64 and 256
// goroutines (ratekit-unpipelined: the store Pipelining(false); the bare
// call is never pipelined). Besides ns/op it reports the server's own
// time per script call (server-µs/op, from INFO commandstats) and the
// client's CPU time per call (client-cpu-ns/op, the benchmark process),
// which tell the script's cost from the client's:
//
//	go test -run '^$' -bench AgainstBareScript -count 6 ./store/goredis/
func BenchmarkAgainstBareScript(b *testing.B) {
	seed, err := os.ReadFile("../../testkit/luatest/seedtest/testdata/seed_tokenbucket.lua")
	if err != nil {
		b.Fatal(err)
	}
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 256})
	defer rdb.Close()
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	const big = 1 << 40
	cfg := tokenbucket.Config{Capacity: big, RefillRate: big, RefillInterval: time.Second, Prefix: "rk:"}
	serverTime, err := tokenbucket.New(newStore(b, rdb), cfg)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Prefix = "rku:"
	unpipelined, err := tokenbucket.New(newStore(b, rdb, scriptproto.Pipelining(false)), cfg)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Prefix, cfg.Clock = "rkc:", core.ClockFunc(time.Now)
	clientTime, err := tokenbucket.New(newStore(b, rdb), cfg)
	if err != nil {
		b.Fatal(err)
	}
	script := redis.NewScript(string(seed))
	bare := func(ctx context.Context, key string) error {
		return script.Run(ctx, rdb, []string{"bare:{" + key + "}"}, big, big, 1000000, time.Now().UnixMicro()).Err()
	}
	cases := []struct {
		name   string
		decide func(ctx context.Context, key string) error
	}{
		{"bare-script", bare},
		{"ratekit", func(ctx context.Context, key string) error { _, err := serverTime.Allow(ctx, key); return err }},
		{"ratekit-unpipelined", func(ctx context.Context, key string) error { _, err := unpipelined.Allow(ctx, key); return err }},
		{"ratekit-clientclock", func(ctx context.Context, key string) error { _, err := clientTime.Allow(ctx, key); return err }},
	}
	ctx := context.Background()
	for _, g := range []int{1, 64, 256} {
		for _, c := range cases {
			b.Run(c.name+"/g"+strconv.Itoa(g), func(b *testing.B) {
				c.decide(ctx, keys[0]) // loads the script
				calls, usec := evalStats(b, rdb)
				cpu := cpuTime()
				var next atomic.Int64
				if g == 1 {
					for i := 0; b.Loop(); i++ {
						if err := c.decide(ctx, keys[(i*7919)%len(keys)]); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0))) // g goroutines
					b.RunParallel(func(pb *testing.PB) {
						i := int(next.Add(104729))
						for pb.Next() {
							i += 7919
							if err := c.decide(ctx, keys[i%len(keys)]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "client-cpu-ns/op")
				calls2, usec2 := evalStats(b, rdb)
				if calls2 > calls {
					b.ReportMetric(float64(usec2-usec)/float64(calls2-calls), "server-µs/op")
				}
			})
		}
	}
}

// cpuTime returns the CPU time this process (the client) has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// evalStats returns the calls and microseconds INFO commandstats counts
// for EVALSHA.
func evalStats(b *testing.B, rdb *redis.Client) (calls, usec int64) {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				calls = n
			case "usec":
				usec = n
			}
		}
	}
	return calls, usec
}
