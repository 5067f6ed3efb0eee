package main

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/rules"
)

// settings is ratekit-server's configuration, read from the environment
// variables envoyproxy/ratelimit reads (src/settings/settings.go), with its
// defaults, plus a few of ratekit's own (RATEKIT_*). A variable it knows
// but does not implement is refused by loadSettings when it asks for
// anything but envoyproxy/ratelimit's default behaviour.
type settings struct {
	Host, DebugHost, GRPCHost, GRPCUDS string
	Port, DebugPort, GRPCPort          int

	GRPCMaxConnectionAge, GRPCMaxConnectionAgeGrace time.Duration
	GRPCServerUseTLS                                bool
	GRPCServerTLSCert, GRPCServerTLSKey             string
	GRPCClientTLSCACert, GRPCClientTLSSAN           string

	LogLevel, LogFormat string

	// TRACING_*: OpenTelemetry traces over OTLP.
	TracingEnabled                                                        bool
	TracingServiceName, TracingServiceNamespace, TracingServiceInstanceID string
	TracingProtocol                                                       string
	TracingSamplingRate                                                   float64

	// ConfigType is "FILE" (the runtime directory) or "GRPC_XDS_SOTW"
	// (an xDS management server), with its CONFIG_GRPC_XDS_* settings.
	ConfigType                               string
	XDSNodeID, XDSNodeMetadata, XDSServerURL string
	XDSRetryInterval                         time.Duration
	XDSUseTLS                                bool
	XDSClientTLSCert, XDSClientTLSKey        string
	XDSServerTLSCACert, XDSServerTLSSAN      string
	XDSMaxMsgSize                            int

	ForceStartWithoutInitialConfig    bool
	HealthyWithAtLeastOneConfigLoaded bool
	MergeDomainConfig                 bool

	UseStatsd                      bool
	StatsdHost                     string
	StatsdPort                     int
	StatsFlushInterval             time.Duration
	UsePrometheus                  bool
	PrometheusAddr, PrometheusPath string
	DisableStats                   bool
	NearLimitRatio                 float64

	RuntimeRoot, RuntimeSubdirectory, RuntimeAppDirectory string
	RuntimeIgnoreDotFiles, RuntimeWatchRoot               bool
	// RuntimePollInterval is how often the runtime directory is read for
	// changes (RATEKIT_RUNTIME_POLL_INTERVAL, ratekit's own).
	RuntimePollInterval time.Duration

	CacheKeyPrefix                     string
	LocalCacheSizeInBytes              int
	StopCacheKeyIncrementWhenOverlimit bool

	ResponseHeadersEnabled                              bool
	HeaderLimit, HeaderRemaining, HeaderReset           string
	GlobalShadowMode, GlobalQuotaMode, ResponseMetadata bool

	// Backend is "memory" or "redis".
	Backend                          string
	RedisSocketType, RedisType       string
	RedisURL                         string
	RedisPoolSize                    int
	RedisPipelineLimit               int // a no-op, as in envoyproxy/ratelimit
	RedisAuth, RedisSentinelAuth     string
	RedisTLS                         bool
	RedisTLSClientCert               string
	RedisTLSClientKey                string
	RedisTLSCACert                   string
	RedisTLSSkipHostnameVerification bool
	RedisPipelineWindow              time.Duration
	RedisTimeout                     time.Duration

	// DecisionTimeout bounds each ShouldRateLimit's call to the store
	// (RATEKIT_DECISION_TIMEOUT, ratekit's own).
	DecisionTimeout time.Duration
	// DrainDelay is how long the server keeps answering after a SIGTERM
	// has failed its health check, and DrainTimeout how long calls in
	// flight may then take to finish (RATEKIT_DRAIN_DELAY,
	// RATEKIT_DRAIN_TIMEOUT, ratekit's own).
	DrainDelay, DrainTimeout time.Duration

	// clock, set by tests only, gives the time of every decision; nil:
	// the store's (Redis's TIME, or this process's).
	clock core.Clock
}

// defaultDecisionTimeout is half of Envoy's rate limit filter timeout
// (20 ms by default), so that a slow store answers with an error Envoy
// still receives, and its failure_mode_deny decides, before Envoy gives up.
const defaultDecisionTimeout = 10 * time.Millisecond

