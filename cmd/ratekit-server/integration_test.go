package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// The cases of envoyproxy/ratelimit's test/integration/integration_test.go
// (testBasicBaseConfig, testConfigReload, share_threshold), replayed on its
// own configuration files: the same codes, limits and remaining counts.

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)

// epoch is the time of the tests' clock: 1 s into a day (so into a minute
// and an hour), so that no window ends during a replay.
var epoch = time.Date(2026, 1, 5, 0, 0, 1, 0, time.UTC)

type wantStatus struct {
	code      rlsv3.RateLimitResponse_Code
	rpu       uint32
	unit      rlsv3.RateLimitResponse_RateLimit_Unit // 0 (UNKNOWN): no current_limit
	remaining uint32
}

func checkResponse(t *testing.T, step string, resp *rlsv3.RateLimitResponse, overall rlsv3.RateLimitResponse_Code, want ...wantStatus) {
	t.Helper()
	if resp.GetOverallCode() != overall {
		t.Errorf("%s: overall_code = %v, want %v", step, resp.GetOverallCode(), overall)
	}
	if len(resp.GetStatuses()) != len(want) {
		t.Fatalf("%s: %d statuses, want %d", step, len(resp.GetStatuses()), len(want))
	}
	for i, w := range want {
		st := resp.GetStatuses()[i]
		got := wantStatus{code: st.GetCode(), remaining: st.GetLimitRemaining()}
		if l := st.GetCurrentLimit(); l != nil {
			got.rpu, got.unit = l.GetRequestsPerUnit(), l.GetUnit()
		}
		if got != w {
			t.Errorf("%s: status %d = %+v, want %+v", step, i, got, w)
		}
		if w.unit != 0 && st.GetDurationUntilReset().AsDuration() <= 0 {
			t.Errorf("%s: status %d duration_until_reset = %v, want > 0", step, i, st.GetDurationUntilReset().AsDuration())
		}
		if w.unit == 0 && st.GetDurationUntilReset() != nil {
			t.Errorf("%s: status %d has duration_until_reset %v without a limit", step, i, st.GetDurationUntilReset().AsDuration())
		}
	}
}

func TestEnvoyIntegrationBasic(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			for _, stop := range []bool{false, true} {
				t.Run(fmt.Sprintf("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=%t", stop), func(t *testing.T) {
					r := startRLS(t, backend, fakeclock.New(epoch), map[string]string{
						"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": fmt.Sprint(stop),
					})
					replayBasic(t, r, stop)
				})
			}
		})
	}
}

