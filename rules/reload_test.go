package rules_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

func limitYAML(domain string, rpu int) string {
	return fmt.Sprintf("domain: %s\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: %d}\n", domain, rpu)
}

func TestUpdateKeepsOldOnError(t *testing.T) {
	var mu sync.Mutex
	var reports []error
	r, _ := newRules(t, limitYAML("d", 5), rules.Options{OnLoad: func(cfg *rules.Config, err error) {
		mu.Lock()
		defer mu.Unlock()
		if (cfg == nil) == (err == nil) {
			t.Errorf("OnLoad(%v, %v): want exactly one of them", cfg, err)
		}
		reports = append(reports, err)
	}})
	before := r.Config()
	if _, err := r.Update([]rules.File{{Name: "bad.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: eon, requests_per_unit: 1}\n")}}, rules.LoadOptions{}); !errors.Is(err, rules.ErrConfig) {
		t.Fatalf("Update(bad) = %v, want ErrConfig", err)
	}
	if r.Config() != before {
		t.Fatal("a bad configuration replaced the one in force")
	}
	if s := decide(t, r, "d", 1, desc("k=a")).Statuses[0]; s.RequestsPerUnit != 5 {
		t.Fatalf("after a bad update: %+v", s)
	}
	cfg, err := r.Update([]rules.File{{Name: "good.yaml", Data: []byte(limitYAML("d", 7))}}, rules.LoadOptions{})
	if err != nil || r.Config() != cfg {
		t.Fatalf("Update(good) = %v, %v", cfg, err)
	}
	// The count stays: 1 of 7 used.
	if s := decide(t, r, "d", 1, desc("k=a")).Statuses[0]; s.RequestsPerUnit != 7 || s.Remaining != 5 {
		t.Fatalf("after a good update: %+v", s)
	}
	if ok, failed := r.Loads(); ok != 1 || failed != 1 {
		t.Errorf("Loads() = %d, %d, want 1, 1", ok, failed)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 2 || reports[0] == nil || reports[1] != nil {
		t.Errorf("OnLoad reports %v, want an error then nil", reports)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func watch(t *testing.T, path string) (*rules.Rules, func()) {
	t.Helper()
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	r, err := rules.New(store, nil, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, path, rules.WatchOptions{Interval: 5 * time.Millisecond}) }()
	return r, func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
		store.Close()
	}
}

func rpu(r *rules.Rules, domain string) uint32 {
	rule, _ := r.Config().Match(domain, entries("k=x"))
	if rule == nil {
		return 0
	}
	return rule.RequestsPerUnit
}

func TestWatchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(s string) {
		t.Helper()
		// Written in place, as an editor or a cp does.
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(limitYAML("d", 1))
	r, stop := watch(t, path)
	defer stop()
	waitFor(t, "the first load", func() bool { return r.Config() != nil && rpu(r, "d") == 1 })
	write(limitYAML("d", 2))
	waitFor(t, "the change", func() bool { return rpu(r, "d") == 2 })
	write("domain: d\ndescriptors: [oops]\n")
	waitFor(t, "the bad load", func() bool { _, failed := r.Loads(); return failed == 1 })
	if rpu(r, "d") != 2 {
		t.Fatal("a bad file replaced the configuration in force")
	}
	// Replaced by a rename.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(limitYAML("d", 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the renamed file", func() bool { return rpu(r, "d") == 3 })
	if ok, failed := r.Loads(); ok != 3 || failed != 1 {
		t.Errorf("Loads() = %d, %d, want 3, 1", ok, failed)
	}
}

// A Kubernetes ConfigMap volume: files are links into ..data, itself a
// link to a timestamped directory, swapped by a rename.
func TestWatchConfigMap(t *testing.T) {
	dir := t.TempDir()
	version := 0
	publish := func(files map[string]string) {
		t.Helper()
		version++
		ts := fmt.Sprintf("..2026_12_05_%02d", version)
		if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, ts, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, name)
			if _, err := os.Lstat(link); err != nil {
				if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Symlink(ts, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	publish(map[string]string{"a.yaml": limitYAML("a", 1), "b.yaml": limitYAML("b", 1)})
	r, stop := watch(t, dir)
	defer stop()
	waitFor(t, "the first load", func() bool { return r.Config() != nil })
	if got := r.Config().Domains(); len(got) != 2 {
		t.Fatalf("domains %v, want a and b (and no ..data twice)", got)
	}
	publish(map[string]string{"a.yaml": limitYAML("a", 2), "b.yaml": limitYAML("b", 2)})
	waitFor(t, "the swap", func() bool { return rpu(r, "a") == 2 && rpu(r, "b") == 2 })
	if _, failed := r.Loads(); failed != 0 {
		t.Errorf("%d failed loads", failed)
	}
}

// Every decision sees one configuration, never a mix: both descriptors
// of a request match rules of the same file.
func TestDecisionsSeeOneConfig(t *testing.T) {
	r, _ := newRules(t, limitYAML("d", 1000000), rules.Options{})
	configs := make([]*rules.Config, 2)
	for i := range configs {
		cfg, err := rules.Parse([]rules.File{{Name: fmt.Sprint(i), Data: []byte(
			"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1000000}\n  - key: j\n    rate_limit: {unit: hour, requests_per_unit: 1000000}\n")}}, rules.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		configs[i] = cfg
	}
	if err := r.Set(configs[0]); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if err := r.Set(configs[i%2]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var res rules.Result
	for range 5000 {
		if err := r.DecideTo(context.Background(), &res, "d", []rules.Descriptor{desc("k=a"), desc("j=b")}, 1); err != nil {
			t.Fatal(err)
		}
		if a, b := res.Statuses[0].Rule.File, res.Statuses[1].Rule.File; a != b {
			t.Fatalf("one decision saw rules of %s and %s", a, b)
		}
	}
	stop.Store(true)
	wg.Wait()
}

// A file removed from a watched directory leaves the configuration with
// it (envoyproxy/ratelimit's integration test: a deletion is a load too).
func TestWatchFileRemoved(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, d+".yaml"), []byte(limitYAML(d, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, stop := watch(t, dir)
	defer stop()
	waitFor(t, "the first load", func() bool { return r.Config() != nil && len(r.Config().Domains()) == 2 })
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's removal", func() bool { return len(r.Config().Domains()) == 1 })
	if d := r.Config().Domains(); d[0] != "a" {
		t.Errorf("domains %v, want [a]", d)
	}
}

// A path that is not there yet is reported once; when it appears empty,
// that is a failed load too; its first file is loaded.
func TestWatchPathAppears(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	r, stop := watch(t, dir)
	defer stop()
	waitFor(t, "the missing path's report", func() bool { _, failed := r.Loads(); return failed == 1 })
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the empty directory's report", func() bool { _, failed := r.Loads(); return failed == 2 })
	if r.Config() != nil {
		t.Fatal("an empty directory was loaded")
	}
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(limitYAML("a", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first file's load", func() bool { return r.Config() != nil })
	if ok, failed := r.Loads(); ok != 1 || failed != 2 || len(r.Config().Domains()) != 1 {
		t.Errorf("Loads() = %d, %d; domains %v", ok, failed, r.Config().Domains())
	}
}