// defaultPipelineWindow is REDIS_PIPELINE_WINDOW when it is unset, where
// envoyproxy/ratelimit has none: the low end of the 150-500 µs its
// documentation recommends (and requires on a cluster). rueidis holds a
// connection's next write that long only while other calls are in
// flight, so a lone call is never delayed; at full load a write carries
// about twice the calls, and the server spends a fifth less CPU per call
// (make bench-rls; docs/design.md, "ratekit-server").
const defaultPipelineWindow = 150 * time.Microsecond

// maxRedisPoolSize is the most connections to one Redis node rueidis
// keeps for pipelined calls (2^rueidis.MaxPipelineMultiplex).
const maxRedisPoolSize = 1 << rueidis.MaxPipelineMultiplex

// defaultRedisURL is envoyproxy/ratelimit's REDIS_URL default, a
// nutcracker socket. Left unset, ratekit-server counts in memory instead.
const defaultRedisURL = "/var/run/nutcracker/ratelimit.sock"

// env reads variables through lookup, with defaults, and gathers every
// problem so that one start reports them all.
type env struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (e *env) fail(name, format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

func (e *env) raw(name string) (string, bool) {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return "", false
	}
	return v, true
}

func (e *env) str(name, def string) string {
	if v, ok := e.raw(name); ok {
		return v
	}
	return def
}

func (e *env) boolean(name string, def bool) bool {
	v, ok := e.raw(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(name, "want true or false, got %q", v)
		return def
	}
	return b
}

func (e *env) integer(name string, def, min, max int) int {
	v, ok := e.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		e.fail(name, "want an integer from %d to %d, got %q", min, max, v)
		return def
	}
	return n
}

func (e *env) duration(name string, def time.Duration) time.Duration {
	v, ok := e.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.fail(name, "want a non-negative duration such as 10ms or 1s, got %q", v)
		return def
	}
	return d
}

// refuse records an error when name is set to anything but what leaves
// envoyproxy/ratelimit's default behaviour: ratekit-server does not
// implement it, and a setting must never be silently ignored.
func (e *env) refuse(name string, allowed []string, why string) {
	v, ok := e.raw(name)
	if !ok {
		return
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return
		}
	}
	e.fail(name, "%q is not supported by ratekit-server: %s", v, why)
}

// refuseDuration is refuse for a duration whose default is def.
func (e *env) refuseDuration(name string, def time.Duration, why string) {
	if _, ok := e.raw(name); !ok {
		return
	}
	if d := e.duration(name, def); d != def {
		e.fail(name, "%v is not supported by ratekit-server (only its default, %v): %s", d, def, why)
	}
}

// refuseBool is refuse for a boolean whose default is false.
func (e *env) refuseBool(name, why string) {
	if e.boolean(name, false) {
		e.fail(name, "true is not supported by ratekit-server: %s", why)
	}
}