func replayBasic(t *testing.T, r *rls, stop bool) {
	// An unknown domain: OK, no limit.
	checkResponse(t, "foo", r.call("foo", desc("hello", "world")), ok, wantStatus{code: ok})
	r.expectStat("foo", "ratelimit.service.rate_limit.foo.domain_not_found", 1)

	checkResponse(t, "basic", r.call("basic", desc("key1", "foo")), ok,
		wantStatus{ok, 50, rlsv3.RateLimitResponse_RateLimit_SECOND, 49})

	// One key, 20 a minute, 25 calls.
	v := fmt.Sprint(rand.Uint64())
	for i := range 25 {
		resp := r.call("another", desc("key2", v))
		if i < 20 {
			checkResponse(t, fmt.Sprintf("key2 call %d", i), resp, ok, wantStatus{ok, 20, rlsv3.RateLimitResponse_RateLimit_MINUTE, uint32(19 - i)})
		} else {
			checkResponse(t, fmt.Sprintf("key2 call %d", i), resp, over, wantStatus{over, 20, rlsv3.RateLimitResponse_RateLimit_MINUTE, 0})
		}
		step := fmt.Sprintf("key2 call %d", i)
		r.expectStat(step, "ratelimit.service.rate_limit.another.key2.total_hits", uint64(i+1))
		r.expectStat(step, "ratelimit.service.rate_limit.another.key2.over_limit", uint64(max(0, i-19)))
		r.expectStat(step, "ratelimit.service.rate_limit.another.key2.within_limit", uint64(min(i+1, 20)))
	}

	// Two keys: 20 a minute and 10 an hour.
	v = fmt.Sprint(rand.Uint64())
	for i := range 15 {
		resp := r.call("another", desc("key2", v), desc("key3", v))
		remaining2 := uint32(19 - i)
		if stop && i >= 10 {
			// A request denied by key3 spends none of key2's quota.
			remaining2 = 10
		}
		if i < 10 {
			checkResponse(t, fmt.Sprintf("key2+key3 call %d", i), resp, ok,
				wantStatus{ok, 20, rlsv3.RateLimitResponse_RateLimit_MINUTE, remaining2},
				wantStatus{ok, 10, rlsv3.RateLimitResponse_RateLimit_HOUR, uint32(9 - i)})
		} else {
			checkResponse(t, fmt.Sprintf("key2+key3 call %d", i), resp, over,
				wantStatus{ok, 20, rlsv3.RateLimitResponse_RateLimit_MINUTE, remaining2},
				wantStatus{over, 10, rlsv3.RateLimitResponse_RateLimit_HOUR, 0})
		}
		// The stats key is shared by every value of key2.
		step := fmt.Sprintf("key2+key3 call %d", i)
		r.expectStat(step, "ratelimit.service.rate_limit.another.key2.total_hits", uint64(i+26))
		r.expectStat(step, "ratelimit.service.rate_limit.another.key2.over_limit", 5)
		r.expectStat(step, "ratelimit.service.rate_limit.another.key3.over_limit", uint64(max(0, i-9)))
	}

	// duration_until_reset shrinks as time passes.
	first := r.call("another", desc("key4", "durTest")).GetStatuses()[0].GetDurationUntilReset().AsDuration()
	if r.clock == nil {
		time.Sleep(2 * time.Second) // envoyproxy/ratelimit's own clock
	} else {
		r.clock.Advance(2 * time.Second)
	}
	second := r.call("another", desc("key4", "durTest")).GetStatuses()[0].GetDurationUntilReset().AsDuration()
	if second >= first {
		t.Errorf("key4 duration_until_reset %v then, 2 s later, %v: want less", first, second)
	}
	if r.clock != nil {
		if first-second != 2*time.Second {
			t.Errorf("key4 duration_until_reset %v then, 2 s later, %v: want 2 s less", first, second)
		}
		if want := 24*time.Hour - time.Second; first != want {
			t.Errorf("key4 duration_until_reset 1 s into the day = %v, want %v", first, want)
		}
	}
}

func TestEnvoyIntegrationShareThreshold(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := startRLS(t, backend, fakeclock.New(epoch), nil)
			for i := range 10 {
				checkResponse(t, fmt.Sprintf("files/a.pdf call %d", i), r.call("share-threshold-test", desc("files", "files/a.pdf")), ok,
					wantStatus{ok, 10, rlsv3.RateLimitResponse_RateLimit_HOUR, uint32(9 - i)})
			}
			// Another value under the same pattern shares its count.
			checkResponse(t, "files/b.csv", r.call("share-threshold-test", desc("files", "files/b.csv")), over,
				wantStatus{over, 10, rlsv3.RateLimitResponse_RateLimit_HOUR, 0})
			// Without share_threshold, each value counts on its own.
			for i := range 10 {
				checkResponse(t, fmt.Sprintf("files_no_share call %d", i),
					r.call("share-threshold-test", desc("files_no_share", fmt.Sprintf("files_no_share/%d.txt", i))), ok,
					wantStatus{ok, 10, rlsv3.RateLimitResponse_RateLimit_HOUR, 9})
			}
		})
	}
}

