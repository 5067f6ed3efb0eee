package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/ratekit/internal/redistest"
	"github.com/ratekit/ratekit/store/memory"
)

func newTestServer(t *testing.T) *httptest.Server {
	m, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := newServer(m, "memory")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return ts
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
	if n := len(meta["algorithms"].([]any)); n != 6 || meta["store"] != "memory" {
		t.Fatalf("algorithms: %d, store %v", n, meta["store"])
	}
	// Every algorithm can be chosen, and limits what it should.
	for _, a := range algorithms {
		params := map[string]int64{}
		for _, p := range a.Params {
			params[p.Name] = p.Default
		}
		// A limit of 3 (or burst/capacity 3), whatever the parameter's name.
		for _, name := range []string{"capacity", "limit", "burst"} {
			if _, ok := params[name]; ok {
				params[name] = 3
			}
		}
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
	req, _ := http.NewRequest("GET", ts.URL+"/api/limited?n=-1", nil)
	req.Header.Set("X-Demo-Key", "k")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Errorf("negative cost: %v, %v", resp, err)
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

func TestRunShutsDownOnCancel(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, fmt.Sprintf("127.0.0.1:%d", port), "", "goredis", &out) }()
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
		s, err := newServer(runner, name)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.handler())
		resp, v := call(t, "GET", ts.URL+"/api/limited", nil, map[string]string{"X-Demo-Key": "k"})
		if resp.StatusCode != 200 || v["remaining"].(float64) != 4 || !strings.HasPrefix(name, label) {
			t.Fatalf("%s: %s %v %s", client, resp.Status, v, name)
		}
		ts.Close()
		closeFn()
	}
	for _, bad := range [][2]string{{"localhost:6379", "goredis"}, {"redis://" + srv.Addr, "jedis"}, {"http://x", "goredis"}} {
		if _, _, _, err := openStore(bad[0], bad[1]); err == nil {
			t.Errorf("openStore(%q, %q): no error", bad[0], bad[1])
		}
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
