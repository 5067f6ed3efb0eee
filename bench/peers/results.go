package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func field(ss []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func (r *results) ops(k caseKey) (med, lo, hi float64) {
	v := field(r.samples[k], func(s sample) float64 { return s.ops })
	if len(v) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	return median(v), slices.Min(v), slices.Max(v)
}

// ratio is the median over rounds of a/b, both measured in the same round.
func (r *results) ratio(a, b caseKey) float64 {
	sa, sb := r.samples[a], r.samples[b]
	var v []float64
	for i := 0; i < len(sa) && i < len(sb); i++ {
		v = append(v, sa[i].ops/sb[i].ops)
	}
	return median(v)
}

// ceilingRatio is the median over rounds of a case's rate over the
// ceiling of its script measured in the same round.
//
// The ceiling is the script's FCALL one where it was measured (a server
// with functions), which is how the stores run it; goredis-auto's
// AutoPipeliner cannot load function libraries, and runs EVALSHA.
func (r *results) ceilingRatio(k caseKey, script string) float64 {
	ss, cs := r.samples[k], r.ceilings[script]
	if fs := r.ceilings[script+fcallSuffix]; len(fs) > 0 && k.series != "ratekit/goredis-auto" {
		cs = fs
	}
	var v []float64
	for i := 0; i < len(ss) && i < len(cs); i++ {
		v = append(v, ss[i].ops/cs[i].p16)
	}
	return median(v)
}

// micros formats a time in µs.
func micros(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f", v)
}

func human(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func dur(v float64) string {
	d := time.Duration(v)
	switch {
	case math.IsNaN(v):
		return "–"
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	}
	return fmt.Sprintf("%dns", d.Nanoseconds())
}

func (r *results) series() []string {
	var out []string
	for _, s := range storeNames {
		out = append(out, "ratekit/"+s, coalesced(s))
	}
	return append(out, peerNames...)
}

func (r *results) has(k caseKey) bool { return len(r.samples[k]) > 0 }

// markdown is RESULTS.md; withChart says whether throughput.png goes
// beside it.
func (r *results) markdown(o options, withChart bool) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	w("# ratekit benchmark results\n\n")
	w("Made by `make bench` (`bench/peers`), %s. Machine: %s. The harness, its clients and redis-server share these cores.\n\n", r.env.date, r.env)
	w("%s", r.cond.markdown())
	w("%d interleaved rounds of %v per case (%d keys, chosen at random per request); every figure is the median over rounds, with [min–max] for throughput. Ratios are taken within a round, then the median; a case read as a ratio to the plain token bucket (coalescing, the two-limit policy, Params given, rules; on the memory store, its other algorithms and the in-process peers x/time/rate and sethvargo, which every algorithm is read against) runs in one unit with it, the unit's cases in turn forth and back (A B C C B A) four times in slices of that time, each the mean of its slices. A case counts the calls that return within its time, after a warm-up of an eighth of it, its goroutines running throughout. Allocations and bytes are per decision for the whole process (client, harness and, for the memory store, the store). Total time %v.\n\n", o.rounds, o.duration, o.keys, r.elapsed.Round(time.Second))

	if withChart {
		w("![decisions per second against goroutines, token bucket](throughput.png)\n\n")
	}
	w("## Token bucket, nothing denied: decisions/s\n\n| series |")
	for _, g := range o.goroutines {
		w(" %d goroutines |", g)
	}
	w("\n|---|")
	for range o.goroutines {
		w("---|")
	}
	w("\n")
	for _, s := range r.series() {
		if !r.has(caseKey{s, "tokenbucket", "open", o.goroutines[0]}) {
			continue
		}
		w("| %s |", s)
		for _, g := range o.goroutines {
			m, lo, hi := r.ops(caseKey{s, "tokenbucket", "open", g})
			w(" %s [%s–%s] |", human(m), human(lo), human(hi))
		}
		w("\n")
	}

	w("\n## Every algorithm on every store, nothing denied: decisions/s by goroutines\n\n| store | algorithm |")
	for _, g := range o.goroutines {
		w(" %d |", g)
	}
	w("\n|---|---|")
	for range o.goroutines {
		w("---|")
	}
	w("\n")
	for _, st := range storeNames {
		for _, a := range algos {
			if !r.has(caseKey{"ratekit/" + st, a.name, "open", o.goroutines[0]}) {
				continue
			}
			w("| %s | %s |", st, a.name)
			for _, g := range o.goroutines {
				m, _, _ := r.ops(caseKey{"ratekit/" + st, a.name, "open", g})
				w(" %s |", human(m))
			}
			w("\n")
		}
	}

	gMax := o.goroutines[len(o.goroutines)-1]
	w("\n## Every algorithm on every store at %d goroutines, nothing denied\n\n", gMax)
	w("| store | algorithm | decisions/s | p50 | p99 | allocs/op | bytes/op | of the script's -P16 ceiling |\n|---|---|---|---|---|---|---|---|\n")
	for _, st := range storeNames {
		for _, a := range algos {
			k := caseKey{"ratekit/" + st, a.name, "open", gMax}
			if !r.has(k) {
				continue
			}
			ss := r.samples[k]
			m, lo, hi := r.ops(k)
			frac := "–"
			if st != "memory" && len(r.ceilings[a.name]) > 0 {
				frac = fmt.Sprintf("%.2f", r.ceilingRatio(k, a.name))
			}
			w("| %s | %s | %s [%s–%s] | %s | %s | %.1f | %.0f | %s |\n", st, a.name, human(m), human(lo), human(hi),
				dur(median(field(ss, func(s sample) float64 { return float64(s.p50) }))),
				dur(median(field(ss, func(s sample) float64 { return float64(s.p99) }))),
				median(field(ss, func(s sample) float64 { return s.allocs })),
				median(field(ss, func(s sample) float64 { return s.bytes })), frac)
		}
	}

	if len(r.ceilings) > 0 {
		w("\n## The server's ceiling per script (redis-benchmark, 50 connections, 10 000 keys)\n\n")
		w("Each script as EVALSHA, and as FCALL of its function library (`scriptproto.Library`), as ratekit's Redis stores run it on a server with functions. The server's CPU time (INFO cpu, user and system) per call is that of the -P 16 runs. Each -P 16 ceiling is measured in 4 slices, in turn with as many of the guide's token bucket script (EVALSHA, -P 16), forth and back; the last column is the FCALL -P 16 ceiling over the guide's in those slices, the median over rounds.\n\n")
		w("| script | EVALSHA -P 16 | -P 1 | server µs/call | FCALL -P 16 | -P 1 | server µs/call | FCALL -P 16 / the guide's |\n|---|---|---|---|---|---|---|---|\n")
		names := []string{"seed tokenbucket"}
		for _, a := range algos {
			names = append(names, a.name)
		}
		names = append(names, policyCeiling)
		for _, n := range names {
			cs, fs := r.ceilings[n], r.ceilings[n+fcallSuffix]
			if len(cs) == 0 {
				continue
			}
			ratio := "–"
			if len(fs) > 0 {
				ratio = fmt.Sprintf("%.2fx", guideRatio(fs))
			}
			col := func(cs []ceiling, f func(c ceiling) float64) float64 {
				if len(cs) == 0 {
					return math.NaN()
				}
				return median(field2(cs, f))
			}
			p16, p1, cpu := func(c ceiling) float64 { return c.p16 }, func(c ceiling) float64 { return c.p1 }, func(c ceiling) float64 { return c.cpu }
			w("| %s | %s | %s | %s | %s | %s | %s | %s |\n", n, human(col(cs, p16)), human(col(cs, p1)), micros(col(cs, cpu)),
				human(col(fs, p16)), human(col(fs, p1)), micros(col(fs, cpu)), ratio)
		}
	}

	w("\n## A policy of two limits, one script per decision\n\nA policy (`ratekit.NewPolicy`) of the token bucket and a fixed window, neither denying, against the token bucket alone (decisions/s, medians).\n\n| store | goroutines | policy | single limit | ratio |\n|---|---|---|---|---|\n")
	for _, st := range storeNames {
		for _, g := range o.goroutines {
			pk, sk := caseKey{"ratekit/" + st, "tokenbucket", "policy2", g}, caseKey{"ratekit/" + st, "tokenbucket", "open", g}
			if !r.has(pk) || !r.has(sk) {
				continue
			}
			pm, _, _ := r.ops(pk)
			sm, _, _ := r.ops(sk)
			w("| %s | %d | %s | %s | %.2fx |\n", st, g, human(pm), human(sm), r.ratio(pk, sk))
		}
	}

	// beside writes the rows of a table of the token bucket's workload a
	// beside its workload b, per store and goroutines: decisions/s of
	// each, a over b, and the allocations per decision of each.
	beside := func(a, b string) {
		for _, st := range storeNames {
			for _, g := range o.goroutines {
				ak, bk := caseKey{"ratekit/" + st, "tokenbucket", a, g}, caseKey{"ratekit/" + st, "tokenbucket", b, g}
				if !r.has(ak) || !r.has(bk) {
					continue
				}
				am, _, _ := r.ops(ak)
				bm, _, _ := r.ops(bk)
				w("| %s | %d | %s | %s | %.2fx | %.1f | %.1f |\n", st, g, human(am), human(bm), r.ratio(ak, bk),
					median(field(r.samples[ak], func(s sample) float64 { return s.allocs })),
					median(field(r.samples[bk], func(s sample) float64 { return s.allocs })))
			}
		}
	}

	w("\n## Limits given with each request\n\nThe open token bucket, each request giving its own limits (`core.Request.Params`, made once), against the same limiter with its own (decisions/s and allocations per decision, medians).\n\n| store | goroutines | with Params | own limits | ratio | allocs/op with | allocs/op own |\n|---|---|---|---|---|---|---|\n")
	beside("params", "open")

	w("\n## Rules: matching on top of a decision\n\nThe open token bucket decided through package rules (a descriptor matched to its rule, `Rules.DecideTo`), against the same kind of parameters given directly (`core.Request.Params`, the case above): what matching costs (decisions/s and allocations per decision, medians).\n\n| store | goroutines | through rules | Params given | ratio | allocs/op rules | allocs/op Params |\n|---|---|---|---|---|---|---|\n")
	beside("rules", "params")

	w("\n## AllowMany: batches of %d random keys from one goroutine, token bucket, nothing denied\n\n", batchSize)
	w("One pipelined round trip per batch (call by call on the memory store). Latency is per batch; allocations per decision.\n\n| store | decisions/s | p50 batch | p99 batch | allocs/decision | of the script's -P16 ceiling |\n|---|---|---|---|---|---|\n")
	for _, st := range storeNames {
		k := caseKey{"ratekit/" + st, "tokenbucket", "batch", 1}
		if !r.has(k) {
			continue
		}
		ss := r.samples[k]
		m, lo, hi := r.ops(k)
		frac := "–"
		if st != "memory" && len(r.ceilings["tokenbucket"]) > 0 {
			frac = fmt.Sprintf("%.2f", r.ceilingRatio(k, "tokenbucket"))
		}
		w("| %s | %s [%s–%s] | %s | %s | %.1f | %s |\n", st, human(m), human(lo), human(hi),
			dur(median(field(ss, func(s sample) float64 { return float64(s.p50) }))),
			dur(median(field(ss, func(s sample) float64 { return float64(s.p99) }))),
			median(field(ss, func(s sample) float64 { return s.allocs })), frac)
	}

	b.WriteString(r.coalesceSection(o))

	w("\n## 90%% of requests denied, 64 goroutines\n\nOne request in ten goes to a key with room; the rest to keys already spent. Rows marked +denycache put `denycache` in front of the spent keys' limiter: their denials are answered in process until RetryAfter.\n\n| store | algorithm | decisions/s | denied | p99 | allocs/op |\n|---|---|---|---|---|---|\n")
	var withCache []string
	for _, st := range storeNames {
		withCache = append(withCache, st, st+"+denycache")
	}
	for _, st := range withCache {
		for _, a := range algos {
			k := caseKey{"ratekit/" + st, a.name, "deny90", 64}
			if !r.has(k) {
				continue
			}
			ss := r.samples[k]
			m, _, _ := r.ops(k)
			w("| %s | %s | %s | %.0f%% | %s | %.1f |\n", st, a.name, human(m),
				100*median(field(ss, func(s sample) float64 { return s.denied })),
				dur(median(field(ss, func(s sample) float64 { return float64(s.p99) }))),
				median(field(ss, func(s sample) float64 { return s.allocs })))
		}
	}
	w("\n## One hot key: every request on one key, GCRA, nothing denied\n\nWithout a Budget every decision is a round trip to the one server that holds the key; a `hotkey.Budget` (leases of %d to %d units, TTL %v) decides in process from units leased from the key's limit. One process here; `BenchmarkHotKeyProcesses` in `testkit/faulttest` runs three.\n\n| store | goroutines | one key | one key, hotkey.Budget | ratio |\n|---|---|---|---|---|\n", hotKeyMinLease, hotKeyLease, hotKeyTTL)
	for _, st := range storeNames {
		for _, g := range o.goroutines {
			pk, hk := caseKey{"ratekit/" + st, "gcra", "onekey", g}, caseKey{"ratekit/" + st, "gcra", "hotkey", g}
			if !r.has(pk) || !r.has(hk) {
				continue
			}
			pm, _, _ := r.ops(pk)
			hm, lo, hi := r.ops(hk)
			w("| %s | %d | %s | %s [%s–%s] | %.0fx |\n", st, g, human(pm), human(hm), human(lo), human(hi), r.ratio(hk, pk))
		}
	}
	w("\n%s", r.targets(o))
	return b.String()
}

func field2(cs []ceiling, f func(ceiling) float64) []float64 {
	out := make([]float64, len(cs))
	for i, c := range cs {
		out[i] = f(c)
	}
	return out
}

// chart plots token-bucket throughput against goroutines, one line per
// store and peer, log-log, and returns the PNG; nil when no token bucket
// was measured with nothing denied.
func (r *results) chart() ([]byte, error) {
	p := plot.New()
	p.Title.Text = "Token bucket, nothing denied (median of rounds)"
	p.X.Label.Text = "goroutines"
	p.Y.Label.Text = "decisions per second"
	p.X.Scale = plot.LogScale{}
	p.Y.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	// The lines sit above 4000 decisions/s: the legend goes under them.
	p.Y.Min = 100
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.YOffs = vg.Points(4)
	i := 0
	xMin, xMax := math.Inf(1), math.Inf(-1)
	for _, s := range r.series() {
		var pts plotter.XYs
		for k := range r.samples {
			if k.series == s && k.algo == "tokenbucket" && k.workload == "open" {
				// A log scale has no place for 0 (nothing decided).
				if m, _, _ := r.ops(k); m > 0 {
					pts = append(pts, plotter.XY{X: float64(k.g), Y: m})
				}
			}
		}
		if len(pts) == 0 {
			continue
		}
		slices.SortFunc(pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
		xMin, xMax = min(xMin, pts[0].X), max(xMax, pts[len(pts)-1].X)
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		c := plotutil.Color(i)
		l.Color, sc.Color = c, c
		if !strings.HasPrefix(s, "ratekit/") {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			l.Color = color.RGBA{R: c.(color.RGBA).R, G: c.(color.RGBA).G, B: c.(color.RGBA).B, A: 160}
		}
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s, l, sc)
		i++
	}
	if i == 0 {
		return nil, nil
	}
	if xMin == xMax {
		// One concurrency: left alone, the axis would widen to
		// [g-1, g+1], which starts at 0 for 1 goroutine, and a log scale
		// cannot start there.
		p.X.Min, p.X.Max = xMin/2, xMax*2
	}
	w, err := p.WriterTo(9*vg.Inch, 6*vg.Inch, "png")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
