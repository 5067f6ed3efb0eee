// Command ratekit-server is a drop-in for envoyproxy/ratelimit: Envoy's rate
// limit service (RLS v3 ShouldRateLimit over gRPC), configured by the same
// environment variables, reading the same YAML from the same runtime
// directory, deciding with ratekit on its memory store or on Redis
// (single, Cluster, Sentinel).
//
//	RUNTIME_ROOT=/data RUNTIME_SUBDIRECTORY=ratelimit USE_STATSD=false go run .
//
// runs it on the memory store with the rules of /data/ratelimit/config;
// REDIS_SOCKET_TYPE=tcp REDIS_URL=localhost:6379 counts in Redis instead.
// With -check, it loads the rules, prints what is wrong with them, and exits.
// docs/server.md lists the settings supported and refused, and where it
// differs from envoyproxy/ratelimit.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/ratekit/ratekit/rules"
)

// redisGCPercent is the garbage collector's GOGC on Redis when the
// environment sets none. There the heap is buffers, rules and caches of
// a few MB, which Go's default (100) collects every few MB allocated:
// some fifteen times a second at full load, 15-20% of the server's CPU
// (GODEBUG=gctrace=1). At 400 a collection comes a fourth as often, for
// some tens of MB more memory. The memory store keeps Go's default: its
// heap is the counters, which may be large.
const redisGCPercent = 400

func main() {
	check := flag.Bool("check", false, "load the rules of the runtime directory, report what is wrong, and exit")
	flag.Parse()
	os.Exit(run(*check, os.LookupEnv, os.Stderr))
}

func run(check bool, lookup func(string) (string, bool), stderr io.Writer) int {
	s, err := loadSettings(lookup)
	if err != nil {
		fmt.Fprintf(stderr, "ratekit-server: refusing to start:\n%v\n", err)
		return 2
	}
	log := newLogger(s, stderr)
	if check {
		cfg, err := rules.Load(runtimeDir(s), loadOptions(s))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stderr, "%s: %d domains, %d rules\n", runtimeDir(s), len(cfg.Domains()), len(cfg.Rules()))
		return 0
	}
	if _, set := lookup("GOGC"); !set && s.Backend == "redis" {
		debug.SetGCPercent(redisGCPercent)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	srv, err := start(s, log)
	if err != nil {
		fmt.Fprintf(stderr, "ratekit-server: %v\n", err)
		return 1
	}
	select {
	case sig := <-sigs:
		log.Warn("ratekit-server received a signal, shutting down gracefully", "signal", sig.String())
		ctx, cancel := context.WithTimeout(context.Background(), s.DrainDelay+s.DrainTimeout)
		defer cancel()
		srv.drain(ctx, s.DrainDelay)
		return 0
	case err := <-srv.done():
		log.Error("ratekit-server stopped", "err", err)
		srv.stop(context.Background())
		return 1
	}
}

// newLogger is LOG_LEVEL and LOG_FORMAT: text or JSON lines, from the level
// named (envoyproxy/ratelimit's logrus levels, mapped onto slog's).
func newLogger(s settings, w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	switch s.LogLevel {
	case "trace", "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "error", "fatal", "panic":
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	if s.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
