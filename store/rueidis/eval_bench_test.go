package rueidisstore_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// recorder is a ScriptRunner that keeps the last call it runs.
type recorder struct {
	next   core.ScriptRunner
	script *core.Script
	keys   []string
	args   []int64
}

func (r *recorder) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	r.script, r.keys, r.args = s, append([]string(nil), keys...), append([]int64(nil), args...)
	return r.next.RunScript(ctx, s, keys, args, reply)
}

// BenchmarkEvalVersusEvalSHA measures, in one run on one server, the
// token bucket's AllowN script sent as the Redis stores send it, EVALSHA,
// beside the same call sent as EVAL with its source, which is what a
// store would have to send on every call if it could not compute the
// script's SHA-1 (core.Script.SHA1, under GODEBUG=fips140=only): at 1 and
// 64 goroutines, with the request bytes the server reads per call
// (req-B/op, from INFO stats) and its own time per call (server-µs/op,
// from INFO commandstats):
//
//	go test -run '^$' -bench EvalVersusEvalSHA -count 6 ./store/rueidis/
func BenchmarkEvalVersusEvalSHA(b *testing.B) {
	srv := redistest.Start(b)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	rec := &recorder{next: newStore(b, c)}
	const big = 1 << 40
	lim, err := tokenbucket.New(rec, tokenbucket.Config{Capacity: big, RefillRate: big, RefillInterval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := lim.Allow(ctx, "user:0"); err != nil { // loads the script
		b.Fatal(err)
	}
	s, keys := rec.script, rec.keys
	args := make([]string, len(rec.args))
	for i, a := range rec.args {
		args[i] = strconv.FormatInt(a, 10)
	}
	cases := []struct {
		name, stat string
		cmd        rueidis.Completed
	}{
		{"evalsha", "evalsha", c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build().Pin()},
		{"eval", "eval", c.B().Eval().Script(s.Lua()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build().Pin()},
	}
	for _, g := range []int{1, 64} {
		for _, cs := range cases {
			b.Run(cs.name+"/g"+strconv.Itoa(g), func(b *testing.B) {
				in, calls, usec := serverStats(b, c, cs.stat)
				if g == 1 {
					for b.Loop() {
						if err := c.Do(ctx, cs.cmd).Error(); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0))) // g goroutines
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := c.Do(ctx, cs.cmd).Error(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				in2, calls2, usec2 := serverStats(b, c, cs.stat)
				if calls2 > calls {
					// The INFO calls' own bytes are a few dozen, spread
					// over b.N calls.
					b.ReportMetric(float64(in2-in)/float64(calls2-calls), "req-B/op")
					b.ReportMetric(float64(usec2-usec)/float64(calls2-calls), "server-µs/op")
				}
			})
		}
	}
}

// serverStats returns the bytes the server has read from its clients, and
// the calls and microseconds INFO commandstats counts for cmd.
func serverStats(b *testing.B, c rueidis.Client, cmd string) (in, calls, usec int64) {
	info, err := c.Do(context.Background(), c.B().Info().Section("stats").Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "total_net_input_bytes:"); ok {
			in, _ = strconv.ParseInt(v, 10, 64)
		}
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
			for _, f := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "calls":
					calls, _ = strconv.ParseInt(v, 10, 64)
				case "usec":
					usec, _ = strconv.ParseInt(v, 10, 64)
				}
			}
		}
	}
	return in, calls, usec
}
