package redigostore_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	redigostore "github.com/ratekit/ratekit/store/redigo"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// drainPool returns a pool of at most 16 idle connections to addr, filled:
// 16 connections taken at once and given back, so that they sit idle. It
// returns their CLIENT IDs in the order the pool hands them out again
// (the last one given back first).
func drainPool(t *testing.T, addr string) (*redis.Pool, []string) {
	t.Helper()
	p := &redis.Pool{MaxIdle: 16, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr)
	}}
	t.Cleanup(func() { p.Close() })
	conns := make([]redis.Conn, 16)
	ids := make([]string, 16)
	for i := range conns {
		conns[i] = p.Get()
		id, err := redis.Int64(conns[i].Do("CLIENT", "ID"))
		if err != nil {
			t.Fatal(err)
		}
		ids[len(ids)-1-i] = strconv.FormatInt(id, 10)
	}
	for _, c := range conns {
		c.Close()
	}
	if got := p.Stats().IdleCount; got != 16 {
		t.Fatalf("pool filled with %d idle connections, want 16", got)
	}
	return p, ids
}

func limiter(t *testing.T, p *redis.Pool) core.Limiter {
	t.Helper()
	s, err := redigostore.New(p)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 1000, RefillRate: 1000, RefillInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pings returns how many PINGs the server has run since CONFIG RESETSTAT.
func pings(t *testing.T, addr string) int {
	t.Helper()
	info, err := redistest.Command(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_ping:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// After a restart every idle connection is dead. The first call draws
// one and fails (a decision is never sent twice); it drops the other dead
// ones before it returns, so the next call dials and succeeds, instead of
// drawing the next dead connection.
func TestRestartDropsDeadIdleConnections(t *testing.T) {
	srv := redistest.Start(t)
	p, _ := drainPool(t, srv.Addr)
	lim := limiter(t, p)
	ctx := context.Background()
	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Allow(ctx, "k"); !errors.Is(err, core.ErrStore) {
		t.Fatalf("first call after the restart, on a dead connection: %v; want an error wrapping core.ErrStore", err)
	}
	if got := p.Stats().IdleCount; got != 0 {
		t.Errorf("after the failed call the pool holds %d idle connections, want 0: every one was dead", got)
	}
	for i := 0; i < 3; i++ {
		if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed {
			t.Fatalf("call %d after the failed one: %+v, %v; want allowed", i+2, d, err)
		}
	}
}

// A connection that breaks alone (CLIENT KILL) fails its call; the drain
// it starts PINGs the 15 other idle connections, all alive, and keeps
// them. While nothing breaks, calls send no PING.
func TestDrainKeepsLiveConnections(t *testing.T) {
	srv := redistest.Start(t)
	p, ids := drainPool(t, srv.Addr)
	lim := limiter(t, p)
	ctx := context.Background()
	if _, err := redistest.Command(srv.Addr, "CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := lim.Allow(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n := pings(t, srv.Addr); n != 0 {
		t.Errorf("10 calls on a healthy server sent %d PINGs, want 0", n)
	}
	// Sequential calls all take the connection at the pool's front.
	if _, err := redistest.Command(srv.Addr, "CLIENT", "KILL", "ID", ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Allow(ctx, "k"); !errors.Is(err, core.ErrStore) {
		t.Fatalf("call on the killed connection: %v; want an error wrapping core.ErrStore", err)
	}
	if n := pings(t, srv.Addr); n != 15 {
		t.Errorf("the drain sent %d PINGs, want one to each of the 15 other idle connections", n)
	}
	if got := p.Stats().IdleCount; got != 15 {
		t.Errorf("after the drain the pool holds %d idle connections, want the 15 live ones", got)
	}
	if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("call after the drain: %+v, %v; want allowed", d, err)
	}
}

// A call that times out on a paused server does not drain the pool: its
// idle connections are alive, and will answer when the server does.
func TestTimeoutDoesNotDrain(t *testing.T) {
	srv := redistest.Start(t)
	p, _ := drainPool(t, srv.Addr)
	lim := limiter(t, p)
	if _, err := redistest.Command(srv.Addr, "CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := lim.Allow(ctx, "k")
	cancel()
	if err := srv.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call on a stopped server: %v; want context.DeadlineExceeded", err)
	}
	if got := p.Stats().IdleCount; got != 15 {
		t.Errorf("after the timeout the pool holds %d idle connections, want 15 (the one that timed out is closed)", got)
	}
	if n := pings(t, srv.Addr); n != 0 {
		t.Errorf("a timeout sent %d PINGs, want 0", n)
	}
}