func TestEnvoyIntegrationReload(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := startRLS(t, backend, nil, nil)
			const loads = "ratelimit.service.config_load_success"
			// Not loaded yet: the domain is unknown.
			checkResponse(t, "reload before", r.call("reload", desc("block", "foo")), ok, wantStatus{code: ok})

			n := r.stat(loads)
			config := filepath.Join(r.root, "ratelimit", "config", "reload.yaml")
			b, err := os.ReadFile(filepath.Join(r.root, "ratelimit", "reload.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			writeAtomically(t, config, b)
			r.waitStat(loads, n)
			checkResponse(t, "reload after", r.call("reload", desc("key1", "foo")), ok,
				wantStatus{ok, 50, rlsv3.RateLimitResponse_RateLimit_SECOND, 49})
			checkResponse(t, "reload block", r.call("reload", desc("block", "foo")), over,
				wantStatus{over, 0, rlsv3.RateLimitResponse_RateLimit_SECOND, 0})

			// Removing the file is a reload too.
			n = r.stat(loads)
			if err := os.Remove(config); err != nil {
				t.Fatal(err)
			}
			r.waitStat(loads, n)
			checkResponse(t, "reload removed", r.call("reload", desc("key1", "foo")), ok, wantStatus{code: ok})
		})
	}
}

// The replay on a Redis Cluster of three masters: the descriptors of a
// request share a hash tag, so one request is decided in one slot.
func TestEnvoyIntegrationCluster(t *testing.T) {
	r := startRLS(t, "cluster", fakeclock.New(epoch), nil)
	replayBasic(t, r, false)
	replayReplaces(t, r)
}

// Reloads under load lose no count and count none twice: clients decide
// at full speed while the file is rewritten (changing another rule each
// time); exactly the limit is allowed.
func TestReloadUnderLoad(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := startRLS(t, backend, fakeclock.New(epoch), nil)
			const loads = "ratelimit.service.config_load_success"
			file := filepath.Join(r.root, "ratelimit", "config", "load.yaml")
			write := func(n int) {
				yaml := fmt.Sprintf("domain: load\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: hour\n      requests_per_unit: 100\n  - key: other\n    rate_limit:\n      unit: hour\n      requests_per_unit: %d\n", n+1)
				writeAtomically(t, file, []byte(yaml))
			}
			n := r.stat(loads)
			write(0)
			r.waitStat(loads, n)

			const clients, each = 4, 50
			allowed := make(chan int, clients)
			for range clients {
				go func() {
					count := 0
					for range each {
						resp, err := r.send(&rlsv3.RateLimitRequest{Domain: "load", Descriptors: []*commonv3.RateLimitDescriptor{desc("k", "v")}})
						if err != nil {
							t.Error(err)
							break
						}
						if resp.GetOverallCode() == ok {
							count++
						}
					}
					allowed <- count
				}()
			}
			for i := 1; i <= 10; i++ {
				n := r.stat(loads)
				write(i)
				r.waitStat(loads, n)
			}
			total := 0
			for range clients {
				total += <-allowed
			}
			if total != 100 {
				t.Errorf("%d requests allowed across 10 reloads, want exactly 100", total)
			}
			if got := r.stat("ratelimit.service.config_load_error"); got != 0 {
				t.Errorf("config_load_error = %d, want 0", got)
			}
		})
	}
}

// A bad file keeps the configuration in force, counted as a load error.
func TestReloadBadConfig(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), nil)
	n := r.stat("ratelimit.service.config_load_error")
	bad := filepath.Join(r.root, "ratelimit", "config", "bad.yaml")
	writeAtomically(t, bad, []byte("domain: bad\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n"))
	r.waitStat("ratelimit.service.config_load_error", n)
	checkResponse(t, "old config kept", r.call("basic", desc("key1", "x")), ok,
		wantStatus{ok, 50, rlsv3.RateLimitResponse_RateLimit_SECOND, 49})
	checkResponse(t, "bad domain not loaded", r.call("bad", desc("k", "x")), ok, wantStatus{code: ok})
}

// envoyproxy/ratelimit's integration-test/scripts/replaces.sh, its
// requests through Envoy's example routes (examples/envoy/proxy.yaml)
// translated into the descriptors Envoy sends: /twoheader sends
// (foo, bar); /fourheader adds (source_cluster, destination_cluster);
// /fiveheader adds (category).
func TestEnvoyReplacesScript(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			replayReplaces(t, startRLS(t, backend, fakeclock.New(epoch), nil))
		})
	}
}