// loadSettings reads the settings through lookup (os.LookupEnv in main).
// Its error lists every variable that is malformed or asks for what
// ratekit-server does not do.
func loadSettings(lookup func(string) (string, bool)) (settings, error) {
	e := &env{lookup: lookup}
	s := settings{
		Host:      e.str("HOST", "0.0.0.0"),
		Port:      e.integer("PORT", 8080, 0, 65535),
		DebugHost: e.str("DEBUG_HOST", "0.0.0.0"),
		DebugPort: e.integer("DEBUG_PORT", 6070, 0, 65535),
		GRPCHost:  e.str("GRPC_HOST", "0.0.0.0"),
		GRPCPort:  e.integer("GRPC_PORT", 8081, 0, 65535),
		GRPCUDS:   e.str("GRPC_UDS", ""),

		GRPCMaxConnectionAge:      e.duration("GRPC_MAX_CONNECTION_AGE", 24*time.Hour),
		GRPCMaxConnectionAgeGrace: e.duration("GRPC_MAX_CONNECTION_AGE_GRACE", time.Hour),
		GRPCServerUseTLS:          e.boolean("GRPC_SERVER_USE_TLS", false),
		GRPCServerTLSCert:         e.str("GRPC_SERVER_TLS_CERT", ""),
		GRPCServerTLSKey:          e.str("GRPC_SERVER_TLS_KEY", ""),
		GRPCClientTLSCACert:       e.str("GRPC_CLIENT_TLS_CACERT", ""),
		GRPCClientTLSSAN:          e.str("GRPC_CLIENT_TLS_SAN", ""),

		TracingEnabled:           e.boolean("TRACING_ENABLED", false),
		TracingServiceName:       e.str("TRACING_SERVICE_NAME", "RateLimit"),
		TracingServiceNamespace:  e.str("TRACING_SERVICE_NAMESPACE", ""),
		TracingServiceInstanceID: e.str("TRACING_SERVICE_INSTANCE_ID", ""),
		TracingProtocol:          strings.ToLower(e.str("TRACING_EXPORTER_PROTOCOL", "http")),

		LogLevel:  strings.ToLower(e.str("LOG_LEVEL", "WARN")),
		LogFormat: strings.ToLower(e.str("LOG_FORMAT", "text")),

		ConfigType:         strings.ToUpper(e.str("CONFIG_TYPE", "FILE")),
		XDSNodeID:          e.str("CONFIG_GRPC_XDS_NODE_ID", "default"),
		XDSNodeMetadata:    e.str("CONFIG_GRPC_XDS_NODE_METADATA", ""),
		XDSServerURL:       e.str("CONFIG_GRPC_XDS_SERVER_URL", "localhost:18000"),
		XDSRetryInterval:   e.duration("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", 3*time.Second),
		XDSUseTLS:          e.boolean("CONFIG_GRPC_XDS_SERVER_USE_TLS", false),
		XDSClientTLSCert:   e.str("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", ""),
		XDSClientTLSKey:    e.str("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", ""),
		XDSServerTLSCACert: e.str("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", ""),
		XDSServerTLSSAN:    e.str("CONFIG_GRPC_XDS_SERVER_TLS_SAN", ""),
		XDSMaxMsgSize:      e.integer("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", 0, 0, 1<<30),

		ForceStartWithoutInitialConfig:    e.boolean("FORCE_START_WITHOUT_INITIAL_CONFIG", false),
		HealthyWithAtLeastOneConfigLoaded: e.boolean("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", false),
		MergeDomainConfig:                 e.boolean("MERGE_DOMAIN_CONFIG", false),

		UseStatsd:          e.boolean("USE_STATSD", true),
		StatsdHost:         e.str("STATSD_HOST", "localhost"),
		StatsdPort:         e.integer("STATSD_PORT", 8125, 1, 65535),
		StatsFlushInterval: e.duration("STATS_FLUSH_INTERVAL", 10*time.Second),
		UsePrometheus:      e.boolean("USE_PROMETHEUS", false),
		PrometheusAddr:     e.str("PROMETHEUS_ADDR", ":9090"),
		PrometheusPath:     e.str("PROMETHEUS_PATH", "/metrics"),
		DisableStats:       e.boolean("DISABLE_STATS", false),

		RuntimeRoot:           e.str("RUNTIME_ROOT", "/srv/runtime_data/current"),
		RuntimeSubdirectory:   e.str("RUNTIME_SUBDIRECTORY", ""),
		RuntimeAppDirectory:   e.str("RUNTIME_APPDIRECTORY", "config"),
		RuntimeIgnoreDotFiles: e.boolean("RUNTIME_IGNOREDOTFILES", false),
		RuntimeWatchRoot:      e.boolean("RUNTIME_WATCH_ROOT", true),
		RuntimePollInterval:   e.duration("RATEKIT_RUNTIME_POLL_INTERVAL", time.Second),

		CacheKeyPrefix:                     e.str("CACHE_KEY_PREFIX", ""),
		LocalCacheSizeInBytes:              e.integer("LOCAL_CACHE_SIZE_IN_BYTES", 0, 0, 1<<40),
		StopCacheKeyIncrementWhenOverlimit: e.boolean("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", false),

		ResponseHeadersEnabled: e.boolean("LIMIT_RESPONSE_HEADERS_ENABLED", false),
		HeaderLimit:            e.str("LIMIT_LIMIT_HEADER", "RateLimit-Limit"),
		HeaderRemaining:        e.str("LIMIT_REMAINING_HEADER", "RateLimit-Remaining"),
		HeaderReset:            e.str("LIMIT_RESET_HEADER", "RateLimit-Reset"),
		GlobalShadowMode:       e.boolean("SHADOW_MODE", false),
		GlobalQuotaMode:        e.boolean("QUOTA_MODE", false),
		ResponseMetadata:       e.boolean("RESPONSE_DYNAMIC_METADATA", false),

		RedisSocketType:                  strings.ToLower(e.str("REDIS_SOCKET_TYPE", "unix")),
		RedisType:                        strings.ToLower(e.str("REDIS_TYPE", "single")),
		RedisURL:                         e.str("REDIS_URL", ""),
		RedisPoolSize:                    e.integer("REDIS_POOL_SIZE", 10, 1, 1<<16),
		RedisAuth:                        e.str("REDIS_AUTH", ""),
		RedisSentinelAuth:                e.str("REDIS_SENTINEL_AUTH", ""),
		RedisTLS:                         e.boolean("REDIS_TLS", false),
		RedisTLSClientCert:               e.str("REDIS_TLS_CLIENT_CERT", ""),
		RedisTLSClientKey:                e.str("REDIS_TLS_CLIENT_KEY", ""),
		RedisTLSCACert:                   e.str("REDIS_TLS_CACERT", ""),
		RedisTLSSkipHostnameVerification: e.boolean("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", false),
		RedisPipelineWindow:              e.duration("REDIS_PIPELINE_WINDOW", defaultPipelineWindow),
		RedisPipelineLimit:               e.integer("REDIS_PIPELINE_LIMIT", 0, math.MinInt32, math.MaxInt32),
		RedisTimeout:                     e.duration("REDIS_TIMEOUT", 10*time.Second),

		DecisionTimeout: e.duration("RATEKIT_DECISION_TIMEOUT", defaultDecisionTimeout),
		DrainDelay:      e.duration("RATEKIT_DRAIN_DELAY", 0),
		DrainTimeout:    e.duration("RATEKIT_DRAIN_TIMEOUT", 10*time.Second),
	}
	s.NearLimitRatio = nearLimitRatio(e)
	s.TracingSamplingRate = samplingRate(e)
	if s.TracingProtocol != "http" && s.TracingProtocol != "grpc" {
		e.fail("TRACING_EXPORTER_PROTOCOL", "want http or grpc, got %q", s.TracingProtocol)
	}

	switch s.LogLevel {
	case "trace", "debug", "info", "warn", "warning", "error", "fatal", "panic":
	default:
		e.fail("LOG_LEVEL", "want one of trace, debug, info, warn, error, fatal, panic; got %q", s.LogLevel)
	}
	switch s.LogFormat {
	case "text", "json":
	default:
		e.fail("LOG_FORMAT", "want text or json, got %q", s.LogFormat)
	}
	if s.XDSRetryInterval <= 0 {
		e.fail("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "want a positive duration, got %v", s.XDSRetryInterval)
	}
	if (s.XDSClientTLSCert == "") != (s.XDSClientTLSKey == "") {
		e.fail("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "needs both CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY")
	}
	if s.RuntimePollInterval <= 0 {
		e.fail("RATEKIT_RUNTIME_POLL_INTERVAL", "want a positive duration, got %v", s.RuntimePollInterval)
	}
	if s.UseStatsd && s.UsePrometheus && !s.DisableStats {
		// envoyproxy/ratelimit refuses this too: USE_STATSD is true by default.
		e.fail("USE_PROMETHEUS", "unable to use more than one stats sink at the same time; set USE_STATSD=false with USE_PROMETHEUS=true")
	}
	if s.StatsFlushInterval <= 0 {
		e.fail("STATS_FLUSH_INTERVAL", "want a positive duration, got %v", s.StatsFlushInterval)
	}
	if s.DecisionTimeout <= 0 {
		e.fail("RATEKIT_DECISION_TIMEOUT", "want a positive duration, got %v", s.DecisionTimeout)
	}
	if s.GRPCServerUseTLS && (s.GRPCServerTLSCert == "" || s.GRPCServerTLSKey == "") {
		e.fail("GRPC_SERVER_USE_TLS", "needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY")
	}
	if !s.GRPCServerUseTLS && (s.GRPCClientTLSCACert != "" || s.GRPCClientTLSSAN != "") {
		e.fail("GRPC_CLIENT_TLS_CACERT", "client certificates are checked only with GRPC_SERVER_USE_TLS=true")
	}
	if s.GRPCClientTLSSAN != "" && s.GRPCClientTLSCACert == "" {
		e.fail("GRPC_CLIENT_TLS_SAN", "needs GRPC_CLIENT_TLS_CACERT")
	}

	if s.ConfigType == "GRPC_XDS_SOTW" && s.XDSUseTLS {
		// Read at start, as envoyproxy/ratelimit does: a file missing is
		// refused, not retried every CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL.
		if _, err := xdsTLS(s); err != nil {
			e.errs = append(e.errs, err)
		}
	}
	if !s.XDSUseTLS && (s.XDSClientTLSCert != "" || s.XDSServerTLSCACert != "" || s.XDSServerTLSSAN != "") && s.ConfigType == "GRPC_XDS_SOTW" {
		e.fail("CONFIG_GRPC_XDS_SERVER_USE_TLS", "false, but CONFIG_GRPC_XDS_*_TLS_* are set: they are used only with CONFIG_GRPC_XDS_SERVER_USE_TLS=true")
	}

	s.Backend = backend(e, &s)
	refuseUnsupported(e, &s)
	return s, errors.Join(e.errs...)
}

func nearLimitRatio(e *env) float64 {
	v, ok := e.raw("NEAR_LIMIT_RATIO")
	if !ok {
		return 0.8
	}
	r, err := strconv.ParseFloat(v, 32)
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
		e.fail("NEAR_LIMIT_RATIO", "want a number from 0 to 1, got %q", v)
		return 0.8
	}
	return r
}

func samplingRate(e *env) float64 {
	v, ok := e.raw("TRACING_SAMPLING_RATE")
	if !ok {
		return 1
	}
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
		e.fail("TRACING_SAMPLING_RATE", "want a number from 0 to 1, got %q", v)
		return 1
	}
	return r
}

