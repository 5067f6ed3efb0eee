package faulttest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// The concurrency limiter across OS processes: each process is this test
// binary run again as a worker (TestConcurrencyWorker), with one client of
// its own, as separate application servers would be.

const (
	ccLimit      = 8
	ccMaxCost    = 3
	ccGoroutines = 64
	ccKey        = "hot"
)

// ccLeasesPerGoroutine is how many leases each worker goroutine takes and
// gives back: 10, or RATEKIT_CC_LEASES.
func ccLeasesPerGoroutine(t *testing.T) int {
	if v := os.Getenv("RATEKIT_CC_LEASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("RATEKIT_CC_LEASES=%q: want a positive integer", v)
		}
		return n
	}
	return 10
}

// The checker lives on the server: a worker adds its lease's cost to a
// counter once it holds the lease, and takes it off before releasing it,
// and the counter's high-water mark is kept by the same script that adds.
// The counter therefore counts the cost of the workers inside their
// critical sections, each of which lies within its lease, so a high-water
// mark above Limit means the limiter let more than Limit in at once; and
// it is exact, whatever the clients, processes and schedules: every
// change is one atomic script on the one server.
var (
	ccEnter = core.NewScript("cc-enter", `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if v > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], v) end
return {v}`, nil, false)
	ccLeave = core.NewScript("cc-leave", `return {redis.call('DECRBY', KEYS[1], ARGV[1])}`, nil, false)
	ccReady = core.NewScript("cc-ready", `return {redis.call('INCRBY', KEYS[1], ARGV[1])}`, nil, false)
)

// ccCheckKeys are the checker's counter and high-water mark, in the user
// key's slot.
func ccCheckKeys(prefix string) []string {
	return []string{keyspace.Key(prefix+"check:", ccKey, ":in"), keyspace.Key(prefix+"check:", ccKey, ":max")}
}

// ccStats is what one worker process reports.
type ccStats struct {
	Client   string `json:"client"`
	Acquired int64  `json:"acquired"`
	Denied   int64  `json:"denied"`
	Extended int64  `json:"extended"`
	Over     int64  `json:"over"` // times the counter read above the limit
	MaxSeen  int64  `json:"max_seen"`
}

// ccWork runs goroutines that each take perG leases of random cost on
// ccKey, hold them through the checker's critical section, and give them
// back; a denial backs off a few milliseconds and tries again.
func ccWork(t *testing.T, lim *concurrency.Limiter, runner core.ScriptRunner, prefix string, goroutines, perG int) ccStats {
	ctx := context.Background()
	check := ccCheckKeys(prefix)
	var st ccStats
	var acquired, denied, extended, over, maxSeen, errs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			for done := 0; done < perG; {
				n := 1 + rng.Int64N(ccMaxCost)
				lease, d, err := lim.AcquireN(ctx, ccKey, n)
				if err != nil {
					fail(err)
					return
				}
				if !d.Allowed {
					denied.Add(1)
					time.Sleep(time.Duration(5+rng.IntN(16)) * time.Millisecond)
					continue
				}
				acquired.Add(1)
				r, err := runner.RunScript(ctx, ccEnter, check, []int64{n}, nil)
				if err != nil {
					fail(err)
					return
				}
				if r[0] > ccLimit {
					over.Add(1)
				}
				for m := maxSeen.Load(); r[0] > m && !maxSeen.CompareAndSwap(m, r[0]); m = maxSeen.Load() {
				}
				time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
				if rng.IntN(8) == 0 {
					if ok, err := lim.Extend(ctx, lease); err != nil || !ok {
						fail(fmt.Errorf("Extend of a held lease: %v, %v", ok, err))
						return
					}
					extended.Add(1)
				}
				if _, err := runner.RunScript(ctx, ccLeave, check[:1], []int64{n}, nil); err != nil {
					fail(err)
					return
				}
				if ok, err := lim.Release(ctx, lease); err != nil || !ok {
					fail(fmt.Errorf("Release of a held lease: %v, %v", ok, err))
					return
				}
				done++
			}
		}()
	}
	wg.Wait()
	if errs.Load() != 0 {
		t.Fatalf("%d errors, first: %v", errs.Load(), firstErr.Load())
	}
	st.Acquired, st.Denied, st.Extended, st.Over, st.MaxSeen = acquired.Load(), denied.Load(), extended.Load(), over.Load(), maxSeen.Load()
	return st
}

