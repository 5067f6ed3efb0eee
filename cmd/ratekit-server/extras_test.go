package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// envoyproxy/ratelimit's value-included-in-stats-key-when-unspecified.sh:
// a detailed_metric rule's stats carry the request's value.
func TestDetailedMetric(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), nil)
	for range 3 {
		r.call("rl", desc("unspec", "unspecified_value"))
	}
	r.expectStat("detailed_metric", "ratelimit.service.rate_limit.rl.unspec_unspecified_value.over_limit", 1)
	r.expectStat("detailed_metric", "ratelimit.service.rate_limit.rl.unspec_unspecified_value.total_hits", 3)
}

// ratekit's algorithms per rule, through the same protocol: a token bucket
// with a burst, a 30 s window.
func TestAlgorithmsPerRule(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			clock := fakeclock.New(epoch)
			r := startRLS(t, backend, clock, nil)
			for i := range 4 {
				resp := r.call("extras", desc("bucket", "b"))
				want := ok
				if i == 3 {
					want = over
				}
				if resp.GetOverallCode() != want {
					t.Errorf("bucket call %d: %v, want %v", i, resp.GetOverallCode(), want)
				}
				if name := resp.GetStatuses()[0].GetCurrentLimit().GetName(); name != "bucket" {
					t.Errorf("bucket call %d: current_limit.name = %q, want bucket", i, name)
				}
			}
			clock.Advance(time.Second) // one token back
			if got := r.call("extras", desc("bucket", "b")).GetOverallCode(); got != ok {
				t.Errorf("bucket a second later: %v, want OK", got)
			}

			for i := range 3 {
				resp := r.call("extras", desc("period", "p"))
				want := ok
				if i == 2 {
					want = over
				}
				if resp.GetOverallCode() != want {
					t.Errorf("period call %d: %v, want %v", i, resp.GetOverallCode(), want)
				}
				if d := resp.GetStatuses()[0].GetDurationUntilReset().AsDuration(); d <= 0 || d > 30*time.Second {
					t.Errorf("period call %d: duration_until_reset = %v, want within the 30 s window", i, d)
				}
			}
			clock.Advance(30 * time.Second)
			if got := r.call("extras", desc("period", "p")).GetOverallCode(); got != ok {
				t.Errorf("period 30 s later: %v, want OK", got)
			}
		})
	}
}

// USE_STATSD (the default): counters go to STATSD_HOST:STATSD_PORT over
// TCP, as increments, envoyproxy/ratelimit's names.
func TestStatsd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lines := make(chan string, 100)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{
		"USE_STATSD": "true", "STATSD_HOST": "127.0.0.1", "STATSD_PORT": itoa(port), "STATS_FLUSH_INTERVAL": "50ms",
	})
	for range 4 {
		r.call("extras", desc("small", "s"))
	}
	want := map[string]bool{
		"ratelimit.service.rate_limit.extras.small.total_hits:4|c": false,
		"ratelimit.service.rate_limit.extras.small.over_limit:1|c": false,
		"ratelimit.service.config_load_success:1|c":                false,
	}
	deadline := time.After(20 * time.Second)
	for missing := len(want); missing > 0; {
		select {
		case l := <-lines:
			if seen, ok := want[l]; ok && !seen {
				want[l] = true
				missing--
			}
		case <-deadline:
			t.Fatalf("statsd lines not received in 20s: %v", want)
		}
	}
}

// REDIS_AUTH: a password, or user:password.
func TestRedisAuth(t *testing.T) {
	redis := redistest.Start(t, "--requirepass", "secret")
	r := startRLS(t, "", fakeclock.New(epoch), map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redis.Addr, "REDIS_AUTH": "secret"})
	checkResponse(t, "auth", r.call("extras", desc("small", "a")), ok, wantStatus{ok, 3, minute, 2})

	s, err := loadSettings(lookupMap(map[string]string{"USE_STATSD": "false", "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redis.Addr, "REDIS_AUTH": "wrong",
		"RUNTIME_ROOT": r.root, "RUNTIME_SUBDIRECTORY": "ratelimit"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := openStore(s); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("openStore with a wrong REDIS_AUTH = %v, want an error naming REDIS_URL", err)
	}
}

// GRPC_UDS: the gRPC service on a unix socket instead of a port.
func TestGRPCUDS(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "rls.sock")
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{"GRPC_UDS": sock})
	if _, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r.client = rlsv3.NewRateLimitServiceClient(conn)
	resp, err := r.send(&rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "u")}})
	if err != nil {
		t.Fatal(err)
	}
	checkResponse(t, "uds", resp, ok, wantStatus{ok, 3, minute, 2})
}
