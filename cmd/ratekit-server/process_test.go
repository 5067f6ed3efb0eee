package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ratekit/ratekit/testkit/redistest"
)

// process starts the server as a process of its own (this test binary,
// running main's code) with env, as an operator would.
func process(t *testing.T, env map[string]string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &stderr
}

func freePort(t *testing.T) string {
	t.Helper()
	p, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(p)
}

// The binary against a real redis-server: it starts from envoyproxy/ratelimit's
// variables, answers, and on SIGTERM fails its health check, keeps answering
// for RATEKIT_DRAIN_DELAY, and exits 0.
func TestProcessRedisAndSIGTERM(t *testing.T) {
	root := t.TempDir()
	copyDir(t, "testdata/integration", root)
	grpcPort := freePort(t)
	cmd, stderr := process(t, map[string]string{
		"USE_STATSD": "false", "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redistest.Start(t).Addr,
		"RUNTIME_ROOT": root, "RUNTIME_SUBDIRECTORY": "ratelimit",
		"HOST": "127.0.0.1", "PORT": freePort(t), "GRPC_HOST": "127.0.0.1", "GRPC_PORT": grpcPort,
		"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": freePort(t),
		"RATEKIT_DECISION_TIMEOUT": "10s", "RATEKIT_DRAIN_DELAY": "1s",
	})
	conn, err := grpc.NewClient("127.0.0.1:"+grpcPort, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: healthServiceName})
		if err != nil {
			return healthpb.HealthCheckResponse_UNKNOWN
		}
		return resp.GetStatus()
	}
	deadline := time.Now().Add(30 * time.Second)
	for check() != healthpb.HealthCheckResponse_SERVING {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not become healthy in 30s; its log:\n%s", stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	client := rlsv3.NewRateLimitServiceClient(conn)
	call := func() (*rlsv3.RateLimitResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "basic", HitsAddend: 1, Descriptors: []*commonv3.RateLimitDescriptor{desc("one_per_minute", "p")}})
	}
	resp, err := call()
	if err != nil || resp.GetOverallCode() != ok {
		t.Fatalf("first call = %v, %v; want OK", resp, err)
	}
	resp, err = call()
	if err != nil || resp.GetOverallCode() != over {
		t.Fatalf("second call = %v, %v; want OVER_LIMIT", resp, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for check() != healthpb.HealthCheckResponse_NOT_SERVING {
		if time.Now().After(deadline) {
			t.Fatal("health stayed SERVING after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := call(); err != nil {
		t.Errorf("a call during the drain delay failed: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM the server exited with %v, want 0; its log:\n%s", err, stderr)
	}
}

// A setting the server does not implement stops it at start, named.
func TestProcessRefusesSettings(t *testing.T) {
	cmd, stderr := process(t, map[string]string{"USE_STATSD": "false", "CONFIG_TYPE": "REST", "BACKEND_TYPE": "memcache"})
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit %v (code %d), want 2", err, code)
	}
	for _, want := range []string{"CONFIG_TYPE:", "BACKEND_TYPE:"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// -check loads the runtime directory's rules, prints what is wrong with
// them (file and line), and exits 1; 0 when they load.
func TestProcessCheck(t *testing.T) {
	root := t.TempDir()
	copyDir(t, "testdata/integration", root)
	env := map[string]string{"USE_STATSD": "false", "RUNTIME_ROOT": root, "RUNTIME_SUBDIRECTORY": "ratelimit", runMainEnv + "_CHECK": "1"}
	cmd, stderr := process(t, env)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("-check on envoyproxy/ratelimit's configuration: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "3 domains") {
		t.Errorf("-check printed %q, want the domains counted", stderr)
	}

	bad := "domain: bad\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n"
	if err := os.WriteFile(filepath.Join(root, "ratelimit", "config", "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, stderr = process(t, env)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "bad.yaml:5") {
		t.Errorf("-check on a bad unit: exit %d, %q; want 1 and bad.yaml:5", code, stderr)
	}
}