func replayReplaces(t *testing.T, r *rls) {
	two := func(foo, bar string) bool {
		return r.call("rl", desc("foo", foo, "bar", bar)).GetOverallCode() == ok
	}
	four := func(foo, bar, dst string) bool {
		return r.call("rl", desc("foo", foo, "bar", bar), desc("source_cluster", "proxy", "destination_cluster", dst)).GetOverallCode() == ok
	}
	five := func(foo, bar, dst string) bool {
		return r.call("rl", desc("foo", foo, "bar", bar), desc("source_cluster", "proxy", "destination_cluster", dst), desc("category", "account")).GetOverallCode() == ok
	}
	steps := []struct {
		name string
		call func() bool
		want bool
	}{
		// replaces increases the limit
		{"banned", func() bool { return two("bkthomps", "banned") }, false},
		{"banned, mock", func() bool { return four("bkthomps", "banned", "mock") }, false},
		{"override 1", func() bool { return four("bkthomps", "banned", "override") }, true},
		{"override 2", func() bool { return four("bkthomps", "banned", "override") }, true},
		{"override 3", func() bool { return four("bkthomps", "banned", "override") }, false},
		// replaces does not change the original limit
		{"bkthomps 1", func() bool { return four("my_foo", "bkthomps", "bkthomps") }, true},
		{"bkthomps 2", func() bool { return four("my_foo", "bkthomps", "bkthomps") }, true},
		{"bkthomps 3", func() bool { return four("my_foo", "bkthomps", "bkthomps") }, false},
		{"not_bkthomps 1", func() bool { return four("my_foo", "bkthomps", "not_bkthomps") }, true},
		{"not_bkthomps 2", func() bool { return four("my_foo", "bkthomps", "not_bkthomps") }, false},
		{"bkthomps 4", func() bool { return four("my_foo", "bkthomps", "bkthomps") }, false},
		// replaces replaces several
		{"account 1", func() bool { return five("my_foo", "bkthomps", "fake") }, true},
		{"account 2", func() bool { return five("my_foo", "bkthomps", "fake") }, true},
		{"account 3", func() bool { return five("my_foo", "bkthomps", "fake") }, true},
		{"account 4", func() bool { return five("my_foo", "bkthomps", "fake") }, true},
		{"account 5", func() bool { return five("my_foo", "bkthomps", "fake") }, false},
		{"foo_2 1", func() bool { return two("foo_2", "bkthomps") }, true},
		{"foo_2 2", func() bool { return two("foo_2", "bkthomps") }, false},
		{"fake 1", func() bool { return four("foo_3", "bar_3", "fake") }, true},
		{"fake 2", func() bool { return four("foo_3", "bar_3", "fake") }, true},
		{"fake 3", func() bool { return four("foo_3", "bar_3", "fake") }, false},
		{"account 6", func() bool { return five("my_foo", "bkthomps", "fake") }, false},
	}
	for _, s := range steps {
		if got := s.call(); got != s.want {
			t.Errorf("%s: allowed = %t, want %t", s.name, got, s.want)
		}
	}
}

// The same replay against envoyproxy/ratelimit itself, when
// RATEKIT_ENVOY_RLS names its binary (go install
// github.com/envoyproxy/ratelimit/src/service_cmd@...): the oracle the
// expectations above were checked on. Its counters are not read (they go
// to statsd) and it keeps its own clock, so a minute or hour boundary
// during the run can fail it, as envoyproxy/ratelimit's own test can.
func TestEnvoyOracle(t *testing.T) {
	bin := os.Getenv("RATEKIT_ENVOY_RLS")
	if bin == "" {
		t.Skip("RATEKIT_ENVOY_RLS is not set: the replay against envoyproxy/ratelimit itself is opt-in")
	}
	root := t.TempDir()
	copyDir(t, "testdata/integration", root)
	copyDir(t, "testdata/examples", root)
	grpcPort := freePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "USE_STATSD=false", "LOG_LEVEL=error", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redistest.Start(t).Addr,
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"HOST=127.0.0.1", "PORT="+freePort(t), "GRPC_HOST=127.0.0.1", "GRPC_PORT="+grpcPort, "DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+freePort(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := dialHealthy(t, "127.0.0.1:"+grpcPort, root, 30*time.Second)
	replayBasic(t, r, false)
	replayReplaces(t, r)
}
