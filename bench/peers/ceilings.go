package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/store/memory"
	"github.com/ratekit/ratekit/store/scriptproto"
)

// ceiling is redis-benchmark's rate for one script, pipelined 16 deep and
// not pipelined, from 50 connections, and the server's CPU time (INFO
// cpu, user and system) per call during the -P 16 runs, in µs; and
// guide, the rate of the guide's script (EVALSHA, -P 16) in the slices
// that alternated with the -P 16 runs (measureCeilings), what its ratio
// is taken to (guideRatio).
type ceiling struct{ p16, p1, cpu, guide float64 }

// guideRatio is the median over rounds of a script's -P 16 ceiling over
// the guide's script's measured around it.
func guideRatio(cs []ceiling) float64 {
	var v []float64
	for _, c := range cs {
		v = append(v, c.p16/c.guide)
	}
	return median(v)
}

// The ceilings are measured per script and per way of running it: its
// name for EVALSHA, its name and fcallSuffix for FCALL of its function
// library (scriptproto.Library), as ratekit's Redis stores run it.
const fcallSuffix = " fcall"

// seedArgs are the guide's token bucket arguments: capacity, refill rate,
// refill interval, now (fixed: nothing refills, nothing is denied).
var seedArgs = []string{strconv.FormatInt(big, 10), "1", "1000000", "1700000000000000"}

// policyCeiling names the ceiling of the two-limit policy (policyLimiter).
const policyCeiling = "policy tokenbucket+fixedwindow"

// ceilingScript returns the script the open limiter l sends for one
// decision in server-time mode, and its arguments.
func ceilingScript(name string, l core.Limiter) (*core.Script, []string, error) {
	e := engine.Of(l)
	if e == nil {
		return nil, nil, fmt.Errorf("%s: %T is not a limiter of ratekit's engine", name, l)
	}
	c, err := e.Call("k", 1)
	if err != nil {
		return nil, nil, err
	}
	var args []string
	for _, v := range c.Args {
		args = append(args, strconv.FormatInt(v, 10))
	}
	return c.Script, args, nil
}

// ceilingScripts returns the scripts whose ceilings are measured: the
// guide's token bucket, each algorithm o selects, and the two-limit
// policy, with the number of keys each takes.
func ceilingScripts(o options) ([]benchScript, error) {
	seed, err := os.ReadFile(seedScript())
	if err != nil {
		return nil, err
	}
	scripts := []benchScript{{"seed tokenbucket", core.NewScript("seed", string(seed), nil, false), seedArgs, 1}}
	store, err := memory.New()
	if err != nil {
		return nil, err
	}
	defer store.Close()
	for _, a := range algos {
		if !want(o.algorithms, a.name) {
			continue
		}
		l, err := a.open(store, "ceil:")
		if err != nil {
			return nil, err
		}
		s, args, err := ceilingScript(a.name, l)
		if err != nil {
			return nil, err
		}
		scripts = append(scripts, benchScript{a.name, s, args, 1})
	}
	p, err := policyLimiter(store, "ceil:")
	if err != nil {
		return nil, err
	}
	s, args, err := ceilingScript(policyCeiling, p)
	if err != nil {
		return nil, err
	}
	return append(scripts, benchScript{policyCeiling, s, args, 2}), nil
}

// benchScript is a script redis-benchmark runs.
type benchScript struct {
	name string
	s    *core.Script
	args []string
	keys int
}

