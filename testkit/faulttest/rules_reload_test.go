package faulttest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// The configurations of TestRulesReloadUnderLoad, one per version from 1
// to reloadVersions: every decision's "counted" and "version" rules carry
// the version in their requests_per_unit (they never deny), and "tight"
// allows reloadStep more at each version (raised only, so that what
// passes in all is exactly the last version's).
const (
	reloadVersions = 100
	reloadStep     = 10
	countedBase    = 1_000_000_000
	versionBase    = 2_000_000_000
)

func reloadYAML(version int) string {
	return fmt.Sprintf(`domain: reload
descriptors:
  - key: counted
    rate_limit: {unit: hour, requests_per_unit: %d}
  - key: version
    rate_limit: {unit: hour, requests_per_unit: %d}
  - key: tight
    rate_limit: {unit: hour, requests_per_unit: %d}
`, countedBase+version, versionBase+version, reloadStep*version)
}

var reloadDescriptors = []rules.Descriptor{
	{Entries: []rules.Entry{{Key: "counted", Value: "all"}}},
	{Entries: []rules.Entry{{Key: "version", Value: "v"}}},
	{Entries: []rules.Entry{{Key: "tight", Value: "t"}}},
}

// reloadClock freezes the decisions' time: the hour's window never ends
// while the test runs.
var reloadClock = core.ClockFunc(func() time.Time { return time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC) })

// TestRulesReloadUnderLoad: three OS processes decide at full speed
// through package rules against one redis-server, each watching the same
// configuration file, while the file changes 100 times (written in
// place and replaced by a rename, in turn). Every count is exact: the
// store holds exactly the decisions the processes were told were
// allowed (none lost, none counted twice), every decision saw one
// configuration (its statuses all carry one version), and what passes
// a limit raised 100 times is exactly the last limit.
func TestRulesReloadUnderLoad(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(version int) {
		t.Helper()
		data := []byte(reloadYAML(version))
		if version%2 == 0 {
			tmp := filepath.Join(dir, ".config.tmp")
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	prefix := fmt.Sprintf("reload:%d:", time.Now().UnixNano())
	const procs = 3
	outs := make([]*strings.Builder, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRulesReloadWorker$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "RELOAD_CHILD="+strconv.Itoa(i), "RELOAD_ADDR="+srv.Addr, "RELOAD_PREFIX="+prefix, "RELOAD_PATH="+path)
		outs[i] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		cmds[i] = cmd
	}
	// Let the processes start deciding, then change the file 100 times.
	time.Sleep(500 * time.Millisecond)
	for v := 2; v <= reloadVersions; v++ {
		write(v)
		time.Sleep(15 * time.Millisecond)
	}
	var counted, tight, decisions, mixed int64
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
		var c, tt, d, m, last, loads, failed int64
		found := false
		sc := bufio.NewScanner(strings.NewReader(outs[i].String()))
		for sc.Scan() {
			if _, err := fmt.Sscanf(sc.Text(), "reload counted %d tight %d decisions %d mixed %d last %d", &c, &tt, &d, &m, &last); err == nil {
				found = true
			}
			fmt.Sscanf(sc.Text(), "reload loads %d failed %d", &loads, &failed)
		}
		if !found {
			t.Fatalf("process %d reported nothing:\n%s", i, outs[i])
		}
		if last != reloadVersions {
			t.Errorf("process %d last decided with version %d, want %d", i, last, reloadVersions)
		}
		t.Logf("process %d: %d decisions, counted %d, tight %d; %d loads, %d failed (a file read while written)", i, d, c, tt, loads, failed)
		if loads < 2 {
			t.Errorf("process %d loaded %d configurations, want the first and at least one change", i, loads)
		}
		counted, tight, decisions, mixed = counted+c, tight+tt, decisions+d, mixed+m
	}
	if mixed != 0 {
		t.Errorf("%d decisions saw rules of two versions", mixed)
	}
	if tight != reloadStep*reloadVersions {
		t.Errorf("%d allowed by a limit raised to %d, want exactly %d", tight, reloadStep*reloadVersions, reloadStep*reloadVersions)
	}
	if counted != decisions {
		t.Errorf("%d of %d decisions counted by a limit that never denies", counted, decisions)
	}
	// What the store holds is what the processes were told.
	r := reloadRules(t, srv.Addr, prefix, nil)
	if _, err := r.Update([]rules.File{{Name: "last", Data: []byte(reloadYAML(reloadVersions))}}, rules.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Decide(context.Background(), "reload", reloadDescriptors[:1], 0)
	if err != nil {
		t.Fatal(err)
	}
	if stored := int64(countedBase+reloadVersions) - int64(res.Statuses[0].Remaining); stored != counted {
		t.Errorf("the store counted %d, the processes were told %d were allowed", stored, counted)
	}
}

func reloadRules(t *testing.T, addr, prefix string, onLoad func(*rules.Config, error)) *rules.Rules {
	t.Helper()
	r, err := rules.New(adapters[0].open(t, addr), nil, rules.Options{Prefix: prefix, Clock: reloadClock, OnLoad: onLoad})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRulesReloadWorker is one process of TestRulesReloadUnderLoad; it
// does nothing unless that test started it. It decides from 4 goroutines
// until it has decided with the last version and found its tight limit
// spent.
func TestRulesReloadWorker(t *testing.T) {
	if os.Getenv("RELOAD_CHILD") == "" {
		return
	}
	r := reloadRules(t, os.Getenv("RELOAD_ADDR"), os.Getenv("RELOAD_PREFIX"), func(_ *rules.Config, err error) {
		if err != nil && !strings.Contains(err.Error(), "cannot have empty domain") {
			t.Errorf("a load failed for another reason than a file read empty while written: %v", err)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watched := make(chan error, 1)
	go func() {
		watched <- r.Watch(ctx, os.Getenv("RELOAD_PATH"), rules.WatchOptions{Interval: 2 * time.Millisecond})
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for r.Config() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no configuration loaded")
		}
		time.Sleep(time.Millisecond)
	}
	var counted, tight, decisions, mixed, last atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var res rules.Result
			for time.Now().Before(deadline) {
				if err := r.DecideTo(ctx, &res, "reload", reloadDescriptors, 1); err != nil {
					t.Error(err)
					return
				}
				decisions.Add(1)
				c, v, tt := res.Statuses[0], res.Statuses[1], res.Statuses[2]
				version := int64(c.RequestsPerUnit) - countedBase
				if int64(v.RequestsPerUnit)-versionBase != version || int64(tt.RequestsPerUnit) != reloadStep*version {
					mixed.Add(1)
				}
				if c.Code == rules.OK {
					counted.Add(1)
				}
				if tt.Code == rules.OK {
					tight.Add(1)
				}
				for {
					l := last.Load()
					if version <= l || last.CompareAndSwap(l, version) {
						break
					}
				}
				if version == reloadVersions && tt.Code == rules.OverLimit {
					return
				}
			}
			t.Error("the last version's tight limit was not spent within 2 minutes")
		})
	}
	wg.Wait()
	cancel()
	<-watched
	succeeded, failed := r.Loads()
	fmt.Printf("reload loads %d failed %d\n", succeeded, failed)
	fmt.Printf("reload counted %d tight %d decisions %d mixed %d last %d\n", counted.Load(), tight.Load(), decisions.Load(), mixed.Load(), last.Load())
}
