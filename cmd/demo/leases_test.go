package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// sendRaw sends body as it is and decodes the JSON answer.
func sendRaw(t *testing.T, method, url, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s %.40q: the answer is not JSON: %v", method, url, body, err)
	}
	return resp, v
}

// acquire asks for a lease of cost n on key and checks the status.
func acquire(t *testing.T, ts *testServer, key string, n int64, status int) (*http.Response, map[string]any) {
	t.Helper()
	resp, v := call(t, "POST", fmt.Sprintf("%s/api/leases?n=%d", ts.URL, n), nil, map[string]string{"X-Demo-Key": key})
	if resp.StatusCode != status {
		t.Fatalf("acquire %d on %q: %s %v, want %d", n, key, resp.Status, v, status)
	}
	return resp, v
}

// release gives a lease back and returns the answer's "released".
func release(t *testing.T, ts *testServer, lease leaseJSON) bool {
	t.Helper()
	resp, v := call(t, "POST", ts.URL+"/api/leases/release", lease, nil)
	released, ok := v["released"].(bool)
	if resp.StatusCode != 200 || !ok {
		t.Fatalf("release %+v: %s %v", lease, resp.Status, v)
	}
	return released
}

// inFlight peeks at key and returns the cost in flight.
func inFlight(t *testing.T, ts *testServer, key string) int64 {
	t.Helper()
	resp, v := call(t, "GET", ts.URL+"/api/leases/state?key="+key, nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("state of %q: %s %v", key, resp.Status, v)
	}
	return int64(v["in_flight"].(float64))
}

// leaseOf reads the lease of an allowed acquire's answer.
func leaseOf(t *testing.T, v map[string]any) leaseJSON {
	t.Helper()
	l, ok := v["lease"].(map[string]any)
	if !ok {
		t.Fatalf("no lease in %v", v)
	}
	return leaseJSON{Key: l["key"].(string), N: int64(l["n"].(float64)), ID: l["id"].(string)}
}

var leaseID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// noLeaseIDs fails if the log holds any of the leases' IDs.
func noLeaseIDs(t *testing.T, ts *testServer, leases ...leaseJSON) {
	t.Helper()
	log := ts.logs.String()
	for _, l := range leases {
		if strings.Contains(log, l.ID) {
			t.Errorf("the log holds lease ID %s, a secret:\n%s", l.ID, log)
		}
	}
}