// backend picks where counts live: in memory unless BACKEND_TYPE is redis
// with a REDIS_URL given (envoyproxy/ratelimit's default REDIS_URL, a
// nutcracker socket, is left for the operator to name).
func backend(e *env, s *settings) string {
	b := strings.ToLower(e.str("BACKEND_TYPE", "redis"))
	switch b {
	case "memory":
		if s.RedisURL != "" {
			e.fail("BACKEND_TYPE", "memory counts in this process; unset REDIS_URL (%q) or choose redis", s.RedisURL)
		}
		return "memory"
	case "redis":
	case "memcache":
		e.fail("BACKEND_TYPE", "memcache is not supported by ratekit-server: it cannot decide atomically; use redis")
		return ""
	default:
		e.fail("BACKEND_TYPE", "want redis or memory, got %q", b)
		return ""
	}
	if s.RedisURL == "" {
		return "memory"
	}
	switch s.RedisSocketType {
	case "tcp", "unix":
	default:
		e.fail("REDIS_SOCKET_TYPE", "want tcp or unix, got %q", s.RedisSocketType)
	}
	switch s.RedisType {
	case "single", "cluster", "sentinel":
	default:
		e.fail("REDIS_TYPE", "want single, cluster or sentinel, got %q", s.RedisType)
	}
	if s.RedisSocketType == "unix" && s.RedisType != "single" {
		e.fail("REDIS_SOCKET_TYPE", "unix sockets work with REDIS_TYPE=single only, got REDIS_TYPE=%s", s.RedisType)
	}
	if s.RedisType == "sentinel" && len(strings.Split(s.RedisURL, ",")) < 2 {
		e.fail("REDIS_URL", "sentinel wants the master name and at least one sentinel: mymaster,host:26379,..., got %q", s.RedisURL)
	}
	if !s.RedisTLS && (s.RedisTLSClientCert != "" || s.RedisTLSCACert != "") {
		e.fail("REDIS_TLS_CACERT", "TLS certificates are used only with REDIS_TLS=true")
	}
	if (s.RedisTLSClientCert == "") != (s.RedisTLSClientKey == "") {
		e.fail("REDIS_TLS_CLIENT_CERT", "needs both REDIS_TLS_CLIENT_CERT and REDIS_TLS_CLIENT_KEY")
	}
	if s.RedisPoolSize > maxRedisPoolSize {
		e.fail("REDIS_POOL_SIZE", "%d connections to a Redis node cannot be honoured: rueidis opens at most %d, each carrying many concurrent calls; want 1 to %d",
			s.RedisPoolSize, maxRedisPoolSize, maxRedisPoolSize)
	}
	if s.RedisTimeout == 0 {
		e.fail("REDIS_TIMEOUT", "0 (no timeout) is not supported by ratekit-server: rueidis always bounds a dial and a reply; want a positive duration such as 10s")
	}
	return "redis"
}