func ccAdapter(t *testing.T, name string) adapter {
	i := slices.IndexFunc(adapters, func(a adapter) bool { return a.name == name })
	if i < 0 {
		t.Fatalf("no adapter %q", name)
	}
	return adapters[i]
}

// ccLimiter is the limiter every process builds: on the server's clock,
// with a TTL far beyond any critical section, so that no lease expires
// while it is held and only the limiter decides who is in.
func ccLimiter(t *testing.T, runner core.ScriptRunner, prefix string, limit int64) *concurrency.Limiter {
	lim, err := concurrency.New(runner, concurrency.Config{Limit: limit, TTL: 5 * time.Minute, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// TestConcurrencyWorker is one worker process of TestConcurrencyContention.
func TestConcurrencyWorker(t *testing.T) {
	client := os.Getenv("RATEKIT_CC_WORKER")
	if client == "" {
		t.Skip("run by TestConcurrencyContention")
	}
	addr, prefix := os.Getenv("RATEKIT_CC_ADDR"), os.Getenv("RATEKIT_CC_PREFIX")
	processes, _ := strconv.ParseInt(os.Getenv("RATEKIT_CC_PROCESSES"), 10, 64)
	runner := ccAdapter(t, client).open(t, addr)
	lim := ccLimiter(t, runner, prefix, ccLimit)
	// Start together: each process counts itself in and waits for all.
	ready := []string{keyspace.Key(prefix+"check:", ccKey, ":ready")}
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for n := int64(1); ; n = 0 {
		r, err := runner.RunScript(ctx, ccReady, ready, []int64{n}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r[0] >= processes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d processes ready", r[0], processes)
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := ccWork(t, lim, runner, prefix, ccGoroutines, ccLeasesPerGoroutine(t))
	st.Client = client
	out, _ := json.Marshal(st)
	fmt.Printf("CCSTATS %s\n", out)
}

// ccSpawn starts this test binary as a worker process running test, with
// env added; it is killed if the test process dies.
func ccSpawn(t *testing.T, test string, env ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, bufio.NewScanner(stdout), &stderr
}

// TestConcurrencyContention: three OS processes, each with its own client
// (go-redis, rueidis, redigo) and 64 goroutines, take leases of cost 1 to
// 3 on one key with a Limit of 8 on a real redis-server, and hold each
// through a critical section counted on the server. The cost inside
// critical sections never exceeds the Limit (and comes close to it, so the
// key was contended), and when the processes are done the key is empty
// and the counter zero.
func TestConcurrencyContention(t *testing.T) {
	srv := redistest.Start(t)
	clients := []string{"goredis", "rueidis", "redigo"}
	prefix := fmt.Sprintf("cc:%d:", time.Now().UnixNano())
	type proc struct {
		cmd    *exec.Cmd
		out    *bufio.Scanner
		stderr *strings.Builder
		stats  ccStats
		lines  []string
	}
	procs := make([]*proc, len(clients))
	for i, c := range clients {
		cmd, out, stderr := ccSpawn(t, "TestConcurrencyWorker",
			"RATEKIT_CC_WORKER="+c, "RATEKIT_CC_ADDR="+srv.Addr, "RATEKIT_CC_PREFIX="+prefix,
			"RATEKIT_CC_PROCESSES="+strconv.Itoa(len(clients)))
		procs[i] = &proc{cmd: cmd, out: out, stderr: stderr}
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.out.Scan() {
				line := p.out.Text()
				p.lines = append(p.lines, line)
				if s, ok := strings.CutPrefix(line, "CCSTATS "); ok {
					_ = json.Unmarshal([]byte(s), &p.stats)
				}
			}
		}()
	}
	wg.Wait()
	var total ccStats
	for i, p := range procs {
		if err := p.cmd.Wait(); err != nil || p.stats.Client != clients[i] {
			t.Fatalf("worker %s: %v, stats %+v\n%s\n%s", clients[i], err, p.stats, strings.Join(p.lines, "\n"), p.stderr)
		}
		t.Logf("RELIABILITY concurrency worker %s: %+v", clients[i], p.stats)
		total.Acquired += p.stats.Acquired
		total.Denied += p.stats.Denied
		total.Over += p.stats.Over
		total.MaxSeen = max(total.MaxSeen, p.stats.MaxSeen)
	}

	check := ccCheckKeys(prefix)
	high, err := redistest.Command(srv.Addr, "GET", check[1])
	if err != nil {
		t.Fatal(err)
	}
	in, err := redistest.Command(srv.Addr, "GET", check[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("RELIABILITY concurrency contention: 3 processes x %d goroutines, Limit %d, costs 1..%d: %d leases, %d denials; most cost in critical sections at once: %s",
		ccGoroutines, ccLimit, ccMaxCost, total.Acquired, total.Denied, high)
	hw, _ := strconv.ParseInt(high, 10, 64)
	switch {
	case hw > ccLimit || total.Over > 0:
		t.Fatalf("the cost in critical sections reached %d (read above the limit %d times), Limit %d", hw, total.Over, ccLimit)
	case hw <= ccLimit-ccMaxCost:
		t.Fatalf("the cost in critical sections never passed %d: the key was not contended enough to show anything", hw)
	case in != "0":
		t.Fatalf("the counter ends at %s, want 0", in)
	case total.Acquired != int64(len(clients)*ccGoroutines*ccLeasesPerGoroutine(t)) || total.Denied == 0:
		t.Fatalf("%d leases and %d denials", total.Acquired, total.Denied)
	}
	// Drained: nothing in flight, and no key left behind.
	lim := ccLimiter(t, ccAdapter(t, "goredis").open(t, srv.Addr), prefix, ccLimit)
	if d, err := lim.Peek(context.Background(), ccKey); err != nil || d.Remaining != ccLimit {
		t.Fatalf("Peek after the workers: %+v, %v", d, err)
	}
	if n, err := redistest.Command(srv.Addr, "EXISTS", keyspace.Key(prefix, ccKey, "")); err != nil || n != "0" {
		t.Fatalf("EXISTS on the leases' key after the workers: %s, %v", n, err)
	}
}

// The checker sees a limiter that lets in more than it should: the same
// work, in process, under a limiter of twice the Limit, reads the counter
// above the Limit.
func TestConcurrencyCheckerCatchesOverAdmission(t *testing.T) {
	srv := redistest.Start(t)
	prefix := fmt.Sprintf("ccneg:%d:", time.Now().UnixNano())
	runner := ccAdapter(t, "rueidis").open(t, srv.Addr)
	st := ccWork(t, ccLimiter(t, runner, prefix, 2*ccLimit), runner, prefix, ccGoroutines, 5)
	high, err := redistest.Command(srv.Addr, "GET", ccCheckKeys(prefix)[1])
	if err != nil {
		t.Fatal(err)
	}
	if hw, _ := strconv.ParseInt(high, 10, 64); hw <= ccLimit || st.Over == 0 {
		t.Fatalf("with twice the Limit the counter peaked at %s (%+v): the checker cannot see over-admission", high, st)
	}
}

// TestConcurrencyHolderKilled: a process (valkey-go) takes every slot of a
// key and is killed with SIGKILL. Its slots stay taken until the leases'
// TTL has passed on the server's clock, and come back after it, with the
// key gone from Redis by itself. Every check compares with readings of
// the server's TIME taken around the calls, so none depends on how fast
// the machine is: a reading before the earliest expiry must find the key
// full, and one after the latest must find it free.
func TestConcurrencyHolderKilled(t *testing.T) {
	const (
		limit = 3
		// ttl leaves the test seconds to make its first check before the
		// leases expire, on a machine however busy.
		ttl = 5 * time.Second
	)
	srv := redistest.Start(t)
	prefix := fmt.Sprintf("cckill:%d:", time.Now().UnixNano())
	cmd, out, stderr := ccSpawn(t, "TestConcurrencyHolder",
		"RATEKIT_CC_HOLDER=1", "RATEKIT_CC_ADDR="+srv.Addr, "RATEKIT_CC_PREFIX="+prefix,
		"RATEKIT_CC_LIMIT="+strconv.Itoa(limit), "RATEKIT_CC_TTL="+ttl.String())
	var lo, hi int64
	for out.Scan() {
		if _, err := fmt.Sscanf(out.Text(), "HELD %d %d", &lo, &hi); err == nil {
			break
		}
	}
	if lo == 0 {
		cmd.Wait()
		t.Fatalf("the holder never held its leases: %s", stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the holder ended with %v, not killed", err)
	}

	runner := ccAdapter(t, "goredis").open(t, srv.Addr)
	lim, err := concurrency.New(runner, concurrency.Config{Limit: limit, TTL: ttl, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	serverNow := func() int64 {
		s, err := redistest.Command(srv.Addr, "EVAL", "local t = redis.call('TIME') return t[1] * 1000000 + t[2]", "0")
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	earliest, latest := lo+ttl.Microseconds(), hi+ttl.Microseconds()
	leaseKey := keyspace.Key(prefix, ccKey, "")
	// gone is a reading after which the key must have left Redis: every
	// PEXPIRE was set at most a millisecond (rounding up) past the last
	// expiry, and nothing released the holder's leases.
	gone := latest + 2000
	var held, freed, absent int
	deadline := time.Now().Add(time.Minute)
	for freed == 0 || absent == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the slots did not come back within a minute (%d checks while held, %d after)", held, freed)
		}
		before := serverNow()
		exists, err := redistest.Command(srv.Addr, "EXISTS", leaseKey)
		if err != nil {
			t.Fatal(err)
		}
		if before >= gone {
			// Nobody has written since the holder (the checks below
			// release what they take, which leaves no lease), so the key
			// expired by itself.
			if exists != "0" {
				t.Fatalf("the key still exists at %d, after every lease expired (by %d)", before, latest)
			}
			absent++
		}
		lease, d, err := lim.Acquire(ctx, ccKey)
		after := serverNow()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case after < earliest:
			// Surely still held: nothing comes back before the TTL.
			if d.Allowed || d.Remaining != 0 || d.RetryAfter > time.Duration(latest-before)*time.Microsecond {
				t.Fatalf("acquire between %d and %d, before the killed holder's leases expire (%d to %d): %+v", before, after, earliest, latest, d)
			}
			held++
		case before >= latest:
			// Surely expired: every slot is back.
			if !d.Allowed || d.Remaining != limit-1 {
				t.Fatalf("acquire between %d and %d, after the killed holder's leases expired (%d to %d): %+v", before, after, earliest, latest, d)
			}
			freed++
		}
		if d.Allowed {
			if ok, err := lim.Release(ctx, lease); !ok || err != nil {
				t.Fatalf("Release: %v, %v", ok, err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if held == 0 {
		t.Fatalf("no check fell before the leases' expiry: the machine took over %v from the holder's acquire to the first check", ttl)
	}
	t.Logf("RELIABILITY concurrency holder killed: %d acquires refused while its leases lived (TTL %v), every slot back after, the key gone by itself", held, ttl)
}

// TestConcurrencyHolder is the process TestConcurrencyHolderKilled kills:
// it takes every slot of the key and waits.
func TestConcurrencyHolder(t *testing.T) {
	if os.Getenv("RATEKIT_CC_HOLDER") == "" {
		t.Skip("run by TestConcurrencyHolderKilled")
	}
	addr, prefix := os.Getenv("RATEKIT_CC_ADDR"), os.Getenv("RATEKIT_CC_PREFIX")
	limit, _ := strconv.ParseInt(os.Getenv("RATEKIT_CC_LIMIT"), 10, 64)
	ttl, _ := time.ParseDuration(os.Getenv("RATEKIT_CC_TTL"))
	runner := ccAdapter(t, "valkey").open(t, addr)
	lim, err := concurrency.New(runner, concurrency.Config{Limit: limit, TTL: ttl, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := func() int64 {
		r, err := runner.RunScript(ctx, ccTime, []string{"t"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r[0]
	}
	lo := now()
	for i := int64(0); i < limit; i++ {
		if _, d, err := lim.Acquire(ctx, ccKey); err != nil || !d.Allowed {
			t.Fatalf("Acquire %d: %+v, %v", i, d, err)
		}
	}
	hi := now()
	fmt.Printf("HELD %d %d\n", lo, hi)
	time.Sleep(10 * time.Minute) // until killed
}

var ccTime = core.NewScript("cc-time", `local t = redis.call('TIME') return {tonumber(t[1]) * 1000000 + tonumber(t[2])}`, nil, true)
