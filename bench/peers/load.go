package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The machine is shared: another process that takes CPU while the harness
// measures changes every figure (the committed results once read a server
// ceiling of 44-58k/s where redis-benchmark by hand on a quiet machine
// gives 115-165k/s). The harness therefore samples the kernel's CPU
// counters before, during and after the run, and tells apart the CPU it
// uses itself (the harness, its redis-server, its redis-benchmark runs)
// from the CPU of everything else ("foreign") and the CPU the hypervisor
// took (steal).

// cpuSample is the machine's and the run's CPU counters at one moment,
// in clock ticks over all CPUs.
type cpuSample struct {
	at                 time.Time
	total, busy, steal uint64 // /proc/stat, every CPU
	own                uint64 // the harness, its finished children, its redis-server
	self               uint64 // the harness process alone
	load1              float64
}

// usage is what happened between two samples, as fractions of the
// machine's capacity (all CPUs).
type usage struct {
	elapsed        time.Duration
	busy, foreign  float64
	steal          float64
	self           float64 // the harness process alone
	load1At, load1 float64 // load average at the start and end
}

// Thresholds beyond which a measurement is marked disturbed.
const (
	maxForeign = 0.10 // of the machine's CPU, used by other processes
	maxSteal   = 0.05 // of the machine's CPU, taken by the hypervisor
)

func (u usage) disturbed() bool { return u.foreign > maxForeign || u.steal > maxSteal }

func (u usage) String() string {
	return fmt.Sprintf("other processes %.0f%% of the CPU, steal %.1f%%, load average %.2f -> %.2f", 100*u.foreign, 100*u.steal, u.load1At, u.load1)
}

// meter samples CPU counters; redisPID is the harness's own redis-server
// (0 when the server is the user's).
type meter struct {
	redisPID int
	ok       bool // /proc is readable
}

func newMeter(redisPID int) *meter {
	_, err := os.Stat("/proc/stat")
	return &meter{redisPID: redisPID, ok: err == nil}
}

func (m *meter) sample() cpuSample {
	s := cpuSample{at: time.Now()}
	if !m.ok {
		return s
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal guest guest_nice
		var v [8]uint64
		for i := range v {
			if i+1 < len(f) {
				v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
			}
		}
		for _, x := range v {
			s.total += x
		}
		s.busy = s.total - v[3] - v[4]
		s.steal = v[7]
	}
	utime, stime, cutime, cstime := procTimes("self")
	s.self = utime + stime
	s.own = s.self + cutime + cstime
	if m.redisPID > 0 {
		u, st, _, _ := procTimes(strconv.Itoa(m.redisPID))
		s.own += u + st
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			s.load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return s
}

// procTimes reads utime, stime, cutime and cstime of /proc/<pid>/stat.
func procTimes(pid string) (utime, stime, cutime, cstime uint64) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return
	}
	// f[0] is field 3 (state); utime is field 14.
	p := func(i int) uint64 { v, _ := strconv.ParseUint(f[i-3], 10, 64); return v }
	return p(14), p(15), p(16), p(17)
}

// between returns the usage from a to b.
func between(a, b cpuSample) usage {
	u := usage{elapsed: b.at.Sub(a.at), load1At: a.load1, load1: b.load1}
	total := float64(b.total - a.total)
	if total <= 0 {
		return u
	}
	busy := float64(b.busy - a.busy)
	own := float64(b.own - a.own)
	u.busy = busy / total
	u.foreign = max(0, busy-own) / total
	u.steal = float64(b.steal-a.steal) / total
	u.self = float64(b.self-a.self) / total
	return u
}

// idle measures the machine for d while the harness does nothing.
func (m *meter) idle(ctx context.Context, d time.Duration) usage {
	a := m.sample()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	return between(a, m.sample())
}