// TestLeases: the concurrency limiter's API grants leases up to the
// limit, denies the next with Retry-After (the time until the oldest
// lease expires), frees a slot on release, refuses to free one for a
// forged lease, another key's or a released one, and lets leases expire
// after their TTL, on the store's (fake) clock.
func TestLeases(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ts := newTestServer(t, memory.WithClock(clock))
	if resp, v := call(t, "GET", ts.URL+"/api/leases/config", nil, nil); resp.StatusCode != 200 || v["limit"] != 3.0 || v["ttl_ms"] != 30000.0 {
		t.Fatalf("default config: %s %v, want limit 3 and ttl_ms 30000", resp.Status, v)
	}
	if resp, v := sendRaw(t, "PUT", ts.URL+"/api/leases/config", `{"limit": 3, "ttl_ms": 10000}`); resp.StatusCode != 200 || v["ttl_ms"] != 10000.0 {
		t.Fatalf("PUT config: %s %v", resp.Status, v)
	}

	// Three leases of cost 1, a second apart: the limit.
	var held []leaseJSON
	for i := int64(1); i <= 3; i++ {
		_, v := acquire(t, ts, "k", 1, 200)
		l := leaseOf(t, v)
		if !leaseID.MatchString(l.ID) || l.Key != "k" || l.N != 1 {
			t.Fatalf("lease %d: %+v", i, l)
		}
		if v["in_flight"] != float64(i) || v["remaining"] != float64(3-i) || v["limit"] != 3.0 || v["ttl_ms"] != 10000.0 {
			t.Fatalf("lease %d: %v, want %d in flight of 3", i, v, i)
		}
		held = append(held, l)
		clock.Advance(time.Second)
	}
	if held[0].ID == held[1].ID || held[1].ID == held[2].ID {
		t.Fatalf("two leases with one ID: %+v", held)
	}
	// The fourth is denied until the oldest expires, 10 s after its
	// acquire, 7 s from now.
	resp, v := acquire(t, ts, "k", 1, 429)
	if resp.Header.Get("Retry-After") != "7" || v["retry_after_ms"] != 7000.0 || v["allowed"] != false || v["in_flight"] != 3.0 {
		t.Fatalf("denied: Retry-After %q, %v", resp.Header.Get("Retry-After"), v)
	}
	if _, ok := v["lease"]; ok {
		t.Fatalf("a denial granted a lease: %v", v)
	}
	// Another key has its own slots.
	_, v = acquire(t, ts, "other", 3, 200)
	other := leaseOf(t, v)

	// Forged leases free nothing: a made-up ID, another key's lease, a
	// lease with another cost.
	for what, forged := range map[string]leaseJSON{
		"a made-up ID":      {Key: "k", N: 1, ID: "0123456789abcdef0123456789abcdef"},
		"another key's":     {Key: "k", N: 3, ID: other.ID},
		"on the wrong key":  {Key: "other", N: 1, ID: held[0].ID},
		"with another cost": {Key: "k", N: 2, ID: held[0].ID},
	} {
		if release(t, ts, forged) {
			t.Errorf("release of %s lease: released", what)
		}
	}
	if n := inFlight(t, ts, "k"); n != 3 {
		t.Fatalf("after forged releases: %d in flight, want 3", n)
	}

	// A release frees its slot, once.
	if !release(t, ts, held[1]) {
		t.Fatal("release of a live lease: not released")
	}
	if n := inFlight(t, ts, "k"); n != 2 {
		t.Fatalf("after a release: %d in flight, want 2", n)
	}
	if _, v := call(t, "POST", ts.URL+"/api/leases/release", held[1], nil); v["released"] != false || v["why"] == nil {
		t.Fatalf("second release of a lease: %v, want released false and why", v)
	}
	// Cost 2 does not fit in the 1 left: retry when the oldest expires.
	resp, v = acquire(t, ts, "k", 2, 429)
	if resp.Header.Get("Retry-After") != "7" || v["in_flight"] != 2.0 {
		t.Fatalf("cost 2 with 1 left: Retry-After %q, %v", resp.Header.Get("Retry-After"), v)
	}

	// The leases expire: the first 10 s after its acquire; the third,
	// never released, 2 s after that.
	clock.Advance(7 * time.Second)
	if n := inFlight(t, ts, "k"); n != 1 {
		t.Fatalf("after the first lease's TTL: %d in flight, want 1", n)
	}
	if release(t, ts, held[0]) {
		t.Error("release of an expired lease: released")
	}
	clock.Advance(2 * time.Second)
	if n := inFlight(t, ts, "k"); n != 0 {
		t.Fatalf("after every TTL: %d in flight, want 0", n)
	}
	_, v = acquire(t, ts, "k", 3, 200)
	last := leaseOf(t, v)

	// A new configuration starts with nothing in flight; the old
	// limiter's leases free nothing in it.
	if resp, v := sendRaw(t, "PUT", ts.URL+"/api/leases/config", `{"limit": 1, "ttl_ms": 5000}`); resp.StatusCode != 200 {
		t.Fatalf("PUT config: %s %v", resp.Status, v)
	}
	if n := inFlight(t, ts, "k"); n != 0 {
		t.Fatalf("after a new config: %d in flight, want 0", n)
	}
	_, v = acquire(t, ts, "k", 1, 200)
	if release(t, ts, last) {
		t.Error("the old limiter's lease released in the new one")
	}
	acquire(t, ts, "k", 1, 429)
	if !release(t, ts, leaseOf(t, v)) {
		t.Error("release under the new config: not released")
	}
	noLeaseIDs(t, ts, append(held, other, last, leaseOf(t, v))...)
}

