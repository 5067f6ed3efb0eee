package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Misspelled names are refused with the valid ones, rather than measuring
// nothing.
func TestParseOptions(t *testing.T) {
	var err error
	if algos, err = ratekitAlgos(); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) (options, error) {
		fs := flag.NewFlagSet("peers", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseOptions(fs, args)
	}
	o, err := parse("-stores", "rueidis, memory", "-algorithms", "gcra", "-goroutines", "1")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.stores) != 2 || !o.stores["rueidis"] || !o.stores["memory"] || len(o.algorithms) != 1 || !o.algorithms["gcra"] || len(o.goroutines) != 1 {
		t.Fatalf("parseOptions = stores %v, algorithms %v, goroutines %v", o.stores, o.algorithms, o.goroutines)
	}
	if o, err := parse(); err != nil || o.stores != nil || o.algorithms != nil {
		t.Fatalf("parseOptions() = stores %v, algorithms %v, %v; want all (nil)", o.stores, o.algorithms, err)
	}
	tests := []struct {
		give []string
		want []string // in the error
	}{
		{[]string{"-stores", "rueidis,reuidis"}, []string{`-stores: unknown "reuidis"`, "memory, goredis, goredis-auto, rueidis, redigo, valkey"}},
		{[]string{"-stores", ""}, []string{`-stores: unknown ""`}},
		{[]string{"-algorithms", "token-bucket,gcr"}, []string{`-algorithms: unknown "token-bucket", "gcr"`, "tokenbucket", "slidinglog"}},
		{[]string{"-goroutines", "1,0"}, []string{"-goroutines"}},
		{[]string{"stray"}, []string{"stray"}},
	}
	for _, tt := range tests {
		_, err := parse(tt.give...)
		if err == nil {
			t.Errorf("parseOptions(%q) accepted", tt.give)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parseOptions(%q) = %v, want it to say %q", tt.give, err, w)
			}
		}
	}
}

// When no case is left (redigo has no cluster client), runAll measures
// nothing and says so, rather than returning empty results to write.
func TestRunAllNothingToMeasure(t *testing.T) {
	var err error
	if algos, err = ratekitAlgos(); err != nil {
		t.Fatal(err)
	}
	tg := &target{addrs: []string{"127.0.0.1:1"}, cluster: true, prefix: "x:"}
	o := options{rounds: 1, duration: time.Millisecond, goroutines: []int{1}, keys: 10, stores: map[string]bool{"redigo": true}}
	if res, err := runAll(context.Background(), o, tg, newMeter(0)); err == nil || !strings.Contains(err.Error(), "nothing to measure") {
		t.Fatalf("runAll(redigo on a cluster, no peers) = %v, %v; want nothing to measure", res, err)
	}
}

// The chart draws a single concurrency (a log axis must not start at 0),
// and is left out, with RESULTS.md's link to it, when there is no line.
func TestChart(t *testing.T) {
	r := &results{samples: map[caseKey][]sample{
		{"ratekit/rueidis", "tokenbucket", "open", 1}: {{ops: 12000}},
		{"redis_rate", "tokenbucket", "open", 1}:      {{ops: 9000}},
	}}
	png, err := r.chart()
	if err != nil || len(png) == 0 {
		t.Fatalf("chart of one concurrency = %d bytes, %v", len(png), err)
	}
	r.samples = map[caseKey][]sample{{"ratekit/rueidis", "gcra", "open", 1}: {{ops: 12000}}}
	if png, err := r.chart(); png != nil || err != nil {
		t.Fatalf("chart of no token bucket = %d bytes, %v; want none", len(png), err)
	}
	o := options{rounds: 1, goroutines: []int{1}}
	if md := r.markdown(o, false); strings.Contains(md, "throughput.png") {
		t.Errorf("RESULTS.md without a chart links to it")
	}
	if md := r.markdown(o, true); !strings.Contains(md, "throughput.png") {
		t.Errorf("RESULTS.md with a chart does not link to it")
	}
}

// userServer starts a redis-server to stand for the user's, holding one
// key of the user's, and returns a client to it.
func userServer(t *testing.T) (*redisServer, goredis.UniversalClient) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found: %v", err)
		}
		t.Skipf("SKIPPED: redis-server not found (%v)", err)
	}
	srv, err := startRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	c := goredis.NewClient(&goredis.Options{Addr: srv.addr})
	t.Cleanup(func() { c.Close() })
	if err := c.Set(context.Background(), "user:1", "precious", 0).Err(); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// checkUsersKeyAlone fails unless the server holds the user's key, as it
// was, and nothing else.
func checkUsersKeyAlone(t *testing.T, c goredis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	if got, err := c.Get(ctx, "user:1").Result(); err != nil || got != "precious" {
		t.Errorf("the user's user:1 = %q, %v; want \"precious\"", got, err)
	}
	if keys, err := c.Keys(ctx, "*").Result(); err != nil || len(keys) != 1 {
		t.Errorf("the server holds %d keys (%q...), %v; want only the user's", len(keys), keys[:min(len(keys), 5)], err)
	}
}

