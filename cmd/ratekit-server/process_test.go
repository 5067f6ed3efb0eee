package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
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

// The binary on a real Redis Cluster with envoyproxy/ratelimit's pool
// settings: REDIS_POOL_SIZE=1, REDIS_TIMEOUT and REDIS_PIPELINE_WINDOW
// (150us, as its own cluster tests run) set, it decides exactly (two per
// day per value, the third denied, for values in slots of every master),
// and it keeps one connection to each node, where rueidis's default
// spreads slots over up to four (two on two cores). Values it cannot
// honour stop it at start (exit 2), each named with why.
func TestProcessClusterRedisSettings(t *testing.T) {
	cluster := redistest.SharedCluster(t)
	root := runtimeRoot(t, "domain: cluster\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 2}\n")
	grpcPort := freePort(t)
	base := map[string]string{
		"USE_STATSD": "false", "REDIS_SOCKET_TYPE": "tcp", "REDIS_TYPE": "cluster",
		"REDIS_URL":        strings.Join(cluster.Addrs(), ","),
		"CACHE_KEY_PREFIX": "process:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":", // the shared cluster is never empty
		"RUNTIME_ROOT":     root, "RUNTIME_SUBDIRECTORY": "ratelimit",
		"HOST": "127.0.0.1", "PORT": freePort(t), "GRPC_HOST": "127.0.0.1", "GRPC_PORT": grpcPort,
		"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": freePort(t),
		"RATEKIT_DECISION_TIMEOUT": "10s",
	}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}

	for _, tt := range []struct{ name, value, why string }{
		{"REDIS_POOL_SIZE", "512", "cannot be honoured"},
		{"REDIS_TIMEOUT", "0s", "no timeout"},
		{"REDIS_PIPELINE_WINDOW", "150", "duration"},
	} {
		cmd, stderr := process(t, with(tt.name, tt.value))
		err := cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 2 {
			t.Errorf("%s=%s on a cluster: exit %v (code %d), want 2; its log:\n%s", tt.name, tt.value, err, code, stderr)
			continue
		}
		if line := tt.name + ":"; !strings.Contains(stderr.String(), line) || !strings.Contains(stderr.String(), tt.why) {
			t.Errorf("%s=%s on a cluster: stderr %q, want it to name %s and say %q", tt.name, tt.value, stderr, tt.name, tt.why)
		}
	}

	cmd, stderr := process(t, with("REDIS_POOL_SIZE", "1", "REDIS_TIMEOUT", "2s", "REDIS_PIPELINE_WINDOW", "150us"))
	r := dialHealthy(t, "127.0.0.1:"+grpcPort, root, 30*time.Second)
	const values = 16
	var wg sync.WaitGroup
	for v := range values {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, want := range []struct {
				code      rlsv3.RateLimitResponse_Code
				remaining uint32
			}{{ok, 1}, {ok, 0}, {over, 0}} {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := r.client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "cluster", HitsAddend: 1,
					Descriptors: []*commonv3.RateLimitDescriptor{desc("k", strconv.Itoa(v))}})
				cancel()
				if err != nil {
					t.Errorf("k=%d, call %d: %v", v, i+1, err)
					return
				}
				st := resp.GetStatuses()[0]
				if resp.GetOverallCode() != want.code || st.GetLimitRemaining() != want.remaining {
					t.Errorf("k=%d, call %d: %v, remaining %d; want %v, remaining %d", v, i+1, resp.GetOverallCode(), st.GetLimitRemaining(), want.code, want.remaining)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.Fatalf("its log:\n%s", stderr)
	}
	conns := tcpConnections(t, cmd.Process.Pid)
	t.Logf("connections by port: %v", conns)
	total := 0
	for _, node := range cluster.Nodes() {
		_, port, _ := net.SplitHostPort(node.Addr)
		n := conns[port]
		total += n
		if n > 1 {
			t.Errorf("REDIS_POOL_SIZE=1: %d connections to the node at %s, want at most 1", n, node.Addr)
		}
	}
	if total < len(cluster.Masters) {
		t.Errorf("%d connections to the cluster's %d nodes, want one to each master at least: %v", total, len(cluster.Nodes()), conns)
	}
}

