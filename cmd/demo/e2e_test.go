package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	registry "github.com/ratekit/ratekit/algorithms"
)

// chromium returns the browser's path, or fails (CI=true) or skips, loudly.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("demo e2e: no chromium on PATH under CI=true (apt-get install -y chromium)")
	}
	t.Skip("demo e2e: SKIPPING the browser test: no chromium on PATH; install it with apt-get install -y chromium")
	return ""
}

// browser starts headless Chromium (chromium) for the test, and returns
// the context of its tab; the browser ends with the test.
func browser(t *testing.T) context.Context {
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1100),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	// Generous: a saturated machine can take many seconds to start
	// Chromium and render.
	ctx, cancel := context.WithTimeout(bctx, 6*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestPageEndToEnd drives the page in headless Chromium as a person would:
// a burst larger than the limit shows allowed then denied entries, in the
// list and in the live chart; a new algorithm and parameter change the
// behaviour; a failing store shows as an ERROR entry and a failed point,
// never as allowed or denied; the concurrency panel acquires leases to
// its limit, shows the denial with Retry-After, releases them and sees the
// count drop, and fails closed too; the side-by-side view charts what the
// server computed for every algorithm of the registry. It saves a screenshot,
// taken before the store fails, to $RATEKIT_SCREENSHOT (docs/demo.png is
// made this way) or a temp dir, and one of the failure beside it.
func TestPageEndToEnd(t *testing.T) {
	ts := newTestServer(t)
	ctx := browser(t) // closed before ts: the page polls until then

	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+sel+"`"+`).length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// waitLive waits for the live chart to hold what ok accepts.
	waitLive := func(what string, ok func(liveTotals) bool) {
		t.Helper()
		var last liveTotals
		deadline := time.Now().Add(90 * time.Second)
		for last = liveChart(t, ctx); !ok(last); last = liveChart(t, ctx) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for the live chart to hold %s: it holds %+v (level %v)", what, last, ptrString(last.Level))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// The page loads with the token bucket; refill slowly, so nothing
	// refills during the burst.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.ID("param-refill_interval_ms")),
		chromedp.SetValue(chromedp.ID("param-refill_interval_ms"), "60000"),
		chromedp.Click(chromedp.ID("apply")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor("the switch note", func() bool { return count("#log li.note") == 1 })

	// A burst of 8 against a capacity of 5: 5 allowed, then 3 denied.
	burst := time.Now()
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("burst"), "8"),
		chromedp.Click(chromedp.ID("send-burst")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor("8 entries", func() bool { return count("#log li.allowed, #log li.denied") == 8 })
	if a, d := count("#log li.allowed"), count("#log li.denied"); a != 5 || d != 3 {
		t.Fatalf("burst of 8 at capacity 5: %d allowed, %d denied", a, d)
	}
	order, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#log li:not(.note)")].reverse().map(li => li.className[0]).join("")`))
	if err != nil {
		t.Fatal(err)
	}
	if order != "aaaaaddd" {
		t.Fatalf("entries, oldest first: %q, want allowed then denied", order)
	}
	waitFor("the state panel", func() bool { return text("#state") == "0 / 5" })
	if n := count("#live-chart canvas"); n != 1 {
		t.Fatalf("live chart: %d canvases, want 1", n)
	}
	waitLive("the burst: 5 allowed, 3 denied, the level at 0", func(l liveTotals) bool {
		return l.Allowed == 5 && l.Denied == 3 && l.Failed == 0 && l.Level != nil && *l.Level == 0
	})
	// The next token comes 60 s after the burst's first request: 60 less
	// the whole seconds that passed since, however slow the machine.
	if h := text("#headers"); !contains(h, "HTTP 429", `RateLimit: "tokenbucket";r=0`) || !retryAfterSince(h, burst, 60) {
		t.Fatalf("headers panel: %q", h)
	}

	// Switch to a fixed window of 2: a burst of 4 gives 2 and 2.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("clear")),
		chromedp.SetValue(chromedp.ID("algorithm"), "fixedwindow"),
	); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("algorithm").dispatchEvent(new Event("change"))`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.ID("param-limit")),
		chromedp.SetValue(chromedp.ID("param-limit"), "2"),
		chromedp.SetValue(chromedp.ID("param-window_ms"), "60000"),
		chromedp.Click(chromedp.ID("apply")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor("the second switch note", func() bool { return count("#log li.note") == 1 })
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("burst"), "4"),
		chromedp.Click(chromedp.ID("send-burst")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor("4 entries", func() bool { return count("#log li.allowed, #log li.denied") == 4 })
	if a, d := count("#log li.allowed"), count("#log li.denied"); a != 2 || d != 2 {
		t.Fatalf("fixed window of 2, burst of 4: %d allowed, %d denied", a, d)
	}
	waitFor("the new state", func() bool { return text("#state") == "0 / 2" })
	waitLive("only the new burst once cleared: 2 allowed, 2 denied", func(l liveTotals) bool {
		return l.Allowed == 2 && l.Denied == 2 && l.Failed == 0 && l.Level != nil && *l.Level == 0
	})
	if h := text("#headers"); !contains(h, `RateLimit-Policy: "fixedwindow";q=2;w=60`) {
		t.Fatalf("headers panel after the switch: %q", h)
	}

	// The concurrency limiter: a limit of 2 and leases of a minute. Two
	// acquires get leases, the third is denied until the oldest expires;
	// the list shows the leases held (their IDs cut short: secrets).
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.ID("lease-limit")),
		chromedp.SetValue(chromedp.ID("lease-limit"), "2"),
		chromedp.SetValue(chromedp.ID("lease-ttl"), "60000"),
		chromedp.Click(chromedp.ID("lease-apply")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor("the lease switch note", func() bool { return count("#lease-log li.note") == 1 })
	leased := time.Now()
	for i := 1; i <= 3; i++ {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("acquire"))); err != nil {
			t.Fatal(err)
		}
		waitFor(fmt.Sprintf("acquire %d listed", i), func() bool { return count("#lease-log li:not(.note)") == i })
	}
	if a, d := count("#lease-log li.allowed"), count("#lease-log li.denied"); a != 2 || d != 1 || count("#leases tbody tr.held") != 2 {
		t.Fatalf("3 acquires at limit 2: %d acquired, %d denied, %d leases listed", a, d, count("#leases tbody tr.held"))
	}
	// Retry-After: the first lease's minute, less what has passed.
	if e := text("#lease-log li.denied"); !contains(e, "DENIED", "#3", "in flight 2 / 2", "retry after") || !retryAfterSince(e, leased, 60) {
		t.Fatalf("denial: %q", e)
	}
	waitFor("2 of 2 in flight", func() bool { return text("#lease-state") == "2 / 2 in flight" })
	if list := text("#leases"); regexp.MustCompile(`[0-9a-f]{32}`).MatchString(list) || !contains(list, "tenant:7", "…", " s") {
		t.Fatalf("lease list: %q, want short IDs, the key and the time left", list)
	}
	waitLeases := func(what string, ok func(liveTotals) bool) {
		t.Helper()
		waitFor("the lease chart to hold "+what, func() bool { return ok(chartTotals(t, ctx, "leases")) })
	}
	waitLeases("2 acquired, 1 denied, 2 in flight", func(l liveTotals) bool {
		return l.Allowed == 2 && l.Denied == 1 && l.Failed == 0 && l.Level != nil && *l.Level == 2
	})

	// The side-by-side view opens on the first pattern; the screenshot
	// shows the burst at a window boundary.
	checkCompare(t, ctx, ts, "steady")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("pattern-boundary"))); err != nil {
		t.Fatal(err)
	}
	checkCompare(t, ctx, ts, "boundary")

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("RATEKIT_SCREENSHOT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "demo.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))

	// Releasing a lease frees its slot; a forged lease frees nothing.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#leases tbody tr:first-child button`))); err != nil {
		t.Fatal(err)
	}
	waitFor("the release listed", func() bool { return count("#lease-log li.released") == 1 && count("#leases tbody tr") == 1 })
	waitFor("1 of 2 in flight", func() bool { return text("#lease-state") == "1 / 2 in flight" })
	waitLeases("1 in flight", func(l liveTotals) bool { return l.Level != nil && *l.Level == 1 })
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("forge"))); err != nil {
		t.Fatal(err)
	}
	waitFor("the forged release listed", func() bool { return count("#lease-log li.notlive") == 1 })
	if e := text("#lease-log li.notlive"); !contains(e, "NOT LIVE", "not live") {
		t.Fatalf("forged release: %q", e)
	}
	if s := text("#lease-state"); s != "1 / 2 in flight" || count("#leases tbody tr") != 1 {
		t.Fatalf("after a forged release: %q, %d leases listed, want 1 in flight and listed", s, count("#leases tbody tr"))
	}

	// The store fails: the request is listed as an ERROR with the store's
	// error, counted as neither allowed nor denied; the state panel says
	// the state is unavailable; the server logs the failure.
	ts.store.down.Store(true)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("send-one"))); err != nil {
		t.Fatal(err)
	}
	waitFor("the error entry", func() bool { return count("#log li.error") == 1 })
	if e := text("#log li.error"); !contains(e, "ERROR", "#5", "HTTP 503", "store failed", "connection refused") {
		t.Fatalf("error entry: %q", e)
	}
	if a, d := count("#log li.allowed"), count("#log li.denied"); a != 2 || d != 2 {
		t.Fatalf("after the store failed: %d allowed, %d denied, want still 2 and 2", a, d)
	}
	if s := text("#summary"); s != "2 allowed, 2 denied, 1 failed (no decision)" {
		t.Fatalf("summary: %q", s)
	}
	if h := text("#headers"); !contains(h, "HTTP 503") || contains(h, "RateLimit") {
		t.Fatalf("headers panel after the store failed: %q", h)
	}
	waitFor("the state panel to show the failure", func() bool {
		return text("#state") == "unavailable" && contains(text("#state-detail"), "HTTP 503", "store failed")
	})
	waitLive("the failure: a failed point, the level unknown", func(l liveTotals) bool {
		return l.Allowed == 2 && l.Denied == 2 && l.Failed == 1 && l.Level == nil
	})
	if len(ts.logLines(slog.LevelError, "store failed")) == 0 {
		t.Fatalf("no error logged for the store failure:\n%s", ts.logs.String())
	}
	// The lease panel fails closed too: an acquire is an ERROR, the
	// state unavailable, the lease still listed after a failed release.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("acquire"))); err != nil {
		t.Fatal(err)
	}
	waitFor("the lease error entry", func() bool { return count("#lease-log li.error") == 1 })
	if e := text("#lease-log li.error"); !contains(e, "ERROR", "acquire", "HTTP 503", "store failed", "connection refused") {
		t.Fatalf("lease error entry: %q", e)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("release-all"))); err != nil {
		t.Fatal(err)
	}
	waitFor("the failed release listed", func() bool { return count("#lease-log li.error") == 2 })
	if count("#leases tbody tr") != 1 || count("#lease-log li.released") != 1 {
		t.Fatalf("after a failed release: %d leases listed, %d released, want 1 and 1", count("#leases tbody tr"), count("#lease-log li.released"))
	}
	waitFor("the lease state to show the failure", func() bool {
		return text("#lease-state") == "unavailable" && contains(text("#lease-state-detail"), "HTTP 503", "store failed")
	})
	waitLeases("a failed point, the level unknown", func(l liveTotals) bool { return l.Failed == 1 && l.Level == nil })
	png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	failed := strings.TrimSuffix(out, filepath.Ext(out)) + "-store-failed.png"
	if err := os.WriteFile(failed, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the failure: %s (%d bytes)", failed, len(png))

	// The store is back: decisions are too. (Denied while the window of
	// 2 lasts; allowed on a machine so slow that its 60 s have passed.)
	ts.store.down.Store(false)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("send-one"))); err != nil {
		t.Fatal(err)
	}
	waitFor("a decided entry after the store came back", func() bool { return count("#log li.allowed, #log li.denied") == 5 })
	waitFor("the state panel to recover", func() bool { return strings.HasSuffix(text("#state"), " / 2") })
	if count("#log li.error") != 1 {
		t.Fatalf("error entries: %d, want 1", count("#log li.error"))
	}
	waitLive("a decision again once the store is back", func(l liveTotals) bool {
		return l.Allowed+l.Denied == 5 && l.Failed == 1 && l.Level != nil
	})
	// And the lease the failed release left is released now: nothing in
	// flight.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("release-all"))); err != nil {
		t.Fatal(err)
	}
	waitFor("the last release", func() bool { return count("#lease-log li.released") == 2 && count("#leases tbody tr") == 0 })
	waitFor("nothing in flight", func() bool { return text("#lease-state") == "0 / 2 in flight" })
	waitLeases("nothing in flight", func(l liveTotals) bool { return l.Level != nil && *l.Level == 0 })
	if ids := regexp.MustCompile(`[0-9a-f]{32}`).FindAllString(ts.logs.String(), -1); len(ids) != 0 {
		t.Fatalf("the log holds what looks like lease IDs: %v", ids)
	}
}

