package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// TestMain runs the tests, or, in a process that process_test.go starts
// with runMainEnv set, the server itself: the binary as an operator runs it.
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(os.Getenv(runMainEnv+"_CHECK") == "1", os.LookupEnv, os.Stderr))
	}
	redistest.Main(m)
}

const runMainEnv = "RATEKIT_SERVER_TEST_RUN_MAIN"

// rls is a ratekit-server started in process on free loopback ports, with
// a client of Envoy's RLS v3 types.
type rls struct {
	t      testing.TB
	srv    *server
	client rlsv3.RateLimitServiceClient
	health healthpb.HealthClient
	root   string           // RUNTIME_ROOT
	clock  *fakeclock.Clock // nil: the store's time
}

// backends are the stores every end-to-end test runs on.
var backends = []string{"memory", "redis"}

// startRLS starts a server on backend ("memory", "redis", "cluster") with
// envoyproxy/ratelimit's integration configuration copied into a fresh
// runtime root, and env added to the test's settings.
func startRLS(t testing.TB, backend string, clock *fakeclock.Clock, env map[string]string) *rls {
	t.Helper()
	root := t.TempDir()
	copyDir(t, "testdata/integration", root)
	copyDir(t, "testdata/ratekit", root)
	copyDir(t, "testdata/examples", root)
	vars := map[string]string{
		"USE_STATSD": "false", "HOST": "127.0.0.1", "PORT": "0", "GRPC_HOST": "127.0.0.1", "GRPC_PORT": "0",
		"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": "0",
		"RUNTIME_ROOT": root, "RUNTIME_SUBDIRECTORY": "ratelimit", "RUNTIME_APPDIRECTORY": "config",
		"RATEKIT_DECISION_TIMEOUT":      "10s", // time is not the subject: hold on a saturated machine
		"RATEKIT_RUNTIME_POLL_INTERVAL": "20ms",
	}
	switch backend {
	case "redis":
		vars["REDIS_SOCKET_TYPE"], vars["REDIS_URL"] = "tcp", redistest.Start(t).Addr
	case "cluster":
		vars["REDIS_SOCKET_TYPE"], vars["REDIS_TYPE"] = "tcp", "cluster"
		vars["REDIS_URL"] = strings.Join(redistest.SharedCluster(t).Addrs(), ",")
		vars["CACHE_KEY_PREFIX"] = "e2e:" + t.Name() + ":" + time.Now().Format(time.RFC3339Nano) + ":" // the shared cluster is never empty
	}
	for k, v := range env {
		vars[k] = v
	}
	s, err := loadSettings(lookupMap(vars))
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		s.clock = clock
	}
	srv, err := start(s, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(srv.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.stop(ctx)
	})
	return &rls{t: t, srv: srv, client: rlsv3.NewRateLimitServiceClient(conn), health: healthpb.NewHealthClient(conn), root: root, clock: clock}
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) *commonv3.RateLimitDescriptor {
	d := &commonv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &commonv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// call sends ShouldRateLimit with hits_addend 1, as envoyproxy/ratelimit's
// integration test does.
func (r *rls) call(domain string, ds ...*commonv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: 1})
	if err != nil {
		r.t.Fatalf("ShouldRateLimit(%s, %v) = %v", domain, ds, err)
	}
	return resp
}

// stat is a counter's value, read from the debug port's /stats as an
// operator would.
func (r *rls) stat(name string) uint64 {
	r.t.Helper()
	resp, err := http.Get("http://" + r.srv.DebugAddr + "/stats")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			var n uint64
			for _, c := range v {
				n = n*10 + uint64(c-'0')
			}
			return n
		}
	}
	return 0
}

// waitStat waits until the counter name exceeds after.
func (r *rls) waitStat(name string, after uint64) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.stat(name) <= after {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s stayed at %d for 10s", name, after)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testWriter sends the server's log to the test's, shown when it fails.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// writeAtomically replaces a file as a ConfigMap update or a deploy tool
// does: written beside it under a dot name, then renamed. A file written in
// place can be read half-written, and counted as a failed load, as in
// envoyproxy/ratelimit. The dot file is loaded too by default
// (RUNTIME_IGNOREDOTFILES=false), but a read that catches it, beside the
// file it replaces, fails (the domain twice) and is read again at the
// next poll before it counts as an error (rules.Rules.Watch).
func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// expectStat checks a counter, on ratekit-server (an rls with no server,
// envoyproxy/ratelimit in TestEnvoyOracle, is not read).
func (r *rls) expectStat(step, name string, want uint64) {
	r.t.Helper()
	if r.srv == nil {
		return
	}
	if got := r.stat(name); got != want {
		r.t.Errorf("%s: %s = %d, want %d", step, name, got, want)
	}
}

// dialHealthy connects to the RLS at addr, a process of its own whose
// runtime root is root, and waits up to wait for its health check to say
// SERVING.
func dialHealthy(t *testing.T, addr, root string, wait time.Duration) *rls {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r := &rls{t: t, client: rlsv3.NewRateLimitServiceClient(conn), health: healthpb.NewHealthClient(conn), root: root}
	deadline := time.Now().Add(wait)
	for {
		resp, err := r.health.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy in %v: %v", addr, wait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
