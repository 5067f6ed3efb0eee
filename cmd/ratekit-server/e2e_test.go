package main

import (
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/testkit/redistest"
)

func (r *rls) send(req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.client.ShouldRateLimit(ctx, req)
}

const minute = rlsv3.RateLimitResponse_RateLimit_MINUTE

func TestResponseShape(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := startRLS(t, backend, fakeclock.New(epoch), nil)

			// shadow_mode: over the limit, but OK, counted in shadow_mode.
			for i := range 3 {
				checkResponse(t, "shadow", r.call("extras", desc("shadow", "x")), ok, wantStatus{ok, 2, minute, uint32(max(0, 1-i))})
			}
			if got := r.stat("ratelimit.service.rate_limit.extras.shadow.shadow_mode"); got != 1 {
				t.Errorf("shadow.shadow_mode = %d, want 1", got)
			}

			// unlimited: OK, MaxUint32 remaining, no limit.
			checkResponse(t, "unlimited", r.call("extras", desc("unlimited", "x")), ok, wantStatus{code: ok, remaining: math.MaxUint32})

			// replaces: the replaced rule is neither checked nor counted.
			for i := range 2 {
				checkResponse(t, "replaces", r.call("extras", desc("small", "r"), desc("replacer", "r")), ok,
					wantStatus{code: ok}, wantStatus{ok, 5, minute, uint32(4 - i)})
			}
			checkResponse(t, "replaced, alone", r.call("extras", desc("small", "r")), ok, wantStatus{ok, 3, minute, 2})

			// Nested descriptors: depth must match.
			checkResponse(t, "nested", r.call("extras", desc("parent", "one", "child", "c")), ok,
				wantStatus{ok, 4, rlsv3.RateLimitResponse_RateLimit_HOUR, 3})
			checkResponse(t, "nested, short", r.call("extras", desc("parent", "one")), ok, wantStatus{code: ok})

			// hits_addend: the request's, then a descriptor's own (0 only checks).
			resp, err := r.send(&rlsv3.RateLimitRequest{Domain: "extras", HitsAddend: 2, Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "h")}})
			if err != nil {
				t.Fatal(err)
			}
			checkResponse(t, "hits_addend 2", resp, ok, wantStatus{ok, 3, minute, 1})
			check := desc("small", "h")
			check.HitsAddend = wrapperspb.UInt64(0)
			resp, err = r.send(&rlsv3.RateLimitRequest{Domain: "extras", HitsAddend: 5, Descriptors: []*commonv3.RateLimitDescriptor{check}})
			if err != nil {
				t.Fatal(err)
			}
			checkResponse(t, "descriptor hits_addend 0", resp, ok, wantStatus{ok, 3, minute, 1})
			resp, err = r.send(&rlsv3.RateLimitRequest{Domain: "extras", HitsAddend: 2, Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "h")}})
			if err != nil {
				t.Fatal(err)
			}
			checkResponse(t, "hits_addend 2 over", resp, over, wantStatus{over, 3, minute, 1})

			// quota_mode: over only when every quota descriptor is.
			checkResponse(t, "quota", r.call("extras", desc("quota", "q"), desc("small", "q")), ok,
				wantStatus{ok, 1, minute, 0}, wantStatus{ok, 3, minute, 2})
			checkResponse(t, "one quota over, one not", r.call("extras", desc("quota", "q"), desc("quota", "q2")), ok,
				wantStatus{over, 1, minute, 0}, wantStatus{ok, 1, minute, 0})
			checkResponse(t, "every quota over", r.call("extras", desc("quota", "q"), desc("quota", "q2"), desc("small", "q")), over,
				wantStatus{over, 1, minute, 0}, wantStatus{over, 1, minute, 0}, wantStatus{ok, 3, minute, 1})

			// The request's limit override applies in a known domain.
			o := desc("anything", "o")
			o.Limit = &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
			for i := range 3 {
				resp, err := r.send(&rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{o}})
				if err != nil {
					t.Fatal(err)
				}
				code := ok
				if i == 2 {
					code = over
				}
				checkResponse(t, "override", resp, code, wantStatus{code, 2, minute, uint32(max(0, 1-i))})
			}
			if got := r.stat("ratelimit.service.rate_limit.extras.anything_o.total_hits"); got != 3 {
				t.Errorf("override total_hits = %d, want 3", got)
			}
		})
	}
}

