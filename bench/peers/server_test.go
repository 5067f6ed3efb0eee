package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestNewTarget(t *testing.T) {
	if tg, err := newTarget("", "", ""); tg != nil || err != nil {
		t.Fatalf("no -redis, no -cluster: %v, %v; want the harness's own server", tg, err)
	}
	tg, err := newTarget("redis://u:secret@db.example:6380/2", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if tg.addrs[0] != "db.example:6380" || tg.username != "u" || tg.password != "secret" || tg.db != 2 || tg.cluster {
		t.Fatalf("parsed %+v", tg)
	}
	if !strings.HasPrefix(tg.prefix, "ratekit-bench:") || len(tg.prefix) < len("ratekit-bench:12345678:") {
		t.Fatalf("default prefix %q", tg.prefix)
	}
	args, tag := tg.benchmarkArgs()
	if got := strings.Join(args, " "); got != "-h db.example -p 6380 -a secret --user u --dbnum 2" || tag != "{__rand_int__}" {
		t.Fatalf("redis-benchmark flags %q, key %q", got, tag)
	}
	c, err := newTarget("", "10.0.0.1:7000, redis://10.0.0.2:7001", "mine:")
	if err != nil {
		t.Fatal(err)
	}
	if !c.cluster || len(c.addrs) != 2 || c.addrs[1] != "10.0.0.2:7001" || c.prefix != "mine:" {
		t.Fatalf("cluster %+v", c)
	}
	if args, tag := c.benchmarkArgs(); args[len(args)-1] != "--cluster" || !strings.Contains(tag, "{tag}") {
		t.Fatalf("cluster redis-benchmark flags %q, key %q", args, tag)
	}
	for _, bad := range [][3]string{
		{"redis://a:1", "b:2", ""},   // both
		{"rediss://a:1", "", ""},     // TLS
		{"", "redis://a:1/3", ""},    // a database on a cluster
		{"redis://a:1", "", "p{x}:"}, // a hash tag in the prefix
		{"redis://a:1", "", "p*:"},   // a pattern in the prefix: cleanup would match more
		{"redis://a:1", "", `p\:`},   // SCAN MATCH reads a backslash as an escape: cleanup would miss the keys
		{"nonsense://a:1", "", ""},   // not a Redis URL
	} {
		if _, err := newTarget(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("newTarget(%q, %q, %q) accepted", bad[0], bad[1], bad[2])
		}
	}
}

// redis-benchmark in cluster mode prints its nodes before the CSV.
func TestParseRPS(t *testing.T) {
	out := "Cluster has 3 master nodes:\n\nMaster 0: abc 127.0.0.1:7003\n" +
		`"test","rps","avg_latency_ms"` + "\n" + `"EVALSHA x 1 k:{tag}:__rand_int__ 1","76923.08","9.7"` + "\n"
	if v, err := parseRPS(out); err != nil || v != 76923.08 {
		t.Fatalf("parseRPS = %v, %v", v, err)
	}
	if _, err := parseRPS("no csv here"); err == nil {
		t.Fatal("parseRPS of no CSV succeeded")
	}
}

// The share of the CPU other processes used is the machine's busy time
// less the run's own.
func TestBetween(t *testing.T) {
	a := cpuSample{at: time.Unix(0, 0), total: 1000, busy: 100, steal: 10, own: 50, self: 20, load1: 1}
	b := cpuSample{at: time.Unix(1, 0), total: 2000, busy: 700, steal: 30, own: 450, self: 220, load1: 2}
	u := between(a, b)
	if u.busy != 0.6 || u.foreign != 0.2 || u.steal != 0.02 || u.self != 0.2 || !u.disturbed() {
		t.Fatalf("between = %+v", u)
	}
	b.own = 650 // the run used all of it
	if u := between(a, b); u.foreign != 0 || u.disturbed() {
		t.Fatalf("between, nothing else running = %+v", u)
	}
	if m := newMeter(0); m.ok {
		if s := m.sample(); s.total == 0 || s.busy == 0 {
			t.Fatalf("a sample of this machine reads nothing: %+v", s)
		}
	}
}

// redis_rate's keys get the prefix like everyone else's.
func TestPrefixed(t *testing.T) {
	p := prefixed{prefix: "rkb:"}
	if got := p.keys([]string{"rate:a", "b"}); got[0] != "rkb:rate:a" || got[1] != "rkb:b" {
		t.Fatalf("keys = %q", got)
	}
}

// The ceiling's reference script is where the harness looks for it.
func TestSeedScript(t *testing.T) {
	if _, err := os.Stat(seedScript()); err != nil {
		t.Fatal(err)
	}
}