// TestLeasesBadInput: every bad request to the lease API is a JSON 400
// (413 for a body too large) that names what is wrong, changes nothing,
// and is logged at debug level without the lease's ID.
func TestLeasesBadInput(t *testing.T) {
	ts := newTestServer(t)
	_, v := acquire(t, ts, "k", 1, 200)
	good := leaseOf(t, v)
	key := map[string]string{"X-Demo-Key": "k"}
	for _, c := range []struct {
		what, method, path string
		hdr                map[string]string
		status             int
		want               string
	}{
		{"acquire with no key", "POST", "/api/leases", nil, 400, "X-Demo-Key is missing"},
		{"a key longer than a header key may be", "POST", "/api/leases", map[string]string{"X-Demo-Key": strings.Repeat("k", 257)}, 400, "longer than 256"},
		{"cost not a number", "POST", "/api/leases?n=abc", key, 400, `n="abc" is not an integer`},
		{"cost 0", "POST", "/api/leases?n=0", key, 400, "invalid cost"},
		{"cost over the limit", "POST", "/api/leases?n=4", key, 400, "invalid cost"},
		{"a misspelt cost", "POST", "/api/leases?cost=2", key, 400, `query parameter "cost": this path takes only n`},
		{"acquire by DELETE", "DELETE", "/api/leases", key, 405, "Method Not Allowed"},
		{"release by PUT", "PUT", "/api/leases/release", nil, 405, "Method Not Allowed"},
		{"state with no key", "GET", "/api/leases/state", nil, 400, "invalid key"},
		{"state with a cost", "GET", "/api/leases/state?key=k&n=2", nil, 400, `query parameter "n": this path takes only key`},
	} {
		resp, v := call(t, c.method, ts.URL+c.path, nil, c.hdr)
		wantJSONError(t, c.what, resp, v, c.status, c.want)
	}

	// A lease ID a digit off the real one: not a lease, and not logged.
	near := good.ID[:31] + "A"
	body := func(l leaseJSON) string { b, _ := json.Marshal(l); return string(b) }
	for _, c := range []struct {
		what, body string
		status     int
		want       string
	}{
		{"an ID in capitals", body(leaseJSON{Key: "k", N: 1, ID: near}), 400, "invalid lease"},
		{"a short ID", body(leaseJSON{Key: "k", N: 1, ID: good.ID[:31]}), 400, "not 32 lowercase hex digits"},
		{"no lease at all", `{}`, 400, "invalid lease"},
		{"cost 0", body(leaseJSON{Key: "k", N: 0, ID: good.ID}), 400, "N = 0 is outside"},
		{"no key", body(leaseJSON{N: 1, ID: good.ID}), 400, "invalid key"},
		{"an unknown field", `{"key": "k", "n": 1, "id": "` + good.ID + `", "ttl_ms": 5}`, 400, "unknown field"},
		{"not JSON", `{"key": `, 400, "body"},
		{"a second object", body(good) + body(good), 400, "more data after the JSON object"},
		{"a cost that is not an integer", `{"key": "k", "n": 1.5, "id": "` + good.ID + `"}`, 400, "cannot unmarshal"},
		{"too large", `{"key": "k", ` + strings.Repeat(" ", 1<<16) + `"n": 1, "id": "` + good.ID + `"}`, 413, "request body too large"},
	} {
		resp, v := sendRaw(t, "POST", ts.URL+"/api/leases/release", c.body)
		wantJSONError(t, "release: "+c.what, resp, v, c.status, c.want)
	}

	for _, c := range []struct {
		what, body string
		status     int
		want       string
	}{
		{"no limit", `{"ttl_ms": 1000}`, 400, "limit is missing"},
		{"no TTL", `{"limit": 2}`, 400, "ttl_ms is missing"},
		{"limit 0", `{"limit": 0, "ttl_ms": 1000}`, 400, "Limit must be positive"},
		{"limit over MaxLimit", `{"limit": 10001, "ttl_ms": 1000}`, 400, "more than MaxLimit"},
		{"TTL 0", `{"limit": 2, "ttl_ms": 0}`, 400, "TTL must be positive"},
		{"negative TTL", `{"limit": 2, "ttl_ms": -5}`, 400, "TTL must be positive"},
		{"TTL that wraps around", `{"limit": 2, "ttl_ms": 18446744083710}`, 400, "too long for a duration"},
		{"an unknown field", `{"limit": 2, "ttl_ms": 1000, "algorithm": "gcra"}`, 400, "unknown field"},
		{"trailing garbage", `{"limit": 2, "ttl_ms": 1000} x`, 400, "more data after the JSON object"},
		{"too large", `{"limit": 2, ` + strings.Repeat(" ", 1<<16) + `"ttl_ms": 1000}`, 413, "request body too large"},
	} {
		resp, v := sendRaw(t, "PUT", ts.URL+"/api/leases/config", c.body)
		wantJSONError(t, "config: "+c.what, resp, v, c.status, c.want)
	}

	// Nothing changed: the default limiter, the good lease still held.
	if _, v := call(t, "GET", ts.URL+"/api/leases/config", nil, nil); v["limit"] != 3.0 || v["ttl_ms"] != 30000.0 {
		t.Errorf("config after the bad requests: %v", v)
	}
	if n := inFlight(t, ts, "k"); n != 1 {
		t.Errorf("after the bad requests: %d in flight, want 1", n)
	}
	if !release(t, ts, good) {
		t.Error("the good lease: not released")
	}
	if n := len(ts.logLines(slog.LevelError, "")); n != 0 {
		t.Errorf("bad requests logged %d error lines:\n%s", n, ts.logs.String())
	}
	if n := len(ts.logLines(slog.LevelDebug, "bad request")); n != 13 {
		t.Errorf("bad requests logged %d debug lines, want 13: each one the limiter, demoKey, cost or the query refused (a body that does not parse is not logged, as for PUT /api/config):\n%s", n, ts.logs.String())
	}
	if strings.Contains(ts.logs.String(), strings.Repeat("k", 257)) {
		t.Error("the log holds a refused key whole")
	}
	if strings.Contains(ts.logs.String(), near) || strings.Contains(ts.logs.String(), good.ID[:31]) {
		t.Errorf("the log holds a lease ID that was sent:\n%s", ts.logs.String())
	}
	noLeaseIDs(t, ts, good)
}