// liveTotals is what the live chart holds: decisions summed over the
// seconds it shows, and the key's latest level (nil: unknown).
type liveTotals struct {
	Allowed, Denied, Failed int
	Level                   *int64
}

// liveChart reads the data the live chart (a uPlot) holds.
func liveChart(t *testing.T, ctx context.Context) liveTotals {
	t.Helper()
	return chartTotals(t, ctx, "live")
}

// chartTotals reads the data demo.charts[name], a live chart, holds:
// [seconds, level, allowed, denied, failed].
func chartTotals(t *testing.T, ctx context.Context, name string) liveTotals {
	t.Helper()
	l, err := chromedp.Run(ctx, chromedp.Evaluate[liveTotals](fmt.Sprintf(`(() => {
		const [x, level, allowed, denied, failed] = demo.charts[%q].data;
		const sum = (a) => a.reduce((s, v) => s + (v || 0), 0);
		return { Allowed: sum(allowed), Denied: sum(denied), Failed: sum(failed), Level: level.length ? level[level.length - 1] : null };
	})()`, name)))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkCompare waits for the side-by-side view to show pattern, then
// checks that it charts, for every algorithm of the registry in its order,
// the series GET /api/compare gives, with the peak the server counted.
func checkCompare(t *testing.T, ctx context.Context, ts *testServer, pattern string) {
	t.Helper()
	want, _ := getCompare(t, ts, pattern)
	type chart struct {
		Name, Facts string
		Canvases    int
		Data        [][]float64
	}
	read := func() []chart {
		t.Helper()
		charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chart](fmt.Sprintf(`document.getElementById("compare").dataset.pattern !== %q ? [] :
			demo.charts.compare.map((c) => {
				const card = document.querySelector('.cmp[data-algorithm="' + c.name + '"]');
				return { Name: c.name, Facts: card.querySelector(".facts").textContent, Canvases: card.querySelectorAll("canvas").length, Data: c.plot.data };
			})`, pattern)))
		if err != nil {
			t.Fatal(err)
		}
		return charts
	}
	var charts []chart
	deadline := time.Now().Add(90 * time.Second)
	for charts = read(); len(charts) != len(registry.All); charts = read() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out waiting for the side-by-side view: %d charts, want %d", pattern, len(charts), len(registry.All))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, c := range charts {
		w := want.Algorithms[i]
		if c.Name != registry.All[i].Name || c.Canvases != 1 {
			t.Errorf("%s: chart %d: %s with %d canvases, want the registry's %s with 1", pattern, i, c.Name, c.Canvases, registry.All[i].Name)
			continue
		}
		if len(c.Data) != 4 || len(c.Data[0]) != len(want.T) {
			t.Errorf("%s/%s: chart data %v, want [t, remaining, allowed, denied] of %d values", pattern, c.Name, c.Data, len(want.T))
			continue
		}
		for b := range want.T {
			if c.Data[0][b] != want.T[b]+0.5 || c.Data[1][b] != float64(w.Remaining[b]) || c.Data[2][b] != float64(w.Allowed[b]) || c.Data[3][b] != float64(w.Denied[b]) {
				t.Errorf("%s/%s: bin %d: chart holds t=%v remaining=%v allowed=%v denied=%v; the server: t=%v+0.5 %d %d %d",
					pattern, c.Name, b, c.Data[0][b], c.Data[1][b], c.Data[2][b], c.Data[3][b], want.T[b], w.Remaining[b], w.Allowed[b], w.Denied[b])
				break
			}
		}
		if facts := fmt.Sprintf("%d allowed, %d denied, at most %d in any 10 s", w.TotalAllowed, w.TotalDenied, w.Peak); c.Facts != facts {
			t.Errorf("%s/%s: the card says %q, want %q", pattern, c.Name, c.Facts, facts)
		}
	}
}

