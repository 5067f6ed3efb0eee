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
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	hotKey      bool
	ceilingReqs int
	waitQuiet   time.Duration
	redisURL    string
	cluster     string
	prefix      string
	// keys is how many keys the cases spread their requests over
	// (numKeys; tests use fewer).
	keys int
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
	flag.BoolVar(&o.hotKey, "hot-key", true, "also measure one hot key (GCRA), with and without a hotkey.Budget")
	flag.StringVar(&o.out, "out", "..", "directory for RESULTS.md and throughput.png")
	flag.StringVar(&o.redisURL, "redis", "", "measure against this server (redis://[user:password@]host:port[/db]) instead of the harness's own; keys go under -prefix and are deleted at the end")
	flag.StringVar(&o.cluster, "cluster", "", "measure against this Redis Cluster: comma-separated seed nodes (host:port or redis:// URLs)")
	flag.StringVar(&o.prefix, "prefix", "", "with -redis or -cluster, the prefix of every key the harness writes (default ratekit-bench:<random>:)")
	flag.DurationVar(&o.waitQuiet, "wait-quiet", 0, "before starting, wait up to this long for 5 s in which other processes use under 10% of the CPU")
	flag.Parse()
	o.keys = numKeys
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
	var cond conditions
	cond.before = newMeter(0).waitQuiet(o.waitQuiet, log.Printf)
	log.Printf("before the run: %v", cond.before)
	t, err := newTarget(o.redisURL, o.cluster, o.prefix)
	if err != nil {
		log.Fatal(err)
	}
	srv := &redisServer{}
	if t == nil {
		if srv, err = startRedis(); err != nil {
			log.Fatal(err)
		}
		t = ownTarget(srv)
	}
	defer srv.stop()
	env := describe(srv, t)
	log.Printf("%s", env)

	// On the user's Redis, the harness's keys go whatever happens: at the
	// end, on a failure, on Ctrl-C.
	var cleanOnce sync.Once
	clean := func() {
		cleanOnce.Do(func() {
			if n, err := t.cleanup(context.Background()); err != nil {
				log.Printf("deleting the harness's keys under %q: %v", t.prefix, err)
			} else if t.own == nil {
				log.Printf("deleted the harness's %d keys under %q", n, t.prefix)
			}
			srv.stop()
		})
	}
	die := func(err error) { clean(); log.Fatal(err) }
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; die(fmt.Errorf("interrupted")) }()

	m := newMeter(srv.pid())
	if err := t.measureRTT(context.Background()); err != nil {
		die(err)
	}
	env.target = t.String()
	log.Printf("measuring against %v", t)
	runStart := m.sample()
	res, err := runAll(context.Background(), o, t, m)
	if err != nil {
		die(err)
	}
	cond.during = between(runStart, m.sample())
	clean()
	cond.after = newMeter(0).idle(3 * time.Second)
	log.Printf("after the run: %v", cond.after)
	cond.rounds, cond.ceilings = res.roundLoad, res.ceilingLoad
	res.cond = cond
	if cond.disturbed() {
		log.Printf("WARNING: the machine was disturbed during this run (%s); RESULTS.md says so. Rerun on a quiet machine (-wait-quiet 10m waits for one) before committing it.", cond.worst())
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
	target        string
	cores         int
	cpu           string
	redisVersion  string
	goVersion     string
	date          string
	redisBenchBin string
}

func (e environment) String() string {
	return fmt.Sprintf("%d cores (%s), redis-server %s, %s, %s. Redis: %s", e.cores, e.cpu, e.redisVersion, e.goVersion, e.date, e.target)
}

func describe(s *redisServer, t *target) environment {
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
	if t.own == nil {
		c := t.goredis(0)
		defer c.Close()
		info, _ := c.Info(context.Background(), "server").Result()
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				e.redisVersion = v
			}
		}
	}
	return e
}
