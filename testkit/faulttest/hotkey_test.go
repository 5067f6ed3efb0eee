package faulttest

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/hotkey"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// hotkey.Budget across OS processes: each process is this test binary run
// again as a worker (TestHotKeyWorker), with its own Budget and rueidis
// client, as separate application servers would be, on one key of a real
// redis-server.

// The hkScenarios processes run against one key on a real redis-server.
// Each is a shared limit and the Budget in front of it.
const (
	// hkWindowLimit per hour, no refill within a test: the store's count is
	// exactly what the leases took.
	hkWindowLimit = 20000
	// hkOpenRate per second: a limit no benchmark reaches, so every decision
	// is allowed, from leases.
	hkOpenRate = 1 << 30
	// hkOverRate per second: a limit the benchmark exceeds, so most
	// decisions are local denials.
	hkOverRate = 100000
)

// hkGCRARate is the gcra scenario's rate per second, a limit the processes
// exceed many times over: 5,000, or RATEKIT_HOTKEY_RATE.
func hkGCRARate() int64 {
	if v, err := strconv.ParseInt(os.Getenv("RATEKIT_HOTKEY_RATE"), 10, 64); err == nil && v > 0 {
		return v
	}
	return 5000
}

// hkGCRABurst is the gcra scenario's burst: 20 ms of its rate.
func hkGCRABurst() int64 { return max(hkGCRARate()/50, 1) }

var hkScenarios = map[string]struct {
	limit func(store core.ScriptRunner, prefix string) (core.Limiter, error)
	cfg   hotkey.Config
}{
	"window": {
		limit: func(s core.ScriptRunner, prefix string) (core.Limiter, error) {
			return fixedwindow.New(s, fixedwindow.Config{Limit: hkWindowLimit, Window: time.Hour, Prefix: prefix})
		},
		cfg: hotkey.Config{Lease: 50, MinLease: 1, TTL: 20 * time.Millisecond},
	},
	"gcra": {
		limit: func(s core.ScriptRunner, prefix string) (core.Limiter, error) {
			return gcra.New(s, gcra.Config{Rate: hkGCRARate(), Period: time.Second, Burst: hkGCRABurst(), Prefix: prefix})
		},
		// Leases of 64, or of a millisecond of the rate when that is more.
		cfg: hotkey.Config{Lease: max(64, hkGCRARate()/1000), MinLease: 1, TTL: 50 * time.Millisecond},
	},
	"open": {
		limit: func(s core.ScriptRunner, prefix string) (core.Limiter, error) {
			return gcra.New(s, gcra.Config{Rate: hkOpenRate, Period: time.Second, Burst: 1 << 20, Prefix: prefix})
		},
		cfg: hotkey.Config{Lease: 1 << 16, MinLease: 64, TTL: 100 * time.Millisecond},
	},
	"over": {
		limit: func(s core.ScriptRunner, prefix string) (core.Limiter, error) {
			return gcra.New(s, gcra.Config{Rate: hkOverRate, Period: time.Second, Burst: 1000, Prefix: prefix})
		},
		cfg: hotkey.Config{Lease: 1000, MinLease: 16, TTL: 100 * time.Millisecond},
	},
}

// hkResult is what a child process reports.
type hkResult struct {
	Decisions, Allowed, Errors int64
	FirstError                 string
	Stats                      hotkey.Stats
	Elapsed                    time.Duration // from "go" to the last decision
}