// retryAfterSince reports whether s holds "Retry-After: N" for a wait of
// full seconds that began at start: N is full less the whole seconds
// passed since (rounded down, and one more for the rounding up of N), and
// at most full.
func retryAfterSince(s string, start time.Time, full int) bool {
	m := regexp.MustCompile(`Retry-After: (\d+)`).FindStringSubmatch(s)
	if m == nil {
		return false
	}
	n, err := strconv.Atoi(m[1])
	passed := int(time.Since(start) / time.Second)
	return err == nil && n <= full && n >= full-passed-1
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func ptrString(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

// shiftableClock is a script run before the page's own: Date.now, which
// the live charts read, runs demoTest.shift(s) seconds ahead of the real
// time (the charts' 1 s steps still come from real timers); demoTest.opened
// is the second the page opened.
const shiftableClock = `(() => {
	const now = Date.now.bind(Date);
	let shift = 0;
	Date.now = () => now() + shift;
	window.demoTest = { opened: Math.floor(Date.now() / 1000), shift: (s) => { shift += s * 1000; } };
})();`

// chartSpan is what a live chart shows and holds: its x scale, in Unix
// seconds, and the first and last seconds of its data.
type chartSpan struct {
	Min, Max, First, Last, Opened float64
}

// TestLiveChartSpan: a live chart's span starts when the page opened (or
// when the chart was cleared), grows with the seconds since, and once it
// spans 60 s scrolls, showing the last 60: a new page's first seconds are
// not squeezed at the right edge of a minute. Time is moved on by
// shifting the page's Date.now.
func TestLiveChartSpan(t *testing.T) {
	ts := newTestServer(t)
	ctx := browser(t)
	addScript := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: shiftableClock})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(ctx, addScript, chromedp.Navigate(ts.URL), chromedp.WaitVisible(chromedp.CSS("#live-chart canvas"))); err != nil {
		t.Fatal(err)
	}
	span := func(chart string) chartSpan {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[chartSpan](fmt.Sprintf(`(() => {
			const u = demo.charts[%q], x = u.data[0];
			return { Min: u.scales.x.min, Max: u.scales.x.max, First: x[0], Last: x[x.length - 1], Opened: demoTest.opened };
		})()`, chart)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// check waits for chart to hold the second since (after the page
	// opened), then checks that it shows the seconds it holds, the last 60
	// of them at most.
	check := func(what, chart string, since func(chartSpan) float64) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		s := span(chart)
		for ; s.Last < since(s); s = span(chart) {
			if time.Now().After(deadline) {
				t.Fatalf("%s, %s chart: timed out waiting for the second %.0f: it holds %.0f to %.0f", what, chart, since(s), s.First, s.Last)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if start := max(s.First, s.Last-59); s.Min != start-0.5 || s.Max != s.Last+0.5 {
			t.Errorf("%s, %s chart: shows [%.1f, %.1f] (%.0f s), holding %.0f to %.0f; want [%.1f, %.1f]",
				what, chart, s.Min, s.Max, s.Max-s.Min, s.First, s.Last, start-0.5, s.Last+0.5)
		}
	}
	for _, chart := range []string{"live", "leases"} {
		check("the page just opened", chart, func(s chartSpan) float64 { return s.Opened })
		if s := span(chart); s.First < s.Opened {
			t.Errorf("%s chart: holds %.0f, before the page opened at %.0f", chart, s.First, s.Opened)
		}
	}
	shift := func(seconds int) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](fmt.Sprintf("demoTest.shift(%d)", seconds))); err != nil {
			t.Fatal(err)
		}
	}
	shift(30)
	for _, chart := range []string{"live", "leases"} {
		check("30 s later", chart, func(s chartSpan) float64 { return s.Opened + 30 })
	}
	shift(60)
	for _, chart := range []string{"live", "leases"} {
		check("90 s later", chart, func(s chartSpan) float64 { return s.Opened + 90 })
	}
	// Cleared, the live chart starts again from that second.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("clear"))); err != nil {
		t.Fatal(err)
	}
	check("cleared", "live", func(s chartSpan) float64 { return s.Opened + 90 })
	if s := span("live"); s.First < s.Opened+90 {
		t.Errorf("live chart, cleared: holds %.0f, before the clear at %.0f or later", s.First, s.Opened+90)
	}
}
