package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	registry "github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// flakyStore is the memory store, or a dead store while down is set: every
// call then fails as a Redis store whose server is gone does; or a hung
// one while hang is set: every call waits for its context to end, as a
// paused Redis server makes a client do.
type flakyStore struct {
	inner core.ScriptRunner
	down  atomic.Bool
	hang  atomic.Bool
}

func (f *flakyStore) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if f.down.Load() {
		return nil, fmt.Errorf("%w: dial tcp 127.0.0.1:6379: connect: connection refused (demo test: store is down)", core.ErrStore)
	}
	if f.hang.Load() {
		<-ctx.Done()
		return nil, fmt.Errorf("%w: i/o timeout (demo test: store hangs): %w", core.ErrStore, ctx.Err())
	}
	return f.inner.RunScript(ctx, s, keys, args, reply)
}

// testServer is the demo over a flakyStore, with its log.
type testServer struct {
	*httptest.Server
	store *flakyStore
	logs  *syncBuffer // JSON lines, debug level and up
}

// newTestServer returns the demo over a flakyStore around a memory store
// made with opts (memory.WithClock: a fake clock for every limiter).
func newTestServer(t *testing.T, opts ...memory.Option) *testServer {
	return newTestServerLogAt(t, nil, opts...)
}

// newTestServerLogAt is newTestServer whose log is paced at clock's time
// (nil: the real time).
func newTestServerLogAt(t *testing.T, clock core.Clock, opts ...memory.Option) *testServer {
	m, err := memory.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	store := &flakyStore{inner: m}
	logs := &syncBuffer{}
	s, err := newServer(store, "memory", slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		s.clock = clock
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, store: store, logs: logs}
}

// logLines returns the lines logged at level whose message contains msg.
func (ts *testServer) logLines(level slog.Level, msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(ts.logs.String()), "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil && v["level"] == level.String() && strings.Contains(fmt.Sprint(v["msg"]), msg) {
			out = append(out, v)
		}
	}
	return out
}

func call(t *testing.T, method, url string, body any, hdr map[string]string) (*http.Response, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, v
}

func TestAPI(t *testing.T) {
	ts := newTestServer(t)
	_, meta := call(t, "GET", ts.URL+"/api/algorithms", nil, nil)
	if n := len(meta["algorithms"].([]any)); n != len(registry.All) || meta["store"] != "memory" {
		t.Fatalf("algorithms: %d, store %v", n, meta["store"])
	}
	// Every algorithm can be chosen, and limits what it should.
	for _, a := range algorithms {
		params := map[string]int64{}
		for _, p := range a.Params {
			params[p.Name] = p.Default
		}
		// A limit of 3, whatever the parameter's name (capacity, burst).
		params[a.reg.Limit().Name] = 3
		resp, v := call(t, "PUT", ts.URL+"/api/config", config{Algorithm: a.Name, Params: params}, nil)
		if resp.StatusCode != 200 || v["algorithm"] != a.Name {
			t.Fatalf("%s: PUT /api/config: %s %v", a.Name, resp.Status, v)
		}
		var codes []int
		for i := 0; i < 4; i++ {
			resp, _ := call(t, "GET", ts.URL+"/api/limited", nil, map[string]string{"X-Demo-Key": "k"})
			codes = append(codes, resp.StatusCode)
			if !strings.Contains(resp.Header.Get("RateLimit-Policy"), `"`+a.Name+`";q=3`) {
				t.Fatalf("%s: RateLimit-Policy %q", a.Name, resp.Header.Get("RateLimit-Policy"))
			}
		}
		if fmt.Sprint(codes) != "[200 200 200 429]" {
			t.Fatalf("%s: codes %v", a.Name, codes)
		}
		_, st := call(t, "GET", ts.URL+"/api/state?key=k", nil, nil)
		if d := st["decision"].(map[string]any); d["remaining"].(float64) != 0 || d["allowed"] != false {
			t.Fatalf("%s: state %v", a.Name, st)
		}
	}
	for name, body := range map[string]any{
		"unknown algorithm": config{Algorithm: "nope", Params: map[string]int64{}},
		"missing parameter": config{Algorithm: "gcra", Params: map[string]int64{"rate": 1}},
		"bad parameter":     config{Algorithm: "fixedwindow", Params: map[string]int64{"limit": 0, "window_ms": 1000}},
		"not JSON":          "{",
	} {
		if resp, v := call(t, "PUT", ts.URL+"/api/config", body, nil); resp.StatusCode != 400 || v["error"] == "" {
			t.Errorf("%s: %s %v", name, resp.Status, v)
		}
	}
	page, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(b), "ratekit demo") || strings.Contains(string(b), "https://") {
		t.Fatalf("page: %s", b)
	}
}

