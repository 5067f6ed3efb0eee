// Command peers is ratekit's benchmark harness (make bench): it starts its
// own redis-server, measures every algorithm on every store and the peer
// libraries at several concurrencies, in interleaved rounds, measures the
// server's ceiling for each script with redis-benchmark, and writes
// bench/RESULTS.md and bench/throughput.png.
//
// It lives in its own module so that the peers (go-redis/redis_rate,
// ulule/limiter, throttled, x/time/rate, sethvargo/go-limiter) and gonum
// never enter ratekit's go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

type options struct {
	rounds      int
	duration    time.Duration
	goroutines  []int
	algorithms  map[string]bool
	stores      map[string]bool
	peers       bool
	ceilings    bool
	out         string
	denyCache   bool
	ceilingReqs int
}

func main() {
	var o options
	var gs, algoList, stores string
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds; medians and min-max are taken over them")
	flag.DurationVar(&o.duration, "duration", 400*time.Millisecond, "time per case per round")
	flag.StringVar(&gs, "goroutines", "1,16,64,256", "concurrencies")
	flag.StringVar(&algoList, "algorithms", "all", "comma-separated algorithms, or all")
	flag.StringVar(&stores, "stores", "all", "comma-separated stores (memory,goredis,goredis-auto,rueidis,redigo,valkey), or all")
	flag.BoolVar(&o.peers, "peers", true, "measure the peer libraries")
	flag.BoolVar(&o.ceilings, "ceilings", true, "measure each script's ceiling with redis-benchmark")
	flag.IntVar(&o.ceilingReqs, "ceiling-requests", 100000, "requests per redis-benchmark run")
	flag.BoolVar(&o.denyCache, "deny-cache", true, "also measure the 90%-denied workload with the local deny cache")
	flag.StringVar(&o.out, "out", "..", "directory for RESULTS.md and throughput.png")
	flag.Parse()
	var err error
	if algos, err = ratekitAlgos(); err != nil {
		log.Fatal(err)
	}
	for _, g := range strings.Split(gs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(g))
		if err != nil || n < 1 {
			log.Fatalf("-goroutines: bad value %q", g)
		}
		o.goroutines = append(o.goroutines, n)
	}
	o.algorithms = set(algoList)
	o.stores = set(stores)

	start := time.Now()
	srv, err := startRedis()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.stop()
	env := describe(srv)
	log.Printf("%s", env)

	res, err := runAll(context.Background(), o, srv.addr)
	if err != nil {
		srv.stop()
		log.Fatal(err)
	}
	res.env = env
	res.elapsed = time.Since(start)
	md := res.markdown(o)
	fmt.Print(md)
	if err := os.WriteFile(filepath.Join(o.out, "RESULTS.md"), []byte(md), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := res.chart(filepath.Join(o.out, "throughput.png")); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s and %s in %v", filepath.Join(o.out, "RESULTS.md"), filepath.Join(o.out, "throughput.png"), res.elapsed.Round(time.Second))
}

func set(s string) map[string]bool {
	if s == "all" {
		return nil
	}
	m := map[string]bool{}
	for _, v := range strings.Split(s, ",") {
		m[strings.TrimSpace(v)] = true
	}
	return m
}

func want(m map[string]bool, k string) bool { return m == nil || m[k] }

// environment describes the machine for the results file.
type environment struct {
	cores         int
	cpu           string
	redisVersion  string
	goVersion     string
	date          string
	redisBenchBin string
}

func (e environment) String() string {
	return fmt.Sprintf("%d cores (%s), redis-server %s, %s, %s", e.cores, e.cpu, e.redisVersion, e.goVersion, e.date)
}

func describe(s *redisServer) environment {
	e := environment{cores: runtime.NumCPU(), goVersion: runtime.Version(), date: time.Now().UTC().Format("2006-01-02 15:04 UTC")}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				e.cpu = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	e.redisVersion = s.version
	return e
}
