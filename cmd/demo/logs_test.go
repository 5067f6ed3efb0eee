package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/logpace"
)

// storeCall is a request of the API that calls the store, about key.
type storeCall struct {
	what, method, path string
	hdr                map[string]string
	body               any
	key                string
	msg                string // of its line when the store fails
}

// storeCalls are the API's requests that call the store, each about a key
// of its own, named where the page names it: X-Demo-Key, ?key= or the
// released lease.
func storeCalls() []storeCall {
	const rate, conc = "rate limiter store failed", "concurrency limiter store failed"
	return []storeCall{
		{"limited", "GET", "/api/limited", map[string]string{"X-Demo-Key": "limited-key"}, nil, "limited-key", rate},
		{"state", "GET", "/api/state?key=state-key", nil, nil, "state-key", rate},
		{"acquire", "POST", "/api/leases", map[string]string{"X-Demo-Key": "acquire-key"}, nil, "acquire-key", conc},
		{"release", "POST", "/api/leases/release", nil, leaseJSON{Key: "release-key", N: 1, ID: strings.Repeat("ab", 16)}, "release-key", conc},
		{"lease state", "GET", "/api/leases/state?key=lease-state-key", nil, nil, "lease-state-key", conc},
	}
}

// TestLogPaced: while the store is down, the page's polling does not flood
// the log: each kind of failure (its message and path) is logged at most
// once every logpace.Every, with the key, and the next line counts the
// failures left out ("suppressed"); a bad request is logged every time.
func TestLogPaced(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ts := newTestServerLogAt(t, clock)
	ts.store.down.Store(true)
	calls := storeCalls()
	round := func(times int) {
		t.Helper()
		for range times {
			for _, c := range calls {
				resp, v := call(t, c.method, ts.URL+c.path, c.body, c.hdr)
				wantJSONError(t, c.what, resp, v, http.StatusServiceUnavailable, "store failed")
			}
		}
	}
	// wantLines checks that each call's kind has the lines given, the last
	// with suppressed as given.
	wantLines := func(when string, lines int, suppressed float64) {
		t.Helper()
		for _, c := range calls {
			var got []map[string]any
			for _, l := range ts.logLines(slog.LevelError, c.msg) {
				if l["path"] == strings.Split(c.path, "?")[0] {
					got = append(got, l)
				}
			}
			if len(got) != lines {
				t.Errorf("%s, %s: %d error lines, want %d:\n%s", when, c.what, len(got), lines, ts.logs.String())
				continue
			}
			if l := got[lines-1]; l["key"] != c.key || l["suppressed"] != suppressed || !strings.Contains(fmt.Sprint(l["error"]), "connection refused") {
				t.Errorf("%s, %s: last line %v, want key %q, suppressed %v and the store's error", when, c.what, l, c.key, suppressed)
			}
		}
		if n := len(ts.logLines(slog.LevelError, "")); n != lines*len(calls) {
			t.Errorf("%s: %d error lines in all, want %d:\n%s", when, n, lines*len(calls), ts.logs.String())
		}
	}

	round(4)
	wantLines("4 failures each", 1, 0)
	clock.Advance(logpace.Every - time.Millisecond)
	round(1)
	wantLines("5 failures each, within logpace.Every", 1, 0)
	clock.Advance(time.Millisecond)
	round(2)
	wantLines("7 failures each, logpace.Every later", 2, 4)

	// Bad requests: every one is logged, at debug level.
	for range 3 {
		resp, v := call(t, "GET", ts.URL+"/api/state?key=k&n=2", nil, nil)
		wantJSONError(t, "bad query", resp, v, http.StatusBadRequest, "this path takes only key")
	}
	if n := len(ts.logLines(slog.LevelDebug, "bad request")); n != 3 {
		t.Errorf("3 bad requests logged %d debug lines, want 3:\n%s", n, ts.logs.String())
	}
}