// waitQuiet waits, up to limit, for a window of 5 s in which other
// processes use less than maxForeign of the CPU, and returns the last
// window's usage.
func (m *meter) waitQuiet(ctx context.Context, limit time.Duration, logf func(string, ...any)) usage {
	deadline := time.Now().Add(limit)
	for {
		u := m.idle(ctx, 5*time.Second)
		if !u.disturbed() || time.Now().After(deadline) || ctx.Err() != nil {
			return u
		}
		logf("waiting for a quiet machine: %v", u)
	}
}

// conditions are a run's: the machine before it started and after it
// ended (the harness idle), during the whole run, in each round of cases
// and in each redis-benchmark measurement (a ceiling's slices together).
type conditions struct {
	before, during, after usage
	rounds, ceilings      []usage
}

// worst returns the most disturbed of the measurements, named.
func (c conditions) worst() string {
	name, worst := "before the run", c.before
	pick := func(n string, u usage) {
		if u.foreign+u.steal > worst.foreign+worst.steal {
			name, worst = n, u
		}
	}
	pick("during the run", c.during)
	pick("after the run", c.after)
	for i, u := range c.rounds {
		pick(fmt.Sprintf("in round %d", i+1), u)
	}
	for _, u := range c.ceilings {
		pick("during a redis-benchmark measurement", u)
	}
	return name + ": " + worst.String()
}

// disturbed reports whether any measurement of the run was disturbed.
func (c conditions) disturbed() bool {
	for _, u := range append([]usage{c.before, c.during, c.after}, append(c.rounds, c.ceilings...)...) {
		if u.disturbed() {
			return true
		}
	}
	return false
}

// maxOf returns the largest value f takes over us (0 for none).
func maxOf(us []usage, f func(usage) float64) float64 {
	m := 0.0
	for _, u := range us {
		m = max(m, f(u))
	}
	return m
}

// markdown states the run's conditions at the top of RESULTS.md: a
// warning first when the run was disturbed.
func (c conditions) markdown() string {
	var b strings.Builder
	if c.disturbed() {
		fmt.Fprintf(&b, "> **Disturbed run.** Other processes or the hypervisor took CPU while this ran (worst %s). Its absolute figures are not those of a quiet machine; ratios taken within a round hold better. Regenerate on a quiet machine: `make bench BENCHFLAGS=-wait-quiet=10m`.\n\n", c.worst())
	}
	pct := func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
	fmt.Fprintf(&b, "Conditions (share of all CPUs; a run is disturbed when other processes take over %s or steal over %s):\n\n", pct(maxForeign), pct(maxSteal))
	b.WriteString("| when | other processes | steal | load average |\n|---|---|---|---|\n")
	row := func(name string, u usage) {
		fmt.Fprintf(&b, "| %s | %s | %.1f%% | %.2f -> %.2f |\n", name, pct(u.foreign), 100*u.steal, u.load1At, u.load1)
	}
	row(fmt.Sprintf("before, harness idle (%v)", c.before.elapsed.Round(time.Second)), c.before)
	row("during the run", c.during)
	for i, u := range c.rounds {
		row(fmt.Sprintf("round %d (cases)", i+1), u)
	}
	if len(c.ceilings) > 0 {
		fmt.Fprintf(&b, "| redis-benchmark measurements (worst of %d) | %s | %.1f%% | |\n", len(c.ceilings),
			pct(maxOf(c.ceilings, func(u usage) float64 { return u.foreign })), 100*maxOf(c.ceilings, func(u usage) float64 { return u.steal }))
	}
	row(fmt.Sprintf("after, harness idle (%v)", c.after.elapsed.Round(time.Second)), c.after)
	if len(c.ceilings) > 0 {
		fmt.Fprintf(&b, "\nThe harness process itself used at most %s of the CPU during a redis-benchmark measurement.\n", pct(maxOf(c.ceilings, func(u usage) float64 { return u.self })))
	}
	b.WriteString("\n")
	return b.String()
}