// TestHotKeyWorker is the child process of TestHotKeyThreeProcesses and
// BenchmarkHotKeyProcesses; it does nothing unless HOTKEY_CHILD is set. It
// connects to HOTKEY_ADDR, says "ready", waits for a line on stdin, then
// decides on key "hot" from HOTKEY_GOROUTINES goroutines, for
// HOTKEY_DURATION or until HOTKEY_DECISIONS decisions, closes its Budget
// and prints its result (and writes when each allowed request was asked
// and answered to HOTKEY_EVENTS, when set).
func TestHotKeyWorker(t *testing.T) {
	if os.Getenv("HOTKEY_CHILD") == "" {
		t.Skip("the child of TestHotKeyThreeProcesses and BenchmarkHotKeyProcesses")
	}
	sc, ok := hkScenarios[os.Getenv("HOTKEY_SCENARIO")]
	if !ok {
		t.Fatalf("HOTKEY_SCENARIO=%q", os.Getenv("HOTKEY_SCENARIO"))
	}
	goroutines, _ := strconv.Atoi(os.Getenv("HOTKEY_GOROUTINES"))
	duration, _ := time.ParseDuration(os.Getenv("HOTKEY_DURATION"))
	decisions, _ := strconv.ParseInt(os.Getenv("HOTKEY_DECISIONS"), 10, 64)
	eventsPath := os.Getenv("HOTKEY_EVENTS")
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{os.Getenv("HOTKEY_ADDR")}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	store, err := rueidisstore.New(client)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := sc.limit(store, os.Getenv("HOTKEY_PREFIX"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hotkey.New(lim, sc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var decide core.Limiter = b
	if os.Getenv("HOTKEY_PLAIN") != "" {
		decide = lim // the limiter alone, for comparison
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(duration)
	var res hkResult
	var left atomic.Int64
	left.Store(decisions)
	var errMu sync.Mutex
	events := make([][]int64, goroutines)
	var wg sync.WaitGroup
	var allowed, errs, done atomic.Int64
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine, myErrs, myDone int64
			for i := 0; ; i++ {
				if decisions > 0 {
					if left.Add(-1) < 0 {
						break
					}
				} else if i%64 == 0 && time.Now().After(deadline) {
					break
				}
				var asked int64
				if eventsPath != "" {
					asked = time.Now().UnixNano()
				}
				d, err := decide.Allow(context.Background(), "hot")
				myDone++
				switch {
				case err != nil:
					myErrs++
					errMu.Lock()
					if res.FirstError == "" {
						res.FirstError = err.Error()
					}
					errMu.Unlock()
				case d.Allowed:
					mine++
					if eventsPath != "" {
						events[g] = append(events[g], asked, time.Now().UnixNano())
					}
				}
			}
			allowed.Add(mine)
			errs.Add(myErrs)
			done.Add(myDone)
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	res.Decisions, res.Allowed, res.Errors, res.Stats = done.Load(), allowed.Load(), errs.Load(), b.Stats()
	if eventsPath != "" {
		f, err := os.Create(eventsPath)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for _, ev := range events {
			if err := binary.Write(w, binary.LittleEndian, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := errors.Join(w.Flush(), f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("result " + string(out))
}

// hkRun is one run of child processes.
type hkRun struct {
	scenario   string
	plain      bool // decide with the limiter alone, without a Budget
	addr       string
	prefix     string
	processes  int
	goroutines int
	duration   time.Duration // or
	decisions  int64         // in all, split among the processes
	events     bool
}

// hkRan is what a run measured: each child's result and events, and the
// wall-clock times (Unix ns) just before the children were told to go
// and just after the last one finished.
type hkRan struct {
	results    []hkResult
	events     [][2]int64 // asked, answered, Unix ns
	start, end int64
}

// hkSpawn starts the children, waits until each is ready, and returns a
// function that starts them and collects their results.
func hkSpawn(tb testing.TB, r hkRun) func() hkRan {
	tb.Helper()
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		events string
		stderr strings.Builder
	}
	children := make([]*child, r.processes)
	dir := tb.TempDir()
	for i := range children {
		c := &child{}
		c.cmd = exec.Command(os.Args[0], "-test.run=^TestHotKeyWorker$", "-test.count=1")
		c.cmd.Env = append(os.Environ(),
			"HOTKEY_CHILD=1",
			"HOTKEY_SCENARIO="+r.scenario,
			"HOTKEY_ADDR="+r.addr,
			"HOTKEY_PREFIX="+r.prefix,
			"HOTKEY_GOROUTINES="+strconv.Itoa(r.goroutines),
			"HOTKEY_DURATION="+r.duration.String(),
		)
		if r.plain {
			c.cmd.Env = append(c.cmd.Env, "HOTKEY_PLAIN=1")
		}
		if r.decisions > 0 {
			share := r.decisions / int64(r.processes)
			if i == 0 {
				share += r.decisions % int64(r.processes)
			}
			c.cmd.Env = append(c.cmd.Env, "HOTKEY_DECISIONS="+strconv.FormatInt(max(share, 1), 10))
		}
		if r.events {
			c.events = fmt.Sprintf("%s/events-%d", dir, i)
			c.cmd.Env = append(c.cmd.Env, "HOTKEY_EVENTS="+c.events)
		}
		c.cmd.Stderr = &c.stderr
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			tb.Fatal(err)
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			tb.Fatal(err)
		}
		c.stdout = bufio.NewReader(out)
		if err := c.cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() })
		children[i] = c
	}
	var output strings.Builder
	readUntil := func(c *child, prefix string) string {
		for {
			line, err := c.stdout.ReadString('\n')
			if err != nil {
				_ = c.cmd.Wait()
				tb.Fatalf("child %d ended before %q: %v\nstdout:\n%s\nstderr:\n%s", c.cmd.Process.Pid, prefix, err, output.String()+line, c.stderr.String())
			}
			if strings.HasPrefix(line, prefix) {
				return strings.TrimSpace(strings.TrimPrefix(line, prefix))
			}
			output.WriteString(line)
		}
	}
	for _, c := range children {
		readUntil(c, "ready")
	}
	return func() hkRan {
		var out hkRan
		out.start = time.Now().UnixNano()
		for _, c := range children {
			if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
				tb.Fatal(err)
			}
		}
		for _, c := range children {
			var res hkResult
			if err := json.Unmarshal([]byte(readUntil(c, "result ")), &res); err != nil {
				tb.Fatal(err)
			}
			out.results = append(out.results, res)
		}
		out.end = time.Now().UnixNano()
		for _, c := range children {
			if err := c.cmd.Wait(); err != nil {
				tb.Fatalf("child: %v\n%s", err, c.stderr.String())
			}
			if c.events == "" {
				continue
			}
			raw, err := os.ReadFile(c.events)
			if err != nil {
				tb.Fatal(err)
			}
			for i := 0; i+16 <= len(raw); i += 16 {
				out.events = append(out.events, [2]int64{
					int64(binary.LittleEndian.Uint64(raw[i:])),
					int64(binary.LittleEndian.Uint64(raw[i+8:])),
				})
			}
		}
		return out
	}
}

// total sums the children's results.
func (r hkRan) total() (sum hkResult) {
	for _, c := range r.results {
		sum.Decisions += c.Decisions
		sum.Allowed += c.Allowed
		sum.Errors += c.Errors
		sum.Stats.Leases += c.Stats.Leases
		sum.Stats.Granted += c.Stats.Granted
		sum.Stats.Refunded += c.Stats.Refunded
		sum.Stats.Lost += c.Stats.Lost
		sum.Stats.Held += c.Stats.Held
		sum.Stats.Direct += c.Stats.Direct
		sum.Elapsed = max(sum.Elapsed, c.Elapsed)
		if sum.FirstError == "" {
			sum.FirstError = c.FirstError
		}
	}
	return sum
}

// hkLoadavg is /proc/loadavg's first three fields, for the log.
func hkLoadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// hkGoroutines is GOMAXPROCS, or RATEKIT_HOTKEY_GOROUTINES. Each
// goroutine decides in a closed loop and never blocks while its lease
// lasts: with more of them than cores, a lease call's reply waits for the
// Go scheduler to preempt one (up to 10 ms), which starves the leases.
func hkGoroutines() int {
	if v, err := strconv.Atoi(os.Getenv("RATEKIT_HOTKEY_GOROUTINES")); err == nil && v > 0 {
		return v
	}
	return runtime.GOMAXPROCS(0)
}

// TestHotKeyThreeProcesses: three OS processes, each with its own Budget
// and client, decide one key on a real redis-server as fast as they can.
//
// window: a limit of 20,000 per hour that the processes exhaust. No
// process allows more than its leases took, and the store's count is
// exactly the units allowed plus the units lost (Close gave the rest
// back), so in total at most the limit is allowed.
//
// gcra: 5,000 per second (RATEKIT_HOTKEY_RATE) in bursts of 20 ms of it
// (100), for 2 s. In total, at most Burst + Rate x (the run's length) is
// allowed; and in every window of length L (100 ms, 500 ms) at most Burst
// + Rate x (L + TTL) + 3 x Lease, the package doc's bound, counting only
// requests asked and answered within the window (a request answered later
// may have been allowed in the window or after it).
func TestHotKeyThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: spawns processes")
	}
	srv := redistest.Start(t)
	const processes = 3

	t.Run("window", func(t *testing.T) {
		prefix := fmt.Sprintf("hk:w:%d:", time.Now().UnixNano())
		got := hkSpawn(t, hkRun{scenario: "window", addr: srv.Addr, prefix: prefix, processes: processes, goroutines: hkGoroutines(), duration: 1500 * time.Millisecond})()
		sum := got.total()
		if sum.Errors != 0 {
			t.Fatalf("%d errors, first: %s", sum.Errors, sum.FirstError)
		}
		st := sum.Stats
		t.Logf("load %s: %d decisions, %d allowed of a limit of %d; %d leases took %d units, %d lost, %d given back by Close, %d decided by the store",
			hkLoadavg(), sum.Decisions, sum.Allowed, hkWindowLimit, st.Leases, st.Granted, st.Lost, st.Refunded, st.Direct)
		if sum.Allowed > hkWindowLimit {
			t.Errorf("%d allowed, more than the limit of %d", sum.Allowed, hkWindowLimit)
		}
		for i, r := range got.results {
			s := r.Stats
			if units := s.Granted - s.Refunded - s.Lost - s.Held + s.Direct; units != r.Allowed || s.Held != 0 {
				t.Errorf("process %d allowed %d, its Stats %+v account for %d", i, r.Allowed, s, units)
			}
		}
		counted := hkStoreCount(t, srv.Addr, prefix)
		if want := st.Granted - st.Refunded + st.Direct; counted != want {
			t.Errorf("the store counts %d, the processes took %d (leases %d - given back %d + direct %d)", counted, want, st.Granted, st.Refunded, st.Direct)
		}
		if counted != sum.Allowed+st.Lost {
			t.Errorf("the store counts %d: not the %d allowed plus the %d lost", counted, sum.Allowed, st.Lost)
		}
		if sum.Allowed == 0 {
			t.Error("nothing was allowed")
		}
	})

	t.Run("gcra", func(t *testing.T) {
		sc := hkScenarios["gcra"]
		ttl, lease := sc.cfg.TTL, sc.cfg.Lease
		prefix := fmt.Sprintf("hk:g:%d:", time.Now().UnixNano())
		got := hkSpawn(t, hkRun{scenario: "gcra", addr: srv.Addr, prefix: prefix, processes: processes, goroutines: hkGoroutines(), duration: 2 * time.Second, events: true})()
		sum := got.total()
		if sum.Errors != 0 {
			t.Fatalf("%d errors, first: %s", sum.Errors, sum.FirstError)
		}
		if int64(len(got.events)) != sum.Allowed {
			t.Fatalf("%d events for %d allowed", len(got.events), sum.Allowed)
		}
		for i, r := range got.results {
			s := r.Stats
			if units := s.Granted - s.Refunded - s.Lost - s.Held + s.Direct; units != r.Allowed {
				t.Errorf("process %d allowed %d, its Stats %+v account for %d", i, r.Allowed, s, units)
			}
		}
		// B(L) = Burst + Rate x L, in units x 1e9 to stay in integers.
		most := func(l time.Duration) int64 { return hkGCRABurst()*1e9 + hkGCRARate()*int64(l) }
		length := time.Duration(got.end - got.start)
		if sum.Allowed*1e9 > most(length) {
			t.Errorf("%d allowed in %v: more than Burst + Rate x %v = %.0f", sum.Allowed, length, length, float64(most(length))/1e9)
		}
		st := sum.Stats
		t.Logf("load %s: %d decisions in %v, %d allowed (the limit allows %.0f); %d leases took %d units, %d lost, %d given back by Close",
			hkLoadavg(), sum.Decisions, length.Round(time.Millisecond), sum.Allowed, float64(most(length))/1e9, st.Leases, st.Granted, st.Lost, st.Refunded)

		slices.SortFunc(got.events, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		for _, l := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond} {
			bound := most(l+ttl) + processes*lease*1e9
			var worst, worstAt int64
			for a := got.start; a+int64(l) <= got.end; a += int64(5 * time.Millisecond) {
				var n int64
				i, _ := slices.BinarySearchFunc(got.events, a, func(e [2]int64, a int64) int { return int(e[0] - a) })
				for _, e := range got.events[i:] {
					if e[0] > a+int64(l) {
						break
					}
					if e[1] <= a+int64(l) {
						n++
					}
				}
				if n > worst {
					worst, worstAt = n, a
				}
				if n*1e9 > bound {
					t.Errorf("%d allowed in the %v from %v: more than B(L + TTL) + 3 x Lease = %.0f", n, l, time.Duration(a-got.start), float64(bound)/1e9)
					break
				}
			}
			t.Logf("windows of %v: at most %d allowed (from +%v); the limit's own B(L) is %.0f, overshoot %+.0f, bound B(L + TTL) + 3 x Lease = %.0f (overshoot at most %.0f)",
				l, worst, time.Duration(worstAt-got.start), float64(most(l))/1e9, float64(worst*1e9-most(l))/1e9, float64(bound)/1e9, float64(bound-most(l))/1e9)
		}
	})
}

// hkStoreCount reads the fixed window's count at key "hot" under prefix.
func hkStoreCount(t *testing.T, addr, prefix string) int64 {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	store, err := rueidisstore.New(client)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := fixedwindow.New(store, fixedwindow.Config{Limit: hkWindowLimit, Window: time.Hour, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	d, err := lim.Peek(context.Background(), "hot")
	if err != nil {
		t.Fatal(err)
	}
	return d.Limit - d.Remaining
}

// BenchmarkHotKeyProcesses: one key shared by 1 and 3 OS processes (each
// with its own rueidis client) on a real redis-server, b.N decisions in
// all. "open" is a limit no run reaches (every decision allowed, from
// leases), "over" one the processes exceed (100,000/s: most decisions are
// local denials), each through a Budget from GOMAXPROCS goroutines per
// process (RATEKIT_HOTKEY_GOROUTINES); "plain" is the open limit without
// a Budget, from 64 goroutines per process: a round trip per decision.
// decisions/s is the total over all processes, from the moment they are
// told to go until the last one is done; processes start before the
// timer.
//
//	cd testkit/faulttest && go test -run '^$' -bench HotKey -benchtime 2s
func BenchmarkHotKeyProcesses(b *testing.B) {
	srv := redistest.Start(b)
	for _, bc := range []struct {
		scenario string
		plain    bool
	}{{"open", false}, {"over", false}, {"open", true}} {
		for _, processes := range []int{1, 3} {
			name := bc.scenario
			if bc.plain {
				name = "plain"
			}
			goroutines := hkGoroutines()
			if bc.plain {
				goroutines = 64
			}
			b.Run(fmt.Sprintf("%s/processes=%d", name, processes), func(b *testing.B) {
				b.StopTimer()
				start := hkSpawn(b, hkRun{
					scenario:   bc.scenario,
					plain:      bc.plain,
					addr:       srv.Addr,
					prefix:     fmt.Sprintf("hk:b:%d:", time.Now().UnixNano()),
					processes:  processes,
					goroutines: goroutines,
					decisions:  int64(b.N),
				})
				b.StartTimer()
				got := start()
				b.StopTimer()
				sum := got.total()
				if sum.Errors != 0 {
					b.Fatalf("%d errors, first: %s", sum.Errors, sum.FirstError)
				}
				elapsed := time.Duration(got.end - got.start)
				b.ReportMetric(float64(sum.Decisions)/elapsed.Seconds(), "decisions/s")
				b.ReportMetric(float64(sum.Allowed)/float64(max(sum.Decisions, 1)), "allowed/op")
				b.ReportMetric(float64(sum.Stats.Leases)/float64(max(sum.Decisions, 1))*1e6, "leases/Mop")
			})
		}
	}
}