// TestLogKeys: every line about a request on a key names the key the
// request gave, wherever it gave it (X-Demo-Key, ?key=, a lease's key),
// or its length when it is too long to be a key; a line about a path on
// no key has no key.
func TestLogKeys(t *testing.T) {
	ts := newTestServer(t)
	long := strings.Repeat("x", 1000)
	// Bad requests, logged at debug level, with the store up.
	for _, c := range []struct {
		what, method, path string
		hdr                map[string]string
		key                any // the line's "key", or nil for none
		keyBytes           any // the line's "key_bytes", or nil for none
	}{
		{"limited, bad cost", "GET", "/api/limited?n=x", map[string]string{"X-Demo-Key": "k1"}, "k1", nil},
		{"limited, bad query", "GET", "/api/limited?cost=1", map[string]string{"X-Demo-Key": "k2"}, "k2", nil},
		{"limited, key too long", "GET", "/api/limited", map[string]string{"X-Demo-Key": long}, nil, 1000.0},
		{"limited, no key", "GET", "/api/limited", nil, "", nil},
		{"state, bad query", "GET", "/api/state?key=k3&n=2", nil, "k3", nil},
		{"state, key too long", "GET", "/api/state?key=" + strings.Repeat("x", core.MaxKeyLen+1), nil, nil, float64(core.MaxKeyLen + 1)},
		{"acquire, bad cost", "POST", "/api/leases?n=x", map[string]string{"X-Demo-Key": "k4"}, "k4", nil},
		{"acquire, key too long", "POST", "/api/leases", map[string]string{"X-Demo-Key": long}, nil, 1000.0},
		{"lease state, bad query", "GET", "/api/leases/state?key=k5&n=1", nil, "k5", nil},
		{"config, bad query", "GET", "/api/config?x=1", nil, nil, nil},
	} {
		before := len(ts.logLines(slog.LevelDebug, ""))
		resp, _ := call(t, c.method, ts.URL+c.path, nil, c.hdr)
		lines := ts.logLines(slog.LevelDebug, "")
		if resp.StatusCode != http.StatusBadRequest || len(lines) != before+1 {
			t.Errorf("%s: %s, %d lines logged, want 400 and 1", c.what, resp.Status, len(lines)-before)
			continue
		}
		if l := lines[before]; l["key"] != c.key || l["key_bytes"] != c.keyBytes {
			t.Errorf("%s: line %v, want key %v, key_bytes %v", c.what, l, c.key, c.keyBytes)
		}
	}
	// Store failures, logged at error level.
	ts.store.down.Store(true)
	for _, c := range storeCalls() {
		resp, v := call(t, c.method, ts.URL+c.path, c.body, c.hdr)
		wantJSONError(t, c.what, resp, v, http.StatusServiceUnavailable, "store failed")
	}
	lines := ts.logLines(slog.LevelError, "")
	if len(lines) != len(storeCalls()) {
		t.Fatalf("%d error lines, want %d:\n%s", len(lines), len(storeCalls()), ts.logs.String())
	}
	for i, c := range storeCalls() {
		if l := lines[i]; l["key"] != c.key {
			t.Errorf("%s, store down: line %v, want key %q", c.what, l, c.key)
		}
	}
}

// TestStoreHangs: a store that does not answer (a paused Redis server, a
// client that retries while the server is down) fails each call that
// reaches it after storeTimeout, a 503 like any store failure, instead of
// holding the request, and the page's polling, until the client gives up.
func TestStoreHangs(t *testing.T) {
	ts := newTestServer(t)
	ts.store.hang.Store(true)
	client := &http.Client{Timeout: time.Minute}
	var wg sync.WaitGroup
	for _, c := range storeCalls() {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(context.Background(), c.method, ts.URL+c.path, jsonBody(c.body))
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("%s, store hangs: %v", c.what, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("%s, store hangs: %s, want 503", c.what, resp.Status)
			}
		})
	}
	wg.Wait()
	if n := len(ts.logLines(slog.LevelError, "store failed")); n != len(storeCalls()) {
		t.Errorf("%d error lines, want %d:\n%s", n, len(storeCalls()), ts.logs.String())
	}
}

// TestGoRedisLog: go-redis's lines (one for each call that cannot dial)
// are paced as the demo's own, at warning level.
func TestGoRedisLog(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var logs syncBuffer
	g := &goredisLog{log: slog.New(slog.NewTextHandler(&logs, nil)), clock: clock}
	ctx := context.Background()
	for range 5 {
		g.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %s", 5, "connection refused")
	}
	clock.Advance(logpace.Every)
	g.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %s", 5, "connection refused")
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "failed to dial after 5 attempts: connection refused") ||
		!strings.HasSuffix(lines[0], "suppressed=0") || !strings.HasSuffix(lines[1], "suppressed=4") {
		t.Errorf("go-redis lines logged:\n%s\nwant 2 warnings, the second with suppressed=4", logs.String())
	}
}

// jsonBody is v in JSON, or no body for nil.
func jsonBody(v any) io.Reader {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}