func TestGlobalShadowModeAndHeaders(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{"SHADOW_MODE": "true", "LIMIT_RESPONSE_HEADERS_ENABLED": "true"})
	for i := range 4 {
		resp := r.call("extras", desc("small", "g"), desc("parent", "one", "child", "g"))
		code := ok
		if i == 3 {
			code = over
		}
		// The status says OVER_LIMIT; the overall code stays OK.
		checkResponse(t, "global shadow", resp, ok, wantStatus{code, 3, minute, uint32(max(0, 2-i))},
			wantStatus{ok, 4, rlsv3.RateLimitResponse_RateLimit_HOUR, uint32(3 - i)})
		headers := map[string]string{}
		for _, h := range resp.GetResponseHeadersToAdd() {
			headers[h.GetKey()] = h.GetValue()
		}
		want := map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": itoa(max(0, 2-i)), "RateLimit-Reset": "59"}
		for k, v := range want {
			if headers[k] != v {
				t.Errorf("call %d: header %s = %q, want %q (all: %v)", i, k, headers[k], v, headers)
			}
		}
	}
	if got := r.stat("ratelimit.service.global_shadow_mode"); got != 1 {
		t.Errorf("global_shadow_mode = %d, want 1", got)
	}
}

// With STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT (all descriptors decided at
// once), descriptors of different costs cannot be: InvalidArgument.
func TestAtomicRefusesMixedCosts(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": "true"})
	costly := desc("small", "m")
	costly.HitsAddend = wrapperspb.UInt64(2)
	_, err := r.send(&rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{costly, desc("parent", "one", "child", "m")}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("ShouldRateLimit with costs 2 and 1 = %v, want InvalidArgument", err)
	}
}

// A malformed request is refused with InvalidArgument and counts nothing.
func TestBadRequests(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := startRLS(t, backend, fakeclock.New(epoch), nil)
			many := make([]*commonv3.RateLimitDescriptor, maxDescriptors+1)
			for i := range many {
				many[i] = desc("small", "bad")
			}
			badUnit := desc("small", "bad")
			badUnit.Limit = &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_UNKNOWN}
			tests := []struct {
				name string
				req  *rlsv3.RateLimitRequest
			}{
				{"empty domain", &rlsv3.RateLimitRequest{Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "bad")}}},
				{"no descriptors", &rlsv3.RateLimitRequest{Domain: "extras"}},
				{"no entries", &rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "bad"), {}}}},
				{"empty key", &rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "bad"), desc("", "v")}}},
				{"too many descriptors", &rlsv3.RateLimitRequest{Domain: "extras", Descriptors: many}},
				{"oversized value", &rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "bad"), desc("small", strings.Repeat("v", maxEntryLen+1))}}},
				{"override of no unit", &rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "bad"), badUnit}}},
			}
			for _, tt := range tests {
				_, err := r.send(tt.req)
				if status.Code(err) != codes.InvalidArgument {
					t.Errorf("%s: ShouldRateLimit = %v, want InvalidArgument", tt.name, err)
				}
			}
			// Nothing was counted.
			checkResponse(t, "after bad requests", r.call("extras", desc("small", "bad")), ok, wantStatus{ok, 3, minute, 2})
			if got := r.stat("ratelimit.service.rate_limit.extras.small.total_hits"); got != 1 {
				t.Errorf("small.total_hits = %d, want 1", got)
			}
		})
	}
}

