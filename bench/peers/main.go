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
	"slices"
	"strconv"
	"strings"
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
	// instructions: count each ceiling script's instructions per call
	// under callgrind (instructions.go) instead of the benchmark.
	instructions bool
	redisURL     string
	cluster      string
	prefix       string
	// keys is how many keys the cases spread their requests over
	// (numKeys; tests use fewer).
	keys int
}

func main() {
	var err error
	if algos, err = ratekitAlgos(); err != nil {
		log.Fatal(err)
	}
	o, err := parseOptions(flag.CommandLine, os.Args[1:])
	if err != nil {
		log.Fatal(err)
	}
	// The first Ctrl-C (or SIGTERM) ends ctx: the measurement stops, every
	// client stops writing, then the harness's keys are deleted. A second
	// one quits at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	notice := context.AfterFunc(ctx, func() {
		stop()
		log.Printf("interrupted: stopping the measurement, then deleting the harness's keys (interrupt again to quit at once and leave them)")
	})
	if o.instructions {
		err = measureInstructions(ctx, o, os.Stdout)
	} else {
		err = run(ctx, o)
	}
	notice()
	if err != nil {
		log.Fatal(err)
	}
}

// parseOptions reads the flags in args into fs and checks them.
func parseOptions(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	var gs, algoList, stores string
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved rounds; medians and min-max are taken over them")
	fs.DurationVar(&o.duration, "duration", 400*time.Millisecond, "time per case per round")
	fs.StringVar(&gs, "goroutines", "1,16,64,256", "concurrencies")
	fs.StringVar(&algoList, "algorithms", "all", "comma-separated algorithms ("+strings.Join(algoNames(), ",")+"), or all")
	fs.StringVar(&stores, "stores", "all", "comma-separated stores ("+strings.Join(storeNames, ",")+"), or all")
	fs.BoolVar(&o.peers, "peers", true, "measure the peer libraries")
	fs.BoolVar(&o.ceilings, "ceilings", true, "measure each script's ceiling with redis-benchmark")
	fs.IntVar(&o.ceilingReqs, "ceiling-requests", 100000, "requests per redis-benchmark run")
	fs.BoolVar(&o.denyCache, "deny-cache", true, "also measure the 90%-denied workload with the local deny cache")
	fs.BoolVar(&o.hotKey, "hot-key", true, "also measure one hot key (GCRA), with and without a hotkey.Budget")
	fs.StringVar(&o.out, "out", "..", "directory for RESULTS.md and throughput.png")
	fs.StringVar(&o.redisURL, "redis", "", "measure against this server (redis://[user:password@]host:port[/db]) instead of the harness's own; keys go under -prefix, which must hold no key before the run, and are deleted at the end")
	fs.StringVar(&o.cluster, "cluster", "", "measure against this Redis Cluster: comma-separated seed nodes (host:port or redis:// URLs)")
	fs.StringVar(&o.prefix, "prefix", "", "with -redis or -cluster, the prefix of every key the harness writes, under which no key may exist before the run (default ratekit-bench:<random>:)")
	fs.BoolVar(&o.instructions, "instructions", false, "instead of the benchmark, count the instructions redis-server runs per call of each script, as EVALSHA and as FCALL, under callgrind (needs valgrind), and print them; writes no results")
	fs.DurationVar(&o.waitQuiet, "wait-quiet", 0, "before starting, wait up to this long for 5 s in which other processes use under 10% of the CPU")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	o.keys = numKeys
	for _, g := range strings.Split(gs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(g))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-goroutines: bad value %q", g)
		}
		o.goroutines = append(o.goroutines, n)
	}
	var err error
	if o.algorithms, err = pick("algorithms", algoList, algoNames()); err != nil {
		return o, err
	}
	if o.stores, err = pick("stores", stores, storeNames); err != nil {
		return o, err
	}
	return o, nil
}

