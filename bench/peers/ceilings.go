package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/store/memory"
)

// ceiling is redis-benchmark's rate for one script, pipelined 16 deep and
// not pipelined, from 50 connections.
type ceiling struct{ p16, p1 float64 }

// seedArgs are the guide's token bucket arguments: capacity, refill rate,
// refill interval, now (fixed: nothing refills, nothing is denied).
var seedArgs = []string{strconv.FormatInt(big, 10), "1", "1000000", "1700000000000000"}

// ceilingScript returns the script the open limiter of a sends for one
// decision in server-time mode, and its arguments.
func ceilingScript(a algo) (lua string, args []string, err error) {
	store, err := memory.New()
	if err != nil {
		return "", nil, err
	}
	defer store.Close()
	l, err := a.open(store, "ceil:")
	if err != nil {
		return "", nil, err
	}
	e := engine.Of(l)
	if e == nil {
		return "", nil, fmt.Errorf("%s: %T is not a limiter of ratekit's engine", a.name, l)
	}
	c, err := e.Call("k", 1)
	if err != nil {
		return "", nil, err
	}
	for _, v := range c.Args {
		args = append(args, strconv.FormatInt(v, 10))
	}
	return c.Script.Lua(), args, nil
}

func measureCeilings(ctx context.Context, t *target, o options, res *results, m *meter) error {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return fmt.Errorf("redis-benchmark not found (it comes with redis-server): %w", err)
	}
	conn, tag := t.benchmarkArgs()
	loader := t.goredis(0) // SCRIPT LOAD reaches every master of a cluster
	defer loader.Close()
	type script struct {
		name string
		lua  string
		args []string
	}
	var scripts []script
	seed, err := os.ReadFile(seedScript())
	if err != nil {
		return err
	}
	scripts = append(scripts, script{"seed tokenbucket", string(seed), seedArgs})
	for _, a := range algos {
		if !want(o.algorithms, a.name) {
			continue
		}
		lua, args, err := ceilingScript(a)
		if err != nil {
			return err
		}
		scripts = append(scripts, script{a.name, lua, args})
	}
	for _, s := range scripts {
		sha, err := loader.ScriptLoad(ctx, s.lua).Result()
		if err != nil {
			return fmt.Errorf("SCRIPT LOAD %s: %w", s.name, err)
		}
		var c ceiling
		for _, p := range []int{16, 1} {
			n := o.ceilingReqs
			if p == 1 {
				n /= 4
			}
			args := append(slices.Clone(conn), "-n", strconv.Itoa(n), "-c", "50", "-P", strconv.Itoa(p), "-r", strconv.Itoa(o.keys), "--csv",
				"EVALSHA", sha, "1", t.prefix+"ceil:"+strings.ReplaceAll(s.name, " ", "-")+":"+tag)
			args = append(args, s.args...)
			before := m.sample()
			out, err := exec.CommandContext(ctx, bin, args...).Output() // killed, and waited for, when ctx ends
			res.ceilingLoad = append(res.ceilingLoad, between(before, m.sample()))
			if err != nil {
				return fmt.Errorf("redis-benchmark %s: %w", s.name, err)
			}
			rps, err := parseRPS(string(out))
			if err != nil {
				return fmt.Errorf("redis-benchmark %s: %w: %s", s.name, err, out)
			}
			if p == 16 {
				c.p16 = rps
			} else {
				c.p1 = rps
			}
		}
		res.ceilings[s.name] = append(res.ceilings[s.name], c)
	}
	return nil
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