// TestAlgorithmsAPI: GET /api/algorithms lists the registry's algorithms
// in its order, and the page's names for the parameters (durations in
// whole milliseconds, "_ms") and their defaults stay what they were.
func TestAlgorithmsAPI(t *testing.T) {
	ts := newTestServer(t)
	resp, err := http.Get(ts.URL + "/api/algorithms")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var meta struct {
		Algorithms []struct {
			Name, Title, State string
			Params             []struct {
				Name, Label string
				Default     int64
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		t.Fatal(err)
	}
	if len(meta.Algorithms) != len(registry.All) {
		t.Fatalf("%d algorithms, the registry has %d", len(meta.Algorithms), len(registry.All))
	}
	got := map[string]string{}
	for i, a := range meta.Algorithms {
		if a.Name != registry.All[i].Name || a.Title == "" || a.State == "" {
			t.Errorf("algorithm %d: %+v, registry %q", i, a, registry.All[i].Name)
		}
		var ps []string
		for _, p := range a.Params {
			if p.Label == "" {
				t.Errorf("%s.%s has no label", a.Name, p.Name)
			}
			ps = append(ps, fmt.Sprintf("%s=%d", p.Name, p.Default))
		}
		got[a.Name] = strings.Join(ps, " ")
	}
	for name, want := range map[string]string{
		"tokenbucket":    "capacity=5 refill_rate=1 refill_interval_ms=2000 carry=0",
		"fixedwindow":    "limit=5 window_ms=10000 aligned=0",
		"slidinglog":     "limit=5 window_ms=10000",
		"slidingcounter": "limit=5 window_ms=10000",
		"leakybucket":    "capacity=5 leak_rate=1 per_ms=2000 carry=0",
		"gcra":           "rate=1 period_ms=2000 burst=5 carry=0",
	} {
		if got[name] != want {
			t.Errorf("%s: parameters %q, want %q", name, got[name], want)
		}
	}
	if meta.Algorithms[0].Name != "tokenbucket" {
		t.Errorf("the page starts with %s, want the token bucket", meta.Algorithms[0].Name)
	}
	// Every default duration is whole milliseconds, as the page gives it.
	for _, a := range registry.All {
		for _, p := range a.Params {
			if p.Kind == registry.Duration && p.Default%int64(time.Millisecond) != 0 {
				t.Errorf("%s.%s: default %v is not whole milliseconds", a.Name, p.Name, time.Duration(p.Default))
			}
		}
	}
}

func TestRunShutsDownOnCancel(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, fmt.Sprintf("127.0.0.1:%d", port), "", "goredis", &out, slog.New(slog.DiscardHandler))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "ratekit demo on") {
		if time.Now().After(deadline) {
			t.Fatal("demo did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/config", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "stopped") {
			t.Fatalf("run: %v, output %q", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestRedisFlags(t *testing.T) {
	srv := redistest.Start(t)
	for client, label := range map[string]string{"goredis": "go-redis", "rueidis": "rueidis"} {
		runner, name, closeFn, err := openStore("redis://"+srv.Addr, client)
		if err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		s, err := newServer(runner, name, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.handler())
		resp, v := call(t, "GET", ts.URL+"/api/limited", nil, map[string]string{"X-Demo-Key": "k"})
		if resp.StatusCode != 200 || v["remaining"].(float64) != 4 || !strings.HasPrefix(name, label) {
			t.Fatalf("%s: %s %v %s", client, resp.Status, v, name)
		}
		// The concurrency limiter too, on the Redis server's clock.
		resp, v = call(t, "POST", ts.URL+"/api/leases?n=3", nil, map[string]string{"X-Demo-Key": "k"})
		if resp.StatusCode != 200 || v["in_flight"] != 3.0 {
			t.Fatalf("%s: acquire: %s %v", client, resp.Status, v)
		}
		// Retry-After: the lease's 30 s TTL, less the few seconds a loaded
		// machine may take since.
		if resp, v := call(t, "POST", ts.URL+"/api/leases", nil, map[string]string{"X-Demo-Key": "k"}); resp.StatusCode != 429 || !slices.Contains([]string{"30", "29", "28", "27", "26", "25"}, resp.Header.Get("Retry-After")) {
			t.Fatalf("%s: acquire over the limit: %s Retry-After %q %v", client, resp.Status, resp.Header.Get("Retry-After"), v)
		}
		lease := v["lease"].(map[string]any)
		if resp, v := call(t, "POST", ts.URL+"/api/leases/release", lease, nil); resp.StatusCode != 200 || v["released"] != true {
			t.Fatalf("%s: release: %s %v", client, resp.Status, v)
		}
		if resp, v := call(t, "GET", ts.URL+"/api/leases/state?key=k", nil, nil); resp.StatusCode != 200 || v["in_flight"] != 0.0 {
			t.Fatalf("%s: state after the release: %s %v", client, resp.Status, v)
		}
		ts.Close()
		closeFn()
	}
	for _, bad := range [][2]string{{"localhost:6379", "goredis"}, {"redis://" + srv.Addr, "jedis"}, {"http://x", "goredis"}, {"", "jedis"}} {
		if _, _, _, err := openStore(bad[0], bad[1]); err == nil {
			t.Errorf("openStore(%q, %q): no error", bad[0], bad[1])
		}
	}
}

// wantJSONError checks that resp is an error of the status given, in JSON,
// whose message contains want.
func wantJSONError(t *testing.T, what string, resp *http.Response, v map[string]any, status int, want string) {
	t.Helper()
	msg, _ := v["error"].(string)
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(msg, want) {
		t.Errorf("%s: %s %q %v, want %d and an error containing %q", what, resp.Status, resp.Header.Get("Content-Type"), v, status, want)
	}
}

// TestStoreFailure: while the store fails, the limited endpoint fails
// closed (503) with an error in JSON, decides nothing it could be taken
// for, and logs the failure; the state endpoint does likewise; when the
// store is back, so are decisions.
func TestStoreFailure(t *testing.T) {
	ts := newTestServer(t)
	key := map[string]string{"X-Demo-Key": "k"}
	if resp, v := call(t, "GET", ts.URL+"/api/limited", nil, key); resp.StatusCode != 200 || v["remaining"] != 4.0 {
		t.Fatalf("store up: %s %v", resp.Status, v)
	}

	ts.store.down.Store(true)
	resp, v := call(t, "GET", ts.URL+"/api/limited", nil, key)
	wantJSONError(t, "limited, store down", resp, v, http.StatusServiceUnavailable, "store failed")
	if _, ok := v["allowed"]; ok || len(v) != 1 {
		t.Errorf("limited, store down: the body has more than the error: %v", v)
	}
	if h := resp.Header.Get("RateLimit"); h != "" {
		t.Errorf("limited, store down: RateLimit %q, want none: nothing was decided", h)
	}
	lines := ts.logLines(slog.LevelError, "store failed")
	if len(lines) != 1 || lines[0]["key"] != "k" || lines[0]["path"] != "/api/limited" || !strings.Contains(fmt.Sprint(lines[0]["error"]), "connection refused") {
		t.Fatalf("log after a store failure: %v\nwhole log:\n%s", lines, ts.logs.String())
	}

	resp, v = call(t, "GET", ts.URL+"/api/state?key=k", nil, nil)
	wantJSONError(t, "state, store down", resp, v, http.StatusServiceUnavailable, "store failed")
	if n := len(ts.logLines(slog.LevelError, "store failed")); n != 2 {
		t.Errorf("log after a failed Peek: %d error lines, want 2\n%s", n, ts.logs.String())
	}

	ts.store.down.Store(false)
	if resp, v := call(t, "GET", ts.URL+"/api/limited", nil, key); resp.StatusCode != 200 || v["remaining"] != 3.0 {
		t.Fatalf("store back: %s %v", resp.Status, v)
	}
	if resp, v := call(t, "GET", ts.URL+"/api/state?key=k", nil, nil); resp.StatusCode != 200 {
		t.Fatalf("state, store back: %s %v", resp.Status, v)
	}
}

// TestStoreFailureRedis: the same over go-redis pointed at a port where no
// server listens.
func TestStoreFailureRedis(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	runner, name, closeFn, err := openStore(fmt.Sprintf("redis://127.0.0.1:%d", port), "goredis")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	var logs syncBuffer
	s, err := newServer(runner, name, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.handler())
	defer ts.Close()
	resp, v := call(t, "GET", ts.URL+"/api/limited", nil, map[string]string{"X-Demo-Key": "k"})
	wantJSONError(t, "limited, no Redis", resp, v, http.StatusServiceUnavailable, "store failed")
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "store failed") || !strings.Contains(l, "key=k") {
		t.Errorf("log: %q", l)
	}
}

// TestJSONErrors: every error of the API is JSON, whoever writes it: the
// middleware (bad key or cost), the mux (404, 405) or the handlers.
func TestJSONErrors(t *testing.T) {
	ts := newTestServer(t)
	key := map[string]string{"X-Demo-Key": "k"}
	for _, c := range []struct {
		what, method, path string
		hdr                map[string]string
		status             int
		want               string
	}{
		{"no key", "GET", "/api/limited", nil, 400, "X-Demo-Key is missing"},
		{"cost not a number", "GET", "/api/limited?n=abc", key, 400, `n="abc" is not an integer`},
		{"negative cost", "GET", "/api/limited?n=-1", key, 400, "invalid cost"},
		{"cost over the capacity", "GET", "/api/limited?n=6", key, 400, "invalid cost"},
		{"empty key to Peek", "GET", "/api/state?key=", nil, 400, "invalid key"},
		{"unknown path", "GET", "/api/nope", nil, 404, "not found"},
		{"unknown path below a known one", "GET", "/api/limited/x", key, 404, "not found"},
		{"the API's root", "GET", "/api", nil, 404, "not found"},
		{"method", "POST", "/api/config", nil, 405, "Method Not Allowed"},
		{"method on the limited endpoint", "DELETE", "/api/limited", key, 405, "Method Not Allowed"},
	} {
		resp, v := call(t, c.method, ts.URL+c.path, nil, c.hdr)
		wantJSONError(t, c.what, resp, v, c.status, c.want)
		if c.status == 405 && !strings.Contains(resp.Header.Get("Allow"), "GET") {
			t.Errorf("%s: Allow %q, want the methods the path takes", c.what, resp.Header.Get("Allow"))
		}
	}
	// A client's mistake is no store failure: logged at debug level only.
	if n := len(ts.logLines(slog.LevelError, "")); n != 0 {
		t.Errorf("bad requests logged %d error lines:\n%s", n, ts.logs.String())
	}
	if n := len(ts.logLines(slog.LevelDebug, "bad request")); n != 5 {
		t.Errorf("bad requests logged %d debug lines, want 5:\n%s", n, ts.logs.String())
	}
	// The page is still served as it was.
	if resp, err := http.Get(ts.URL + "/style.css"); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") {
		t.Errorf("style.css: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// TestConfigBody: PUT /api/config takes one JSON object of known fields
// and known parameters, no more than 64 KiB, and durations that fit.
func TestConfigBody(t *testing.T) {
	ts := newTestServer(t)
	put := func(body string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("PUT", ts.URL+"/api/config", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatalf("PUT %.40q: the answer is not JSON: %v", body, err)
		}
		return resp, v
	}
	const good = `{"algorithm": "fixedwindow", "params": {"limit": 2, "window_ms": 10000}}`
	if resp, v := put(good + " \n"); resp.StatusCode != 200 || v["algorithm"] != "fixedwindow" {
		t.Fatalf("good config: %s %v", resp.Status, v)
	}
	// The largest duration a parameter may give: 2^63-1 ns, in whole ms.
	if maxMS != 9223372036854 {
		t.Fatalf("maxMS = %d", maxMS)
	}
	for _, c := range []struct {
		what, body string
		status     int
		want       string
	}{
		{"unknown field", `{"algorithm": "fixedwindow", "params": {"limit": 2, "window_ms": 10000}, "limit": 3}`, 400, "unknown field"},
		{"unknown parameter", `{"algorithm": "fixedwindow", "params": {"limit": 2, "window_ms": 10000, "burst": 3}}`, 400, "burst is not a parameter of fixedwindow"},
		{"a second object", good + good, 400, "more data after the JSON object"},
		{"trailing garbage", good + " x", 400, "more data after the JSON object"},
		{"not an object", `[1]`, 400, "cannot unmarshal"},
		{"not an integer", `{"algorithm": "fixedwindow", "params": {"limit": 2.5, "window_ms": 10000}}`, 400, "cannot unmarshal"},
		{"too large", `{"algorithm": "fixedwindow", ` + strings.Repeat(" ", 1<<16) + `"params": {"limit": 2, "window_ms": 10000}}`, 413, "request body too large"},
		{"too large after the object", good + strings.Repeat(" ", 1<<16), 413, "request body too large"},
		{"window one past the largest", `{"algorithm": "fixedwindow", "params": {"limit": 2, "window_ms": 9223372036855}}`, 400, "window_ms: 9223372036855 ms is too long"},
		// 18446744083710 ms is 2^64 ns + 10.000448384 s: converted
		// unchecked, it would wrap around to a valid window of about 10 s.
		{"window that wraps around to 10 s", `{"algorithm": "fixedwindow", "params": {"limit": 2, "window_ms": 18446744083710}}`, 400, "too long for a duration"},
		{"negative overflow", `{"algorithm": "tokenbucket", "params": {"capacity": 2, "refill_rate": 1, "refill_interval_ms": -9223372036855}}`, 400, "too long for a duration"},
	} {
		resp, v := put(c.body)
		wantJSONError(t, c.what, resp, v, c.status, c.want)
	}
	// None of them changed the limiter.
	if _, v := call(t, "GET", ts.URL+"/api/config", nil, nil); v["algorithm"] != "fixedwindow" || fmt.Sprint(v["params"]) != "map[limit:2 window_ms:10000]" {
		t.Errorf("config after the bad PUTs: %v", v)
	}
}

// TestQueryParams: every API path refuses a query parameter it does not
// take, one given twice and a query that does not parse, with a JSON 400
// that names the parameter, before anything is decided or changed.
func TestQueryParams(t *testing.T) {
	ts := newTestServer(t)
	key := map[string]string{"X-Demo-Key": "k"}
	for _, c := range []struct {
		what, method, path string
		want               string
	}{
		{"a misspelt cost", "GET", "/api/limited?cost=5", `query parameter "cost": this path takes only n`},
		{"a cost and more", "GET", "/api/limited?n=1&key=other", `query parameter "key": this path takes only n`},
		{"a cost given twice", "GET", "/api/limited?n=1&n=5", `query parameter "n": given 2 times`},
		{"a query that does not parse", "GET", "/api/limited?n=%zz", "invalid URL escape"},
		{"Peek with another parameter", "GET", "/api/state?key=k&n=2", `query parameter "n": this path takes only key`},
		{"Peek with two keys", "GET", "/api/state?key=k&key=j", `query parameter "key": given 2 times`},
		{"algorithms with a query", "GET", "/api/algorithms?all=1", `query parameter "all": this path takes none`},
		{"config with a query", "GET", "/api/config?algorithm=gcra", `query parameter "algorithm": this path takes none`},
		{"a switch with a query", "PUT", "/api/config?algorithm=gcra", `query parameter "algorithm": this path takes none`},
	} {
		var body any
		if c.method == "PUT" {
			body = config{Algorithm: "fixedwindow", Params: map[string]int64{"limit": 2, "window_ms": 10000}}
		}
		resp, v := call(t, c.method, ts.URL+c.path, body, key)
		wantJSONError(t, c.what, resp, v, http.StatusBadRequest, c.want)
	}
	// Nothing was decided or switched: the token bucket at its defaults
	// still has all 5 tokens for the key, less this request's.
	if _, v := call(t, "GET", ts.URL+"/api/config", nil, nil); v["algorithm"] != "tokenbucket" {
		t.Errorf("config after the bad queries: %v", v)
	}
	if resp, v := call(t, "GET", ts.URL+"/api/limited?n=1", nil, key); resp.StatusCode != 200 || v["remaining"] != 4.0 {
		t.Errorf("first decided request: %s %v, want 200 with 4 remaining", resp.Status, v)
	}
	if resp, v := call(t, "GET", ts.URL+"/api/limited", nil, key); resp.StatusCode != 200 || v["remaining"] != 3.0 {
		t.Errorf("without a query: %s %v, want 200 with 3 remaining", resp.Status, v)
	}
	if n := len(ts.logLines(slog.LevelDebug, "bad request")); n != 9 {
		t.Errorf("bad queries logged %d debug lines, want 9:\n%s", n, ts.logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