// measureCeilings measures each script's ceilings (ceilingScripts), as
// EVALSHA and as FCALL, and adds one round of them to res. Each -P 16
// ceiling is measured in ceilingSlices slices, in turn with as many of
// the guide's script (EVALSHA, -P 16), forth and back (G S S G ...), and
// read against the guide's (ceiling.guide): two runs of a second each,
// one after the other, read ratios from 0.7x to 1.0x of one pair of
// scripts on this host, whose speed moves by a third within seconds.
func measureCeilings(ctx context.Context, t *target, o options, res *results, m *meter) error {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return fmt.Errorf("redis-benchmark not found (it comes with redis-server): %w", err)
	}
	conn, tag := t.benchmarkArgs()
	loader := t.goredis(0) // SCRIPT LOAD reaches every master of a cluster
	defer loader.Close()
	scripts, err := ceilingScripts(o)
	if err != nil {
		return err
	}
	// run runs n calls of s by cmd (EVALSHA or FCALL of payload),
	// pipelined p deep, and returns their rate and the server's CPU time
	// per call.
	run := func(s benchScript, cmd, payload string, p, n int) (rps, cpu float64, err error) {
		args := append(slices.Clone(conn), "-n", strconv.Itoa(n), "-c", "50", "-P", strconv.Itoa(p), "-r", strconv.Itoa(o.keys), "--csv",
			cmd, payload, strconv.Itoa(s.keys))
		for i := range s.keys {
			args = append(args, fmt.Sprintf("%sceil:%s:%d:%s", t.prefix, strings.ReplaceAll(s.name, " ", "-"), i, tag))
		}
		args = append(args, s.args...)
		cpu0 := serverCPU(ctx, loader)
		out, err := exec.CommandContext(ctx, bin, args...).Output() // killed, and waited for, when ctx ends
		if err != nil {
			return 0, 0, fmt.Errorf("redis-benchmark %s: %w", s.name, err)
		}
		if rps, err = parseRPS(string(out)); err != nil {
			return 0, 0, fmt.Errorf("redis-benchmark %s: %w: %s", s.name, err, out)
		}
		return rps, (serverCPU(ctx, loader) - cpu0) / float64(n) * 1e6, nil
	}
	guide := scripts[0] // ceilingScripts puts the guide's first
	guideSHA := ""
	for _, s := range scripts {
		sha, err := loader.ScriptLoad(ctx, s.s.Lua()).Result()
		if err != nil {
			return fmt.Errorf("SCRIPT LOAD %s: %w", s.name, err)
		}
		fn, err := loadFunction(ctx, loader, s.s)
		if err != nil {
			return fmt.Errorf("FUNCTION LOAD %s: %w", s.name, err)
		}
		if s.name == guide.name {
			guideSHA = sha
		}
		for _, way := range []struct{ suffix, cmd, payload string }{{"", "EVALSHA", sha}, {fcallSuffix, "FCALL", fn}} {
			if way.payload == "" {
				continue // a server without functions
			}
			// The load is sampled over a whole measurement, its slices
			// together, as over one run: over a slice of a fifth of a
			// second, a burst of another process that a run of a second
			// dilutes reads as a disturbance.
			var c ceiling
			n := o.ceilingReqs / ceilingSlices
			before := m.sample()
			for k := range 2 * ceilingSlices {
				// G S S G G S ...: k = 0, 3, 4, 7 ... run the guide's.
				if (k+1)%4 < 2 {
					rps, _, err := run(guide, "EVALSHA", guideSHA, 16, n)
					if err != nil {
						return err
					}
					c.guide += rps / ceilingSlices
					continue
				}
				rps, cpu, err := run(s, way.cmd, way.payload, 16, n)
				if err != nil {
					return err
				}
				c.p16, c.cpu = c.p16+rps/ceilingSlices, c.cpu+cpu/ceilingSlices
			}
			res.ceilingLoad = append(res.ceilingLoad, between(before, m.sample()))
			before = m.sample()
			if c.p1, _, err = run(s, way.cmd, way.payload, 1, o.ceilingReqs/4); err != nil {
				return err
			}
			res.ceilingLoad = append(res.ceilingLoad, between(before, m.sample()))
			res.ceilings[s.name+way.suffix] = append(res.ceilings[s.name+way.suffix], c)
		}
	}
	return nil
}

// ceilingSlices is how many slices of a script's -P 16 run alternate
// with as many of the guide's script.
const ceilingSlices = 4

// loadFunction loads s's function library (scriptproto.Library) on every
// master and returns the name FCALL calls, or "" when the server has no
// functions (Redis before 7.0).
func loadFunction(ctx context.Context, c goredis.UniversalClient, s *core.Script) (string, error) {
	lib := scriptproto.Library(s)
	load := func(ctx context.Context, c *goredis.Client) error {
		err := c.FunctionLoad(ctx, lib).Err()
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return err
	}
	var err error
	if cc, ok := c.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, load)
	} else {
		err = load(ctx, c.(*goredis.Client))
	}
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		return "", nil
	}
	return scriptproto.Function(s), err
}

// serverCPU returns the CPU time, user and system, in seconds, that the
// target's servers have used (INFO cpu), summed over a cluster's masters;
// NaN when a server does not say.
func serverCPU(ctx context.Context, c goredis.UniversalClient) float64 {
	var mu sync.Mutex
	total := 0.0
	read := func(ctx context.Context, c *goredis.Client) error {
		info, err := c.Info(ctx, "cpu").Result()
		v := math.NaN()
		if err == nil {
			v = cpuSeconds(info)
		}
		mu.Lock()
		total += v
		mu.Unlock()
		return nil
	}
	if cc, ok := c.(*goredis.ClusterClient); ok {
		cc.ForEachMaster(ctx, read)
	} else {
		read(ctx, c.(*goredis.Client))
	}
	return total
}

// cpuSeconds reads used_cpu_user and used_cpu_sys from INFO cpu.
func cpuSeconds(info string) float64 {
	var user, sys float64 = math.NaN(), math.NaN()
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch k {
		case "used_cpu_user":
			user = f
		case "used_cpu_sys":
			sys = f
		}
	}
	return user + sys
}

// parseRPS reads the rps column of redis-benchmark --csv output.
// In cluster mode it first prints the nodes, which are not CSV.
func parseRPS(out string) (float64, error) {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, `"`) {
			lines = append(lines, l)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(strings.Join(lines, "\n"))).ReadAll()
	if err != nil {
		return 0, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if len(recs[i]) >= 2 {
			if v, err := strconv.ParseFloat(recs[i][1], 64); err == nil {
				return v, nil
			}
		}
	}
	return 0, fmt.Errorf("no rps in output")
}

// seedScript is the path of the guide's token bucket script in the
// repository, found from this file's own path, so that the harness runs
// from any directory.
func seedScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testkit", "luatest", "seedtest", "testdata", "seed_tokenbucket.lua")
}