// run measures what o selects and writes RESULTS.md and throughput.png
// into o.out. It writes nothing there when it fails or when ctx ends
// first; on the user's Redis it deletes its keys in every case, once
// every client has stopped writing.
func run(ctx context.Context, o options) error {
	start := time.Now()
	t, err := newTarget(o.redisURL, o.cluster, o.prefix)
	if err != nil {
		return err
	}
	if t != nil {
		// Before the harness writes anything: every key under the prefix
		// is deleted at the end, so none may be there now.
		if err := t.claim(ctx); err != nil {
			return err
		}
	}
	var cond conditions
	cond.before = newMeter(0).waitQuiet(ctx, o.waitQuiet, log.Printf)
	log.Printf("before the run: %v", cond.before)
	srv := &redisServer{}
	if t == nil {
		if srv, err = startRedis(); err != nil {
			return err
		}
		t = ownTarget(srv)
	}
	defer srv.stop()

	// On the user's Redis, the harness's keys go whatever happens: at the
	// end, on a failure, on Ctrl-C. runAll returns only once every client
	// it opened has stopped writing.
	cleaned := false
	clean := func() {
		if cleaned {
			return
		}
		cleaned = true
		if n, err := t.cleanup(context.Background()); err != nil {
			log.Printf("deleting the harness's keys under %q: %v", t.prefix, err)
		} else if t.own == nil {
			log.Printf("deleted the harness's %d keys under %q", n, t.prefix)
		}
	}
	defer clean()
	interrupted := func() error {
		return fmt.Errorf("interrupted (%v): no results written", context.Cause(ctx))
	}
	if ctx.Err() != nil {
		return interrupted()
	}
	env := describe(srv, t)
	log.Printf("%s", env)
	m := newMeter(srv.pid())
	if err := t.measureRTT(ctx); err != nil {
		if ctx.Err() != nil {
			return interrupted()
		}
		return err
	}
	env.target = t.String()
	log.Printf("measuring against %v", t)
	runStart := m.sample()
	res, err := runAll(ctx, o, t, m)
	if ctx.Err() != nil {
		return interrupted()
	}
	if err != nil {
		return err
	}
	cond.during = between(runStart, m.sample())
	clean()
	// The run is measured and cleaned: a Ctrl-C now only cuts this idle
	// reading short, and the results are written all the same.
	cond.after = newMeter(0).idle(ctx, 3*time.Second)
	log.Printf("after the run: %v", cond.after)
	cond.rounds, cond.ceilings = res.roundLoad, res.ceilingLoad
	res.cond = cond
	if cond.disturbed() {
		log.Printf("WARNING: the machine was disturbed during this run (%s); RESULTS.md says so. Rerun on a quiet machine (-wait-quiet 10m waits for one) before committing it.", cond.worst())
	}
	res.env = env
	res.elapsed = time.Since(start)
	png, err := res.chart()
	if err != nil {
		return err
	}
	md := res.markdown(o, png != nil)
	fmt.Print(md)
	resultsPath, chartPath := filepath.Join(o.out, "RESULTS.md"), filepath.Join(o.out, "throughput.png")
	if old, err := os.ReadFile(resultsPath); err == nil {
		md += keptSection(string(old))
	}
	if err := os.WriteFile(resultsPath, []byte(md), 0o644); err != nil {
		return err
	}
	if png == nil {
		log.Printf("wrote %s in %v; no chart: no token bucket was measured with nothing denied (%s left as it was)", resultsPath, res.elapsed.Round(time.Second), chartPath)
		return nil
	}
	if err := os.WriteFile(chartPath, png, 0o644); err != nil {
		return err
	}
	log.Printf("wrote %s and %s in %v", resultsPath, chartPath, res.elapsed.Round(time.Second))
	return nil
}

// pick returns the names a comma-separated flag value selects: nil for
// "all" (every one), or an error naming each that valid lacks.
func pick(flagName, value string, valid []string) (map[string]bool, error) {
	if strings.TrimSpace(value) == "all" {
		return nil, nil
	}
	m := map[string]bool{}
	var unknown []string
	for _, v := range strings.Split(value, ",") {
		v = strings.TrimSpace(v)
		if !slices.Contains(valid, v) {
			unknown = append(unknown, strconv.Quote(v))
			continue
		}
		m[v] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("-%s: unknown %s; the valid ones are %s, or all", flagName, strings.Join(unknown, ", "), strings.Join(valid, ", "))
	}
	return m, nil
}

// algoNames are the names of algos, in order.
func algoNames() []string {
	var out []string
	for _, a := range algos {
		out = append(out, a.name)
	}
	return out
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

// serverSection marks the section of RESULTS.md that make bench-rls
// writes (cmd/ratekit-server/bench.sh), from the line that begins with
// it to the end: make bench keeps it as it was.
const serverSection = "<!-- make bench-rls -->"

// keptSection returns the make bench-rls section of old, a RESULTS.md,
// preceded by a blank line; "" when it has none.
func keptSection(old string) string {
	if i := strings.Index(old, "\n"+serverSection); i >= 0 {
		return "\n" + old[i+1:]
	}
	return ""
}