// tcpConnections counts the established TCP connections of process pid
// by remote port (decimal), from /proc: its sockets' inodes, looked up in
// its network namespace's tables. It skips t where there is no /proc.
func tcpConnections(t *testing.T, pid int) map[string]int {
	t.Helper()
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		t.Skipf("no /proc to count connections: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	conns := map[string]int{}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "net", table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "01" || !inodes[f[9]] { // 01: ESTABLISHED
				continue
			}
			_, hexPort, _ := strings.Cut(f[2], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			if err != nil {
				t.Fatalf("/proc/%d/net/%s: %q: %v", pid, table, line, err)
			}
			conns[strconv.FormatUint(port, 10)]++
		}
	}
	return conns
}

// REDIS_TIMEOUT with REDIS_TYPE=cluster bounds the start: against a node
// that accepts and never answers, the binary exits 1 naming REDIS_URL
// once the timeout (200ms) has passed, not after the default 10s. The
// only bound on time is that wide one.
func TestProcessClusterRedisTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer func() {
		ln.Close()
		<-done
	}()
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	const timeout = 200 * time.Millisecond
	start := time.Now()
	cmd, stderr := process(t, map[string]string{
		"USE_STATSD": "false", "REDIS_SOCKET_TYPE": "tcp", "REDIS_TYPE": "cluster", "REDIS_URL": ln.Addr().String(),
		"REDIS_TIMEOUT": timeout.String(), "RUNTIME_ROOT": t.TempDir(), "FORCE_START_WITHOUT_INITIAL_CONFIG": "true",
		"HOST": "127.0.0.1", "PORT": freePort(t), "GRPC_HOST": "127.0.0.1", "GRPC_PORT": freePort(t),
		"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": freePort(t),
	})
	err = cmd.Wait()
	took := time.Since(start)
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "REDIS_URL") {
		t.Errorf("a cluster node that never answers: exit %v (code %d), %q; want 1, naming REDIS_URL", err, code, stderr)
	}
	if took < timeout || took > 8*time.Second {
		t.Errorf("it exited after %v, want after REDIS_TIMEOUT (%v) and well before the default 10s", took, timeout)
	}
}

// On Redis the binary collects garbage at GOGC=400 unless the
// environment sets GOGC; on the memory store at Go's default.
func TestProcessGCPercent(t *testing.T) {
	t.Setenv("GOGC", "") // restored after the test
	os.Unsetenv("GOGC")
	addr := redistest.Start(t).Addr
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"redis", map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": addr}, "gogc=400"},
		{"redis GOGC=150", map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": addr, "GOGC": "150"}, "gogc=150"},
		{"memory", map[string]string{"BACKEND_TYPE": "memory"}, "gogc=100"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			copyDir(t, "testdata/integration", root)
			grpcPort := freePort(t)
			env := map[string]string{
				"USE_STATSD": "false", "LOG_LEVEL": "info", "RUNTIME_ROOT": root, "RUNTIME_SUBDIRECTORY": "ratelimit",
				"HOST": "127.0.0.1", "PORT": freePort(t), "GRPC_HOST": "127.0.0.1", "GRPC_PORT": grpcPort,
				"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": freePort(t),
			}
			for k, v := range tt.env {
				env[k] = v
			}
			cmd, stderr := process(t, env)
			dialHealthy(t, "127.0.0.1:"+grpcPort, root, 30*time.Second)
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if !regexp.MustCompile(`serving.* ` + tt.want + `\b`).MatchString(stderr.String()) {
				t.Errorf("its log does not say %s:\n%s", tt.want, stderr)
			}
		})
	}
}
