package faulttest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// The limits of TestRollingDeploy: an old limit and a raised new one, with
// no refill while the test runs (the decisions' clock is frozen).
const (
	rollingOld = 60
	rollingNew = 90
)

// rollingCase is one algorithm, with one Carry when it has the parameter.
type rollingCase struct {
	alg   algorithms.Algorithm
	carry int64 // -1: the algorithm has no Carry
}

func (c rollingCase) name() string {
	if c.carry < 0 {
		return c.alg.Name
	}
	return c.alg.Name + "/carry=" + ratekit.Carry(c.carry).String()
}

// params are the case's parameters with limit as its limit.
func (c rollingCase) params(limit int64) algorithms.Params {
	p := limitParams(c.alg, limit, 1, time.Hour)
	if c.carry >= 0 {
		p["carry"] = c.carry
	}
	return p
}

func rollingCases() []rollingCase {
	var cases []rollingCase
	for _, a := range algorithms.All {
		if _, ok := a.Param("carry"); !ok {
			cases = append(cases, rollingCase{a, -1})
			continue
		}
		for c := range ratekit.Carries() {
			cases = append(cases, rollingCase{a, int64(c)})
		}
	}
	return cases
}

// rollingSlot is the time between the cases' starts: the processes start
// each case at the same wall-clock time, so that their decisions
// interleave. (A process late for a case still sends every request of it:
// what is checked does not depend on the machine's speed.)
const rollingSlot = 400 * time.Millisecond

// TestRollingDeploy: during a rolling deploy, processes with the old limit
// and processes with the new one decide on the same keys at once. Three OS
// processes share one redis-server: one decides with the old limit, one
// with the new (given with each request, core.Request.Params), one with
// either at random, each from 8 goroutines, for every algorithm and every
// Carry. With no refill, what passes in all is exactly the new limit
// where what was used stays used (ratekit.CarryUsed, and every window:
// they count what happened), and between the old limit and the new one
// with ratekit.CarryAvailable, which may lose what a key had left when an
// old process wrote it: never more than the new limit, never less than
// the old one.
func TestRollingDeploy(t *testing.T) {
	srv := redistest.Start(t)
	cases := rollingCases()
	prefix := fmt.Sprintf("rolling:%d:", time.Now().UnixNano())
	start := time.Now().Add(3 * time.Second).Truncate(time.Millisecond) // room for three processes to start on a busy machine
	modes := []string{"old", "new", "mixed"}
	outs := make([]*strings.Builder, len(modes))
	var cmds []*exec.Cmd
	for i, mode := range modes {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRollingWorker$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "ROLLING_CHILD="+mode, "ROLLING_ADDR="+srv.Addr, "ROLLING_PREFIX="+prefix,
			"ROLLING_START="+strconv.FormatInt(start.UnixNano(), 10))
		outs[i] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		cmds = append(cmds, cmd)
	}
	allowed := map[string]int64{}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %q: %v\n%s", modes[i], err, outs[i])
		}
		sc := bufio.NewScanner(strings.NewReader(outs[i].String()))
		for sc.Scan() {
			var name string
			var n int64
			if _, err := fmt.Sscanf(sc.Text(), "rolling %s allowed %d", &name, &n); err == nil {
				allowed[name] += n
			}
		}
	}
	t.Logf("allowed in all: %v", allowed)
	for _, c := range cases {
		got, ok := allowed[c.name()]
		switch {
		case !ok:
			t.Errorf("%s: no process reported", c.name())
		case c.carry == int64(ratekit.CarryAvailable) && (got < rollingOld || got > rollingNew):
			t.Errorf("%s: %d allowed in all, want between the old limit %d and the new %d", c.name(), got, rollingOld, rollingNew)
		case c.carry != int64(ratekit.CarryAvailable) && got != rollingNew:
			t.Errorf("%s: %d allowed in all, want the new limit, %d", c.name(), got, rollingNew)
		}
	}
}

// TestRollingWorker is one process of TestRollingDeploy; it does nothing
// unless that test started it.
func TestRollingWorker(t *testing.T) {
	mode := os.Getenv("ROLLING_CHILD")
	if mode == "" {
		return
	}
	startNS, err := strconv.ParseInt(os.Getenv("ROLLING_START"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	store := adapters[0].open(t, os.Getenv("ROLLING_ADDR"))
	frozen := core.ClockFunc(func() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) })
	for i, c := range rollingCases() {
		lim, err := c.alg.New(store, c.params(rollingOld), frozen, os.Getenv("ROLLING_PREFIX")+strconv.Itoa(i)+":")
		if err != nil {
			t.Fatal(err)
		}
		newer, err := c.alg.NewParams(c.params(rollingNew))
		if err != nil {
			t.Fatal(err)
		}
		slot := time.Unix(0, startNS).Add(time.Duration(i) * rollingSlot)
		time.Sleep(time.Until(slot))
		var n atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for k := range 100 {
					r := core.Request{Key: "hot", N: 1}
					if mode == "new" || mode == "mixed" && (g+k)%2 == 1 {
						r.Params = []core.Params{newer}
					}
					d, err := lim.Decide(context.Background(), r)
					if err != nil {
						t.Errorf("%s: %v", c.name(), err)
						return
					}
					if d.Allowed {
						n.Add(1)
					}
				}
			})
		}
		wg.Wait()
		fmt.Printf("rolling %s allowed %d\n", c.name(), n.Load())
	}
}