// refuseUnsupported refuses the envoyproxy/ratelimit settings that
// ratekit-server does not implement, when they ask for more than the
// default. The reasons are what docs/server.md says.
func refuseUnsupported(e *env, s *settings) {
	e.refuse("CONFIG_TYPE", []string{"FILE", "GRPC_XDS_SOTW"}, "want FILE or GRPC_XDS_SOTW")
	e.refuse("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", nil, "headers on the xDS stream are not implemented")
	e.refuse("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", []string{"10s"}, "the xDS client reconnects every CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL")
	e.refuse("XDS_CLIENT_BACKOFF_MAX_INTERVAL", []string{"60s"}, "the xDS client reconnects every CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL")
	e.refuse("XDS_CLIENT_BACKOFF_RANDOM_FACTOR", []string{"0.5"}, "the xDS client reconnects every CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL")
	e.refuse("XDS_CLIENT_BACKOFF_JITTER", []string{"true"}, "the xDS client reconnects every CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL")
	e.refuseBool("USE_DOG_STATSD", "DogStatsD is not implemented; use USE_STATSD or USE_PROMETHEUS")
	e.refuse("USE_DOG_STATSD_MOGRIFIERS", nil, "DogStatsD is not implemented")
	e.refuse("EXTRA_TAGS", nil, "stats tags are not implemented")
	e.refuse("PROMETHEUS_MAPPER_YAML", nil, "the metric names are fixed (docs/server.md lists them)")
	e.refuseBool("PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", "no response time metric is exported (docs/server.md lists the metrics)")
	e.refuseBool("REDIS_PERSECOND", "one store holds every limit; a second Redis for per-second limits is not implemented")
	e.refuseBool("REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "the health check does not follow Redis; a store error fails the call, not the health check")
	e.refuse("REDIS_POOL_ON_EMPTY_BEHAVIOR", []string{"WAIT"}, "connections are multiplexed and never run out; only WAIT means what it says")
	e.refuse("REDIS_CLUSTER_PIPELINE_PARALLELISM", []string{"1"}, "not implemented")
	why := "ratekit-server does not retry Redis at start: it exits (1), naming the error, for its supervisor to restart it"
	e.refuseDuration("REDIS_STARTUP_INITIAL_INTERVAL", time.Second, why)
	e.refuseDuration("REDIS_STARTUP_MAX_INTERVAL", 30*time.Second, why)
	e.refuseDuration("REDIS_STARTUP_MAX_ELAPSED_TIME", 0, why)
	e.refuse("EXPIRATION_JITTER_MAX_SECONDS", []string{"300"}, "ratekit's keys expire exactly when their state no longer matters; jitter is not configurable")
}

// loadOptions says how the rules' files are put together:
// MERGE_DOMAIN_CONFIG, and RUNTIME_IGNOREDOTFILES, false by default as in
// envoyproxy/ratelimit, whose runtime loader (lyft/goruntime) then reads
// the files and directories whose names begin with '.' too.
func loadOptions(s settings) rules.LoadOptions {
	return rules.LoadOptions{MergeDomains: s.MergeDomainConfig, IncludeDotFiles: !s.RuntimeIgnoreDotFiles}
}

// runtimeDir is where the rules are read from: envoyproxy/ratelimit loads
// the runtime keys "<RUNTIME_APPDIRECTORY>.*" of RUNTIME_ROOT/RUNTIME_SUBDIRECTORY,
// the files under RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY.
func runtimeDir(s settings) string {
	return filepath.Join(s.RuntimeRoot, s.RuntimeSubdirectory, s.RuntimeAppDirectory)
}