// A -prefix under which the user's server already holds a key is refused
// before anything is written: the harness would delete that key.
func TestRunRefusesPrefixInUse(t *testing.T) {
	srv, c := userServer(t)
	var err error
	if algos, err = ratekitAlgos(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o := options{rounds: 1, duration: 50 * time.Millisecond, goroutines: []int{1}, keys: 100, peers: true, ceilings: true, ceilingReqs: 100,
		stores: map[string]bool{"goredis": true}, algorithms: map[string]bool{"tokenbucket": true},
		out: out, redisURL: "redis://" + srv.addr, prefix: "user:"}
	err = run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), `"user:1"`) {
		t.Fatalf("run with -prefix user: on a server holding user:1 = %v; want a refusal naming it", err)
	}
	checkUsersKeyAlone(t, c)
	if _, err := os.Stat(filepath.Join(out, "RESULTS.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RESULTS.md after a refusal: %v", err)
	}
}

// Interrupted, the harness stops measuring, waits for every client to
// stop writing, then deletes its keys, and writes no results. (The open
// limiters' keys live a millisecond; what is left to delete is the
// setup's and the policies' keys. TestCleanupLateWrite covers a write
// that lands between cleanup's passes.)
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short: runs the harness for a few seconds")
	}
	srv, c := userServer(t)
	var err error
	if algos, err = ratekitAlgos(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	// Long enough that only an interruption ends it within the test:
	// each case runs a minute.
	// Redis stores only: an in-process case would hold the run for its
	// minute before any key is written; and no hot-key case, which writes
	// one key for a minute.
	o := options{rounds: 3, duration: time.Minute, goroutines: []int{1, 32}, keys: 2000, ceilings: true, ceilingReqs: 20000,
		denyCache: true, algorithms: map[string]bool{"tokenbucket": true, "gcra": true},
		stores: map[string]bool{"rueidis": true, "goredis": true}, // no hot key: its case writes one key a minute
		out:    out, redisURL: "redis://" + srv.addr, prefix: "rkt:interrupted:"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, o) }()
	// Interrupt while a case measures: once keys that only the
	// measurement writes exist (the open limiters' and the policies', not
	// the setup's tight ones), the first case has begun, and it lasts a
	// minute.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		n := 0
		for _, pattern := range []string{"*:open:*", "*:policy:*"} {
			ks, err := c.Keys(ctx, o.prefix+pattern).Result()
			if err != nil {
				t.Fatal(err)
			}
			n += len(ks)
		}
		if n > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before any case measured: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the harness measured nothing in two minutes")
		}
	}
	cancel()
	interrupted := time.Now()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Errorf("run, interrupted = %v; want an error saying so", err)
		}
		// Well within a case's minute, on a busy machine too: the case
		// stopped.
		if d := time.Since(interrupted); d > 40*time.Second {
			t.Errorf("run returned %v after the interruption", d)
		}
	case <-time.After(50 * time.Second):
		t.Fatal("run did not return within 50 s of the interruption")
	}
	// A write sent before run returned lands by now.
	time.Sleep(time.Second)
	checkUsersKeyAlone(t, c)
	if _, err := os.Stat(filepath.Join(out, "RESULTS.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RESULTS.md after an interruption: %v", err)
	}
}

// A write that lands after cleanup's first pass (one a client sent just
// before it stopped) is deleted by the next; an unclaimed prefix is
// never cleaned.
func TestCleanupLateWrite(t *testing.T) {
	srv, c := userServer(t)
	ctx := context.Background()
	tg, err := newTarget("redis://"+srv.addr, "", "rkt:late:")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "rkt:late:early", 1, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := tg.cleanup(ctx); n != 0 || err != nil {
		t.Fatalf("cleanup of an unclaimed prefix = %d, %v; want nothing deleted", n, err)
	}
	if err := c.Del(ctx, "rkt:late:early").Err(); err != nil {
		t.Fatal(err)
	}
	if err := tg.claim(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "rkt:late:early", 1, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	var late error
	tg.afterPass = func(pass int) {
		if pass == 0 { // after the first pass, before the second
			late = c.Set(ctx, "rkt:late:late", 1, time.Hour).Err()
		}
	}
	n, err := tg.cleanup(ctx)
	if late != nil {
		t.Fatal(late)
	}
	if n != 3 || err != nil { // early, late and the claim's own key
		t.Errorf("cleanup = %d, %v; want 3 keys deleted", n, err)
	}
	checkUsersKeyAlone(t, c)
}

// Two runs given one prefix at once both find it empty; only one may
// hold it, or the first to finish would delete the other's keys.
func TestClaimIsExclusive(t *testing.T) {
	srv, c := userServer(t)
	ctx := context.Background()
	var ts []*target
	for range 2 {
		tg, err := newTarget("redis://"+srv.addr, "", "rkt:twice:")
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tg)
	}
	if err := ts[0].claim(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ts[1].claim(ctx); err == nil || ts[1].claimed {
		t.Fatalf("a second claim of a held prefix: %v, claimed %v", err, ts[1].claimed)
	}
	if n, err := ts[0].cleanup(ctx); n != 1 || err != nil {
		t.Fatalf("cleanup = %d, %v; want the claim's key deleted", n, err)
	}
	checkUsersKeyAlone(t, c)
}

// make bench keeps the section make bench-rls wrote, and only it.
func TestKeptSection(t *testing.T) {
	for _, tt := range []struct{ old, want string }{
		{"# results\n\n| a |\n", ""},
		{"# results\n\n| a |\n\n" + serverSection + "\n## ratekit-server\n\n| b |\n", "\n" + serverSection + "\n## ratekit-server\n\n| b |\n"},
		{serverSection + " at the start is no section\n", ""},
	} {
		if got := keptSection(tt.old); got != tt.want {
			t.Errorf("keptSection(%q) = %q, want %q", tt.old, got, tt.want)
		}
	}
}
