// Command demo is ratekit's demo server: a web page where you send requests
// one at a time or in bursts and watch a limiter allow and deny them, with
// its state and the rate-limit response headers, for every algorithm; and
// where you acquire and release the concurrency limiter's leases and watch
// the cost in flight against its limit.
//
// It is a module of its own; from cmd/demo:
//
//	go run .                                       # in-process memory store, no Redis
//	go run . -addr :9090
//	go run . -redis redis://localhost:6379 -client rueidis
//
// The demo fails closed: while the store fails, the rate-limited endpoint
// answers 503 with {"error": ...}, and the failures are logged to stderr
// as ratekit logs its own: at most one line every 10 s for each kind, with
// the key and a count of the lines left out ("suppressed").
// It stops cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/core"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/memory"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
)

func main() {
	addr := flag.String("addr", ":8080", "address to listen on")
	redisURL := flag.String("redis", "", "Redis URL (redis://host:port); empty: the in-process memory store")
	client := flag.String("client", "goredis", "Redis client with -redis: goredis or rueidis")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, *addr, *redisURL, *client, os.Stdout, logger); err != nil {
		logger.Error("demo: stopped", slog.Any("error", err))
		os.Exit(1)
	}
}

// run serves the demo on addr until ctx ends, then shuts down gracefully.
// It reports its address to out and logs errors to logger.
func run(ctx context.Context, addr, redisURL, client string, out io.Writer, logger *slog.Logger) error {
	runner, name, closeStore, err := openStore(redisURL, client)
	if err != nil {
		return err
	}
	defer closeStore()
	if redisURL != "" && client == "goredis" {
		// go-redis logs each call that cannot dial, a few a second
		// while Redis is down and the page is open.
		redis.SetLogger(&goredisLog{log: logger, clock: core.ClockFunc(time.Now)})
	}
	s, err := newServer(runner, name, logger)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	fmt.Fprintf(out, "ratekit demo on http://%s (store: %s)\n", l.Addr(), name)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(out, "ratekit demo stopped")
	return nil
}

// openStore returns the memory store, or a Redis store for redisURL.
func openStore(redisURL, client string) (core.ScriptRunner, string, func(), error) {
	if client != "goredis" && client != "rueidis" {
		return nil, "", nil, fmt.Errorf("-client %q: want goredis or rueidis", client)
	}
	if redisURL == "" {
		m, err := memory.New()
		if err != nil {
			return nil, "", nil, err
		}
		return m, "memory", func() { m.Close() }, nil
	}
	u, err := url.Parse(redisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, "", nil, fmt.Errorf("-redis %q: want redis://host:port", redisURL)
	}
	switch client {
	case "goredis":
		opt, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, "", nil, err
		}
		// What docs/redis.md asks of a go-redis client: a decision never
		// runs twice, and a call ends at its context's deadline.
		opt.MaxRetries, opt.ContextTimeoutEnabled = -1, true
		c := redis.NewClient(opt)
		store, err := goredisStore(c)
		if err != nil {
			c.Close()
			return nil, "", nil, err
		}
		return store, "go-redis at " + u.Host, func() { c.Close() }, nil
	case "rueidis":
		opt, err := rueidis.ParseURL(redisURL)
		if err != nil {
			return nil, "", nil, err
		}
		opt.DisableCache = true // no CLIENT TRACKING, as docs/redis.md asks
		c, err := rueidis.NewClient(opt)
		if err != nil {
			return nil, "", nil, err
		}
		store, err := rueidisStore(c)
		if err != nil {
			c.Close()
			return nil, "", nil, err
		}
		return store, "rueidis at " + u.Host, c.Close, nil
	}
	return nil, "", nil, fmt.Errorf("-client %q: want goredis or rueidis", client)
}

// goredisStore and rueidisStore are where the demo makes its Redis stores:
// each store's New checks its client and returns the store or an error.
func goredisStore(c *redis.Client) (core.ScriptRunner, error) { return goredisstore.New(c) }

func rueidisStore(c rueidis.Client) (core.ScriptRunner, error) { return rueidisstore.New(c) }
