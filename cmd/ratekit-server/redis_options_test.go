package main

import (
	"context"
	"math/bits"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// redisOpts loads the settings env adds to a Redis over TCP, and
// translates them.
func redisOpts(t *testing.T, env map[string]string) rueidis.ClientOption {
	t.Helper()
	vars := map[string]string{"USE_STATSD": "false", "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "127.0.0.1:6379"}
	for k, v := range env {
		vars[k] = v
	}
	s, err := loadSettings(lookupMap(vars))
	if err != nil {
		t.Fatalf("loadSettings(%v): %v", env, err)
	}
	opt, err := redisOptions(s)
	if err != nil {
		t.Fatalf("redisOptions(%v): %v", env, err)
	}
	return opt
}

// connections is how many connections rueidis keeps to one node for
// pipelined calls with opt (its mux: 2^PipelineMultiplex, one when
// negative; 0 would be its own default).
func connections(opt rueidis.ClientOption) int {
	return 1 << max(opt.PipelineMultiplex, 0)
}

// Each REDIS_* setting is the rueidis.ClientOption field it claims, with
// envoyproxy/ratelimit's defaults.
func TestRedisOptionsFromSettings(t *testing.T) {
	// rueidis's own default, by GOMAXPROCS: 1, 2 or 4 connections.
	most := 1 << min(2, bits.Len(uint(runtime.GOMAXPROCS(0)))-1)
	def := redisOpts(t, nil)
	if got, want := connections(def), min(8, most); got != want || def.PipelineMultiplex == 0 {
		t.Errorf("REDIS_POOL_SIZE default (10): %d connections (PipelineMultiplex %d), want %d", got, def.PipelineMultiplex, want)
	}
	if def.BlockingPoolSize != 10 {
		t.Errorf("REDIS_POOL_SIZE default: BlockingPoolSize %d, want 10", def.BlockingPoolSize)
	}
	if def.MaxFlushDelay != 150*time.Microsecond {
		t.Errorf("REDIS_PIPELINE_WINDOW default: MaxFlushDelay %v, want 150µs", def.MaxFlushDelay)
	}
	if def.Dialer.Timeout != 10*time.Second || def.ConnWriteTimeout != 10*time.Second {
		t.Errorf("REDIS_TIMEOUT default: Dialer.Timeout %v, ConnWriteTimeout %v, want 10s", def.Dialer.Timeout, def.ConnWriteTimeout)
	}
	if !def.DisableCache || !def.DisableRetry || !def.ForceSingleClient || !reflect.DeepEqual(def.InitAddress, []string{"127.0.0.1:6379"}) {
		t.Errorf("single: DisableCache %t, DisableRetry %t, ForceSingleClient %t, InitAddress %v; want true, true, true, [127.0.0.1:6379]",
			def.DisableCache, def.DisableRetry, def.ForceSingleClient, def.InitAddress)
	}

	for size, conns := range map[string]int{"1": 1, "2": 2, "3": 2, "4": 4, "16": 16, "255": 128, "256": 256} {
		opt := redisOpts(t, map[string]string{"REDIS_POOL_SIZE": size})
		if conns = min(conns, most); connections(opt) != conns || opt.PipelineMultiplex == 0 {
			t.Errorf("REDIS_POOL_SIZE=%s: %d connections (PipelineMultiplex %d), want %d", size, connections(opt), opt.PipelineMultiplex, conns)
		}
		if opt.PipelineMultiplex > rueidis.MaxPipelineMultiplex {
			t.Errorf("REDIS_POOL_SIZE=%s: PipelineMultiplex %d, rueidis refuses above %d", size, opt.PipelineMultiplex, rueidis.MaxPipelineMultiplex)
		}
	}
	if opt := redisOpts(t, map[string]string{"REDIS_PIPELINE_WINDOW": "400us"}); opt.MaxFlushDelay != 400*time.Microsecond {
		t.Errorf("REDIS_PIPELINE_WINDOW=400us: MaxFlushDelay %v", opt.MaxFlushDelay)
	}
	if opt := redisOpts(t, map[string]string{"REDIS_PIPELINE_WINDOW": "0"}); opt.MaxFlushDelay != 0 {
		t.Errorf("REDIS_PIPELINE_WINDOW=0: MaxFlushDelay %v, want 0 (none)", opt.MaxFlushDelay)
	}
	if opt := redisOpts(t, map[string]string{"REDIS_TIMEOUT": "2s"}); opt.Dialer.Timeout != 2*time.Second || opt.ConnWriteTimeout != 2*time.Second {
		t.Errorf("REDIS_TIMEOUT=2s: Dialer.Timeout %v, ConnWriteTimeout %v", opt.Dialer.Timeout, opt.ConnWriteTimeout)
	}
	sentinel := redisOpts(t, map[string]string{"REDIS_TYPE": "sentinel", "REDIS_URL": "m,127.0.0.1:26379", "REDIS_TIMEOUT": "3s", "REDIS_POOL_SIZE": "1"})
	if sentinel.Sentinel.Dialer.Timeout != 3*time.Second || sentinel.Dialer.Timeout != 3*time.Second || connections(sentinel) != 1 {
		t.Errorf("sentinel: Sentinel.Dialer.Timeout %v, Dialer.Timeout %v, %d connections; want 3s, 3s, 1",
			sentinel.Sentinel.Dialer.Timeout, sentinel.Dialer.Timeout, connections(sentinel))
	}
	cluster := redisOpts(t, map[string]string{"REDIS_TYPE": "cluster", "REDIS_URL": "127.0.0.1:7000,127.0.0.1:7001", "REDIS_POOL_SIZE": "1", "REDIS_PIPELINE_WINDOW": "500us"})
	if cluster.ForceSingleClient || len(cluster.InitAddress) != 2 || connections(cluster) != 1 || cluster.MaxFlushDelay != 500*time.Microsecond {
		t.Errorf("cluster: ForceSingleClient %t, InitAddress %v, %d connections, MaxFlushDelay %v; want false, 2 addresses, 1, 500µs",
			cluster.ForceSingleClient, cluster.InitAddress, connections(cluster), cluster.MaxFlushDelay)
	}
	// REDIS_PIPELINE_LIMIT is accepted and changes nothing, as in
	// envoyproxy/ratelimit (deprecated there, a no-op with radix v4).
	if opt := redisOpts(t, map[string]string{"REDIS_PIPELINE_LIMIT": "8"}); !reflect.DeepEqual(opt, def) {
		t.Errorf("REDIS_PIPELINE_LIMIT=8 changed the options:\n%+v\nwant\n%+v", opt, def)
	}
	if unix := redisOpts(t, map[string]string{"REDIS_SOCKET_TYPE": "unix", "REDIS_URL": "/tmp/redis.sock"}); unix.DialCtxFn == nil {
		t.Error("REDIS_SOCKET_TYPE=unix: no DialCtxFn, want one dialing the socket")
	}
}

// A REDIS_* value that cannot be honoured is refused at start, the error
// naming the variable; a Redis setting is inert with the memory store, as
// REDIS_* are in envoyproxy/ratelimit when another backend is used.
func TestRedisSettingsRefused(t *testing.T) {
	redis := map[string]string{"USE_STATSD": "false", "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "127.0.0.1:6379"}
	for _, tt := range []struct{ name, value string }{
		{"REDIS_POOL_SIZE", "0"},
		{"REDIS_POOL_SIZE", "-1"},
		{"REDIS_POOL_SIZE", "257"},
		{"REDIS_POOL_SIZE", "ten"},
		{"REDIS_TIMEOUT", "0s"},
		{"REDIS_TIMEOUT", "-1s"},
		{"REDIS_TIMEOUT", "10"},
		{"REDIS_PIPELINE_WINDOW", "-1us"},
		{"REDIS_PIPELINE_WINDOW", "150"},
		{"REDIS_PIPELINE_LIMIT", "many"},
		{"REDIS_STARTUP_INITIAL_INTERVAL", "2s"},
		{"REDIS_STARTUP_MAX_INTERVAL", "1m"},
		{"REDIS_STARTUP_MAX_ELAPSED_TIME", "30s"},
		{"REDIS_CLUSTER_PIPELINE_PARALLELISM", "0"},
		{"REDIS_POOL_ON_EMPTY_BEHAVIOR", "ERROR"},
	} {
		env := map[string]string{tt.name: tt.value}
		for k, v := range redis {
			env[k] = v
		}
		_, err := loadSettings(lookupMap(env))
		if err == nil || !strings.Contains(err.Error(), tt.name+":") {
			t.Errorf("%s=%s: loadSettings = %v, want an error naming %s", tt.name, tt.value, err, tt.name)
		}
	}
	// Their defaults, written out, are accepted.
	env := map[string]string{"REDIS_POOL_SIZE": "256", "REDIS_TIMEOUT": "10s", "REDIS_PIPELINE_WINDOW": "0",
		"REDIS_PIPELINE_LIMIT": "0", "REDIS_STARTUP_INITIAL_INTERVAL": "1s", "REDIS_STARTUP_MAX_INTERVAL": "30s",
		"REDIS_STARTUP_MAX_ELAPSED_TIME": "0s"}
	for k, v := range redis {
		env[k] = v
	}
	if _, err := loadSettings(lookupMap(env)); err != nil {
		t.Errorf("defaults written out: %v", err)
	}
	if _, err := loadSettings(lookupMap(map[string]string{"USE_STATSD": "false", "REDIS_POOL_SIZE": "1000", "REDIS_TIMEOUT": "0s"})); err != nil {
		t.Errorf("memory store, Redis settings unused: %v", err)
	}
}

// REDIS_POOL_SIZE end to end: under concurrent calls, the server keeps
// one connection to Redis when the pool size is 1 (rueidis's default
// would be up to 4).
func TestRedisPoolSizeConnections(t *testing.T) {
	srv := redistest.Start(t)
	r := startRLS(t, "", fakeclock.New(epoch), map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": srv.Addr, "REDIS_POOL_SIZE": "1",
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := r.client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "pool")}})
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	list, err := redistest.Command(srv.Addr, "CLIENT", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if !strings.Contains(line, "cmd=client|list") && !strings.Contains(line, "cmd=client ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("REDIS_POOL_SIZE=1: the server keeps %d connections to Redis, want 1:\n%s", n, list)
	}
}