func TestHTTP(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), nil)
	post := func(body string) (int, string) {
		resp, err := http.Post("http://"+r.srv.HTTPAddr+"/json", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	req := `{"domain":"extras","descriptors":[{"entries":[{"key":"small","value":"json"}]}],"hitsAddend":3}`
	if code, body := post(req); code != 200 || !strings.Contains(body, `"overallCode":"OK"`) || !strings.Contains(body, `"requestsPerUnit":3`) {
		t.Errorf("POST /json = %d %s, want 200 OK with the limit", code, body)
	}
	if code, body := post(req); code != 429 || !strings.Contains(body, `"overallCode":"OVER_LIMIT"`) {
		t.Errorf("POST /json over the limit = %d %s, want 429 OVER_LIMIT", code, body)
	}
	if code, _ := post(`{"domain":`); code != 400 {
		t.Errorf("POST /json with bad JSON = %d, want 400", code)
	}
	if code, _ := post(`{"domain":"extras"}`); code != 400 {
		t.Errorf("POST /json with no descriptors = %d, want 400", code)
	}

	get := func(addr, path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(r.srv.HTTPAddr, "/healthcheck"); code != 200 || body != "OK" {
		t.Errorf("GET /healthcheck = %d %q, want 200 OK", code, body)
	}
	if code, body := get(r.srv.DebugAddr, "/rlconfig"); code != 200 || !strings.Contains(body, "another.key2: unit=MINUTE requests_per_unit=20, shadow_mode: false, quota_mode: false\n") {
		t.Errorf("GET /rlconfig = %d %q, want another.key2's line", code, body)
	}
	if code, body := get(r.srv.DebugAddr, "/stats"); code != 200 || !strings.Contains(body, "ratelimit.service.rate_limit.extras.small.total_hits: 6\n") {
		t.Errorf("GET /stats = %d %q, want small's total_hits", code, body)
	}
	if code, body := get(r.srv.DebugAddr, "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("GET /debug/pprof/ = %d, want the pprof index", code)
	}
}

func TestPrometheus(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{"USE_PROMETHEUS": "true", "PROMETHEUS_ADDR": "127.0.0.1:0"})
	for range 4 {
		r.call("extras", desc("small", "p"))
	}
	resp, err := http.Get("http://" + r.srv.PrometheusAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`ratelimit_service_rate_limit_total_hits{domain="extras",key1="small",key2=""} 4`,
		`ratelimit_service_rate_limit_over_limit{domain="extras",key1="small",key2=""} 1`,
		`ratelimit_service_rate_limit_within_limit{domain="extras",key1="small",key2=""} 3`,
		`ratelimit_service_config_load_success 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, b)
		}
	}
}

func (r *rls) serving(service string) healthpb.HealthCheckResponse_ServingStatus {
	r.t.Helper()
	resp, err := r.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		r.t.Fatalf("health check %q: %v", service, err)
	}
	return resp.GetStatus()
}

// On SIGTERM the health checks fail first; calls keep being answered for
// the drain delay; then the server stops.
func TestDrain(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), nil)
	for _, svc := range []string{"", healthServiceName} {
		if got := r.serving(svc); got != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q = %v before SIGTERM, want SERVING", svc, got)
		}
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r.srv.drain(ctx, 2*time.Second)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for r.serving(healthServiceName) != healthpb.HealthCheckResponse_NOT_SERVING {
		if time.Now().After(deadline) {
			t.Fatal("health stayed SERVING after drain began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.serving(""); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf(`health "" = %v while draining, want NOT_SERVING`, got)
	}
	resp, err := http.Get("http://" + r.srv.HTTPAddr + "/healthcheck")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("GET /healthcheck while draining = %d, want 500", resp.StatusCode)
	}
	// Still answering during the delay.
	checkResponse(t, "while draining", r.call("extras", desc("small", "d")), ok, wantStatus{ok, 3, minute, 2})
	<-drained
	if _, err := r.send(&rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "d")}}); err == nil {
		t.Error("ShouldRateLimit after drain succeeded, want an error")
	}
}

// A store that fails or hangs gets an error to Envoy (Unavailable), never
// an OK: Envoy's failure_mode_deny decides.
func TestStoreFailures(t *testing.T) {
	redis := redistest.Start(t)
	r := startRLS(t, "", nil, map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redis.Addr, "RATEKIT_DECISION_TIMEOUT": "300ms",
	})
	// Up: answered (retried, as a saturated machine may take longer than
	// 300 ms for a first call).
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.send(&rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "up")}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ShouldRateLimit with Redis up = %v for 10s", err)
		}
	}

	if err := redis.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := r.send(&rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "f")}})
	took := time.Since(start)
	if status.Code(err) != codes.Unavailable {
		t.Errorf("ShouldRateLimit with Redis stopped = %v, want Unavailable", err)
	}
	if took > 5*time.Second {
		t.Errorf("ShouldRateLimit with Redis stopped took %v: the decision timeout (300ms) did not bound it", took)
	}
	if err := redis.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	redis.Kill()
	_, err = r.send(&rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "f")}})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("ShouldRateLimit with Redis killed = %v, want Unavailable", err)
	}
	if got := r.stat("ratelimit.service.call.should_rate_limit.redis_error"); got < 2 {
		t.Errorf("redis_error = %d, want at least 2", got)
	}
}

// A rule of several limits names the one that denied: in current_limit
// (its name, its rate) and in a counter of its own, on statsd's names and
// Prometheus's.
func TestDenyingLimitNamed(t *testing.T) {
	clock := fakeclock.New(epoch)
	r := startRLS(t, "memory", clock, nil)
	hour := rlsv3.RateLimitResponse_RateLimit_HOUR
	checkResponse(t, "1st", r.call("extras", desc("layered", "x")), ok, wantStatus{ok, 2, minute, 1})
	checkResponse(t, "2nd", r.call("extras", desc("layered", "x")), ok, wantStatus{ok, 2, minute, 0})
	resp := r.call("extras", desc("layered", "x"))
	checkResponse(t, "3rd in a minute", resp, over, wantStatus{over, 2, minute, 0})
	if name := resp.GetStatuses()[0].GetCurrentLimit().GetName(); name != "layered" {
		t.Errorf("3rd in a minute: current_limit.name %q, want layered", name)
	}
	clock.Advance(time.Minute)
	checkResponse(t, "next minute", r.call("extras", desc("layered", "x")), ok, wantStatus{ok, 3, hour, 0})
	resp = r.call("extras", desc("layered", "x"))
	checkResponse(t, "4th in an hour", resp, over, wantStatus{over, 3, hour, 0})
	if name := resp.GetStatuses()[0].GetCurrentLimit().GetName(); name != "layered_hourly" {
		t.Errorf("4th in an hour: current_limit.name %q, want layered_hourly", name)
	}
	for name, want := range map[string]uint64{
		"ratekit.rate_limit.extras.layered.layered.over_limit":        1,
		"ratekit.rate_limit.extras.layered.layered_hourly.over_limit": 1,
		"ratelimit.service.rate_limit.extras.layered.over_limit":      2,
	} {
		if got := r.stat(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	name, labelNames, labels := promName("ratekit.rate_limit.extras.layered.layered_hourly.over_limit")
	if name != "ratekit_rate_limit_over_limit" || strings.Join(labelNames, ",") != "domain,key,limit" || strings.Join(labels, ",") != "extras,layered,layered_hourly" {
		t.Errorf("Prometheus: %s %v %v", name, labelNames, labels)
	}
}

// A limit of no name is named by its rate.
func TestLimitStatName(t *testing.T) {
	for _, tt := range []struct {
		l    rules.Limit
		want string
	}{
		{rules.Limit{RequestsPerUnit: 1000, Unit: rules.Day, Window: 24 * time.Hour}, "ratekit.rate_limit.d.k_v.1000_per_day.over_limit"},
		{rules.Limit{RequestsPerUnit: 5, Window: 1500 * time.Millisecond}, "ratekit.rate_limit.d.k_v.5_per_1_5s.over_limit"},
		{rules.Limit{Name: "a:b.c", RequestsPerUnit: 5, Unit: rules.Second}, "ratekit.rate_limit.d.k_v.a_b_c.over_limit"},
	} {
		if got := limitStat("d.k_v", &tt.l); got != tt.want {
			t.Errorf("limitStat(%+v) = %s, want %s", tt.l, got, tt.want)
		}
	}
}

// A rule's failure_mode decides while Redis is stopped: closed denies,
// open allows, local decides in the server's memory by the rule's limit;
// a rule without one gets Unavailable. Every failure counts as a
// redis_error.
func TestFailureModes(t *testing.T) {
	redis := redistest.Start(t)
	root := t.TempDir()
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modes.yaml"), []byte(`domain: modes
descriptors:
  - key: closed
    rate_limit: {unit: hour, requests_per_unit: 5, failure_mode: closed}
  - key: open
    rate_limit: {unit: hour, requests_per_unit: 5, failure_mode: open}
  - key: local
    rate_limit: {unit: hour, requests_per_unit: 2, algorithm: gcra, failure_mode: local}
  - key: plain
    rate_limit: {unit: hour, requests_per_unit: 5}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A rule's store call is bounded by half the decision timeout: long
	// enough that a saturated machine's calls answer while Redis is up.
	r := startRLS(t, "", nil, map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redis.Addr, "RUNTIME_ROOT": root, "RATEKIT_DECISION_TIMEOUT": "2s",
	})
	for _, key := range []string{"closed", "open", "local", "plain"} {
		rpu := uint32(5)
		if key == "local" {
			rpu = 2
		}
		checkResponse(t, key+", Redis up", r.call("modes", desc(key, "a")), ok, wantStatus{ok, rpu, rlsv3.RateLimitResponse_RateLimit_HOUR, rpu - 1})
	}
	if got := r.stat("ratelimit.service.call.should_rate_limit.redis_error"); got != 0 {
		t.Fatalf("redis_error = %d with Redis up", got)
	}
	if err := redis.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redis.Signal(syscall.SIGCONT) })
	for i := range 3 {
		if resp := r.call("modes", desc("closed", "a")); resp.GetOverallCode() != over {
			t.Errorf("closed, Redis stopped, request %d: %v, want OVER_LIMIT", i, resp.GetOverallCode())
		}
		if resp := r.call("modes", desc("open", "a")); resp.GetOverallCode() != ok {
			t.Errorf("open, Redis stopped, request %d: %v, want OK", i, resp.GetOverallCode())
		}
		// The server's memory has counted nothing of key "local": 2, then
		// denied.
		if resp := r.call("modes", desc("local", "b")); (resp.GetOverallCode() == ok) != (i < 2) {
			t.Errorf("local, Redis stopped, request %d: %v, want OK %v", i, resp.GetOverallCode(), i < 2)
		}
	}
	if _, err := r.send(&rlsv3.RateLimitRequest{Domain: "modes", Descriptors: []*commonv3.RateLimitDescriptor{desc("plain", "a")}}); status.Code(err) != codes.Unavailable {
		t.Errorf("plain, Redis stopped: %v, want Unavailable", err)
	}
	if got := r.stat("ratelimit.service.call.should_rate_limit.redis_error"); got < 2 {
		t.Errorf("redis_error = %d with Redis stopped, want at least 2", got)
	}
}

