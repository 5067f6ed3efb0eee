package hotkey_test

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
)

// The scenarios processes run against one key on a real redis-server.
// Each is a shared limit and the Budget in front of it.
const (
	// windowLimit per hour, no refill within a test: the store's count is
	// exactly what the leases took.
	windowLimit = 20000
	// openRate per second: a limit no benchmark reaches, so every decision
	// is allowed, from leases.
	openRate = 1 << 30
	// overRate per second: a limit the benchmark exceeds, so most
	// decisions are local denials.
	overRate = 100000
)

// gcraRate is the gcra scenario's rate per second, a limit the processes
// exceed many times over: 5,000, or RATEKIT_HOTKEY_RATE.
func gcraRate() int64 {
	if v, err := strconv.ParseInt(os.Getenv("RATEKIT_HOTKEY_RATE"), 10, 64); err == nil && v > 0 {
		return v
	}
	return 5000
}

// gcraBurst is the gcra scenario's burst: 20 ms of its rate.
func gcraBurst() int64 { return max(gcraRate()/50, 1) }

var scenarios = map[string]struct {
	limit func(store core.ScriptRunner, prefix string) (core.Limiter, error)
	cfg   hotkey.Config
}{
	"window": {
		limit: func(s core.ScriptRunner, prefix string) (core.Limiter, error) {
			return fixedwindow.New(s, fixedwindow.Config{Limit: windowLimit, Window: time.Hour, Prefix: prefix})
		},
		cfg: hotkey.Config{Lease: 50, MinLease: 1, TTL: 20 * time.Millisecond},
	},
	"gcra": {
		limit: func(s core.ScriptRunner, prefix string) (core.Limiter, error) {
			return gcra.New(s, gcra.Config{Rate: gcraRate(), Period: time.Second, Burst: gcraBurst(), Prefix: prefix})
		},
		// Leases of 64, or of a millisecond of the rate when that is more.
		cfg: hotkey.Config{Lease: max(64, gcraRate()/1000), MinLease: 1, TTL: 50 * time.Millisecond},
	},
	"open": {
		limit: func(s core.ScriptRunner, prefix string) (core.Limiter, error) {
			return gcra.New(s, gcra.Config{Rate: openRate, Period: time.Second, Burst: 1 << 20, Prefix: prefix})
		},
		cfg: hotkey.Config{Lease: 1 << 16, MinLease: 64, TTL: 100 * time.Millisecond},
	},
	"over": {
		limit: func(s core.ScriptRunner, prefix string) (core.Limiter, error) {
			return gcra.New(s, gcra.Config{Rate: overRate, Period: time.Second, Burst: 1000, Prefix: prefix})
		},
		cfg: hotkey.Config{Lease: 1000, MinLease: 16, TTL: 100 * time.Millisecond},
	},
}

// childResult is what a child process reports.
type childResult struct {
	Decisions, Allowed, Errors int64
	FirstError                 string
	Stats                      hotkey.Stats
	Elapsed                    time.Duration // from "go" to the last decision
}

// TestProcessChild is the child process of TestThreeProcesses and
// BenchmarkProcesses; it does nothing unless HOTKEY_CHILD is set. It
// connects to HOTKEY_ADDR, says "ready", waits for a line on stdin, then
// decides on key "hot" from HOTKEY_GOROUTINES goroutines, for
// HOTKEY_DURATION or until HOTKEY_DECISIONS decisions, closes its Budget
// and prints its result (and writes when each allowed request was asked
// and answered to HOTKEY_EVENTS, when set).
func TestProcessChild(t *testing.T) {
	if os.Getenv("HOTKEY_CHILD") == "" {
		t.Skip("the child of TestThreeProcesses and BenchmarkProcesses")
	}
	sc, ok := scenarios[os.Getenv("HOTKEY_SCENARIO")]
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
	lim, err := sc.limit(rueidisstore.New(client), os.Getenv("HOTKEY_PREFIX"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hotkey.New(lim, sc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(duration)
	var res childResult
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
				d, err := b.Allow(context.Background(), "hot")
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

// run is one run of child processes.
type run struct {
	scenario   string
	addr       string
	prefix     string
	processes  int
	goroutines int
	duration   time.Duration // or
	decisions  int64         // in all, split among the processes
	events     bool
}

// ran is what a run measured: each child's result and events, and the
// wall-clock times (Unix ns) just before the children were told to go
// and just after the last one finished.
type ran struct {
	results    []childResult
	events     [][2]int64 // asked, answered, Unix ns
	start, end int64
}

// spawn starts the children, waits until each is ready, and returns a
// function that starts them and collects their results.
func spawn(tb testing.TB, r run) func() ran {
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
		c.cmd = exec.Command(os.Args[0], "-test.run=^TestProcessChild$", "-test.count=1")
		c.cmd.Env = append(os.Environ(),
			"HOTKEY_CHILD=1",
			"HOTKEY_SCENARIO="+r.scenario,
			"HOTKEY_ADDR="+r.addr,
			"HOTKEY_PREFIX="+r.prefix,
			"HOTKEY_GOROUTINES="+strconv.Itoa(r.goroutines),
			"HOTKEY_DURATION="+r.duration.String(),
		)
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
	return func() ran {
		var out ran
		out.start = time.Now().UnixNano()
		for _, c := range children {
			if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
				tb.Fatal(err)
			}
		}
		for _, c := range children {
			var res childResult
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
func (r ran) total() (sum childResult) {
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

// loadavg is /proc/loadavg's first three fields, for the log.
func loadavg() string {
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

// goroutinesPerProcess is GOMAXPROCS, or RATEKIT_HOTKEY_GOROUTINES. Each
// goroutine decides in a closed loop and never blocks while its lease
// lasts: with more of them than cores, a lease call's reply waits for the
// Go scheduler to preempt one (up to 10 ms), which starves the leases.
func goroutinesPerProcess() int {
	if v, err := strconv.Atoi(os.Getenv("RATEKIT_HOTKEY_GOROUTINES")); err == nil && v > 0 {
		return v
	}
	return runtime.GOMAXPROCS(0)
}
