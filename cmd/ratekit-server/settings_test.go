package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func lookupMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestSettingsDefaultsAreEnvoys(t *testing.T) {
	s, err := loadSettings(lookupMap(map[string]string{"USE_STATSD": "false"}))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"HOST:PORT", s.Host + ":" + itoa(s.Port), "0.0.0.0:8080"},
		{"GRPC_HOST:GRPC_PORT", s.GRPCHost + ":" + itoa(s.GRPCPort), "0.0.0.0:8081"},
		{"DEBUG_HOST:DEBUG_PORT", s.DebugHost + ":" + itoa(s.DebugPort), "0.0.0.0:6070"},
		{"RUNTIME_ROOT", s.RuntimeRoot, "/srv/runtime_data/current"},
		{"RUNTIME_APPDIRECTORY", s.RuntimeAppDirectory, "config"},
		{"RUNTIME_WATCH_ROOT", s.RuntimeWatchRoot, true},
		{"NEAR_LIMIT_RATIO", s.NearLimitRatio, 0.8},
		{"PROMETHEUS_ADDR", s.PrometheusAddr, ":9090"},
		{"LIMIT_LIMIT_HEADER", s.HeaderLimit, "RateLimit-Limit"},
		{"REDIS_POOL_SIZE", s.RedisPoolSize, 10},
		{"backend without REDIS_URL", s.Backend, "memory"},
		{"RATEKIT_DECISION_TIMEOUT", s.DecisionTimeout, 10 * time.Millisecond},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got, want := runtimeDir(s), "/srv/runtime_data/current/config"; got != want {
		t.Errorf("runtimeDir = %q, want %q", got, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestSettingsRedis(t *testing.T) {
	s, err := loadSettings(lookupMap(map[string]string{
		"USE_STATSD": "false", "REDIS_SOCKET_TYPE": "tcp", "REDIS_TYPE": "SENTINEL",
		"REDIS_URL": "mymaster,127.0.0.1:26379,127.0.0.1:26380", "REDIS_AUTH": "user:pass",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Backend != "redis" || s.RedisType != "sentinel" {
		t.Fatalf("backend %q type %q, want redis sentinel", s.Backend, s.RedisType)
	}
	opt, err := redisOptions(s)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Sentinel.MasterSet != "mymaster" || len(opt.InitAddress) != 2 || opt.Username != "user" || opt.Password != "pass" {
		t.Errorf("sentinel options = master %q, addresses %v, user %q, password %q", opt.Sentinel.MasterSet, opt.InitAddress, opt.Username, opt.Password)
	}
}

// Every setting ratekit-server does not implement is refused at start,
// named in the error, never ignored; malformed values too.
func TestSettingsRefused(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"USE_PROMETHEUS": "true"}, "USE_PROMETHEUS"}, // with USE_STATSD's default, true
		{map[string]string{"USE_DOG_STATSD": "true"}, "USE_DOG_STATSD"},
		{map[string]string{"CONFIG_TYPE": "REST"}, "CONFIG_TYPE"},
		{map[string]string{"XDS_CLIENT_BACKOFF_JITTER": "false"}, "XDS_CLIENT_BACKOFF_JITTER"},
		{map[string]string{"BACKEND_TYPE": "memcache"}, "BACKEND_TYPE"},
		{map[string]string{"REDIS_PERSECOND": "true"}, "REDIS_PERSECOND"},
		{map[string]string{"TRACING_EXPORTER_PROTOCOL": "zipkin"}, "TRACING_EXPORTER_PROTOCOL"},
		{map[string]string{"PROMETHEUS_MAPPER_YAML": "/m.yaml"}, "PROMETHEUS_MAPPER_YAML"},
		{map[string]string{"PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS": "true"}, "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS"},
		{map[string]string{"EXTRA_TAGS": "a:b"}, "EXTRA_TAGS"},
		{map[string]string{"REDIS_POOL_ON_EMPTY_BEHAVIOR": "CREATE"}, "REDIS_POOL_ON_EMPTY_BEHAVIOR"},
		{map[string]string{"LOCAL_CACHE_SIZE_IN_BYTES": "-1"}, "LOCAL_CACHE_SIZE_IN_BYTES"},
		{map[string]string{"EXPIRATION_JITTER_MAX_SECONDS": "60"}, "EXPIRATION_JITTER_MAX_SECONDS"},
		{map[string]string{"PORT": "http"}, "PORT"},
		{map[string]string{"GRPC_PORT": "70000"}, "GRPC_PORT"},
		{map[string]string{"SHADOW_MODE": "yes"}, "SHADOW_MODE"},
		{map[string]string{"NEAR_LIMIT_RATIO": "1.5"}, "NEAR_LIMIT_RATIO"},
		{map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{map[string]string{"REDIS_URL": "localhost:6379", "REDIS_TYPE": "ring"}, "REDIS_TYPE"},
		{map[string]string{"REDIS_URL": "localhost:6379", "REDIS_SOCKET_TYPE": "udp"}, "REDIS_SOCKET_TYPE"},
		{map[string]string{"REDIS_URL": "a:1", "REDIS_TYPE": "sentinel", "REDIS_SOCKET_TYPE": "tcp"}, "REDIS_URL"},
		{map[string]string{"GRPC_SERVER_USE_TLS": "true"}, "GRPC_SERVER_USE_TLS"},
		{map[string]string{"RATEKIT_DECISION_TIMEOUT": "0s"}, "RATEKIT_DECISION_TIMEOUT"},
	}
	for _, tt := range tests {
		env := map[string]string{}
		if tt.want != "USE_PROMETHEUS" {
			env["USE_STATSD"] = "false"
		}
		for k, v := range tt.env {
			env[k] = v
		}
		_, err := loadSettings(lookupMap(env))
		if err == nil || !strings.Contains(err.Error(), tt.want+":") {
			t.Errorf("loadSettings(%v) = %v, want an error naming %s", tt.env, err, tt.want)
		}
	}
}

// Variables of features that are off are inert, as in envoyproxy/ratelimit:
// memcache's and xDS's settings, the per-second Redis's.
func TestSettingsInertWhenOff(t *testing.T) {
	_, err := loadSettings(lookupMap(map[string]string{
		"USE_STATSD": "false", "CONFIG_TYPE": "FILE", "CONFIG_GRPC_XDS_SERVER_URL": "x:1",
		"MEMCACHE_HOST_PORT": "m:1", "REDIS_PERSECOND": "false", "REDIS_PERSECOND_URL": "r:1",
		"LOCAL_CACHE_SIZE_IN_BYTES": "0", "REDIS_POOL_ON_EMPTY_BEHAVIOR": "wait",
	}))
	if err != nil {
		t.Fatal(err)
	}
}