// LOCAL_CACHE_SIZE_IN_BYTES: a key over its limit is denied in process,
// with no call to the store, until its window ends; others still ask it.
func TestLocalCache(t *testing.T) {
	redis := redistest.Start(t)
	r := startRLS(t, "", fakeclock.New(epoch), map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redis.Addr, "LOCAL_CACHE_SIZE_IN_BYTES": "100000", "RATEKIT_DECISION_TIMEOUT": "300ms",
	})
	deadline := time.Now().Add(10 * time.Second)
	denied := 0
	for denied == 0 {
		resp, err := r.send(&rlsv3.RateLimitRequest{Domain: "basic", Descriptors: []*commonv3.RateLimitDescriptor{desc("one_per_minute", "cached")}})
		if err == nil && resp.GetOverallCode() == over {
			denied++
		}
		if time.Now().After(deadline) {
			t.Fatalf("one_per_minute never denied in 10s: %v", err)
		}
	}
	if err := redis.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer redis.Signal(syscall.SIGCONT)
	resp, err := r.send(&rlsv3.RateLimitRequest{Domain: "basic", Descriptors: []*commonv3.RateLimitDescriptor{desc("one_per_minute", "cached")}})
	if err != nil || resp.GetOverallCode() != over {
		t.Errorf("the denied key with Redis stopped = %v, %v; want OVER_LIMIT from the local cache", resp.GetOverallCode(), err)
	}
	if _, err := r.send(&rlsv3.RateLimitRequest{Domain: "basic", Descriptors: []*commonv3.RateLimitDescriptor{desc("one_per_minute", "other")}}); status.Code(err) != codes.Unavailable {
		t.Errorf("another key with Redis stopped = %v, want Unavailable", err)
	}
}

// Three servers on one redis-server, one key, concurrent clients: exactly
// the limit is allowed (each decision is one script on Redis).
func TestThreeServersExact(t *testing.T) {
	redis := redistest.Start(t)
	env := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redis.Addr}
	clock := fakeclock.New(epoch) // no window ends during the test
	servers := []*rls{startRLS(t, "", clock, env), startRLS(t, "", clock, env), startRLS(t, "", clock, env)}
	const clients, each = 12, 50
	allowed := make(chan int, clients)
	for i := range clients {
		go func() {
			n := 0
			for range each {
				resp, err := servers[i%len(servers)].send(&rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("exact", "one")}})
				if err != nil {
					t.Error(err)
					break
				}
				if resp.GetOverallCode() == ok {
					n++
				}
			}
			allowed <- n
		}()
	}
	total := 0
	for range clients {
		total += <-allowed
	}
	if total != 200 {
		t.Errorf("%d of %d requests allowed across 3 servers, want exactly 200", total, clients*each)
	}
}