// TestLeasesStoreFailure: while the store fails, acquire, release and
// Peek fail closed (503, the store's error in JSON, no lease granted),
// each failure is logged without the lease's ID, and a lease whose
// release failed is still held once the store is back.
func TestLeasesStoreFailure(t *testing.T) {
	ts := newTestServer(t)
	_, v := acquire(t, ts, "k", 2, 200)
	held := leaseOf(t, v)

	ts.store.down.Store(true)
	resp, v := call(t, "POST", ts.URL+"/api/leases", nil, map[string]string{"X-Demo-Key": "k"})
	wantJSONError(t, "acquire, store down", resp, v, http.StatusServiceUnavailable, "store failed")
	if len(v) != 1 || resp.Header.Get("Retry-After") != "" {
		t.Errorf("acquire, store down: %v, Retry-After %q: more than the error", v, resp.Header.Get("Retry-After"))
	}
	resp, v = call(t, "POST", ts.URL+"/api/leases/release", held, nil)
	wantJSONError(t, "release, store down", resp, v, http.StatusServiceUnavailable, "store failed")
	resp, v = call(t, "GET", ts.URL+"/api/leases/state?key=k", nil, nil)
	wantJSONError(t, "state, store down", resp, v, http.StatusServiceUnavailable, "store failed")
	lines := ts.logLines(slog.LevelError, "store failed")
	if len(lines) != 3 {
		t.Fatalf("%d error lines, want 3 (acquire, release, state):\n%s", len(lines), ts.logs.String())
	}
	for _, l := range lines {
		if l["key"] != "k" || !strings.Contains(fmt.Sprint(l["error"]), "connection refused") {
			t.Errorf("error line %v: want the key and the store's error", l)
		}
	}
	noLeaseIDs(t, ts, held)

	ts.store.down.Store(false)
	if n := inFlight(t, ts, "k"); n != 2 {
		t.Fatalf("store back: %d in flight, want the lease's 2", n)
	}
	if !release(t, ts, held) {
		t.Fatal("store back: the lease was not released")
	}
	if n := inFlight(t, ts, "k"); n != 0 {
		t.Fatalf("after the release: %d in flight, want 0", n)
	}
}
