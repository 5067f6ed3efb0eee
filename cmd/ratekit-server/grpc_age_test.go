package main

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// connWatch is what client connections saw of the server: its GOAWAY
// frames, and how the reads of the first to fail ended.
type connWatch struct {
	goaways atomic.Int32
	end     sync.Once
	ended   chan struct{} // closed when a read fails
	readErr error         // the failed read's error, once ended is closed
	endedAt time.Time     // when it failed, once ended is closed
}

func newConnWatch() *connWatch { return &connWatch{ended: make(chan struct{})} }

// goAwayConn is a client connection that reads the server's HTTP/2
// frames as they pass, counting its GOAWAY frames, and notes the end of
// its reads.
type goAwayConn struct {
	net.Conn
	frames *io.PipeWriter
	w      *connWatch
}

func watchGoAway(c net.Conn, w *connWatch) net.Conn {
	pr, pw := io.Pipe()
	go func() {
		fr := http2.NewFramer(nil, pr)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				io.Copy(io.Discard, pr) // never block the connection's reads
				return
			}
			if _, ok := f.(*http2.GoAwayFrame); ok {
				w.goaways.Add(1)
			}
		}
	}()
	return &goAwayConn{Conn: c, frames: pw, w: w}
}

func (c *goAwayConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.frames.Write(p[:n])
	}
	if err != nil {
		c.frames.CloseWithError(err)
		c.w.end.Do(func() {
			c.w.readErr, c.w.endedAt = err, time.Now()
			close(c.w.ended)
		})
	}
	return n, err
}

func (c *goAwayConn) Close() error {
	c.frames.Close()
	return c.Conn.Close()
}

// GRPC_MAX_CONNECTION_AGE and GRPC_MAX_CONNECTION_AGE_GRACE: the server
// sends GOAWAY once a connection is older than the age, and a client that
// keeps calling is moved to a new connection, every call served. The
// grace is long so that no call is cut on a busy machine; its end is
// TestGRPCMaxConnectionAgeGrace's.
func TestGRPCMaxConnectionAge(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{
		"GRPC_MAX_CONNECTION_AGE": "200ms", "GRPC_MAX_CONNECTION_AGE_GRACE": "1s",
	})
	var dials, leftReady atomic.Int32
	w := newConnWatch()
	conn, err := grpc.NewClient(r.srv.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			dials.Add(1)
			return watchGoAway(c, w), nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for s := conn.GetState(); conn.WaitForStateChange(ctx, s); s = conn.GetState() {
			if s == connectivity.Ready {
				leftReady.Add(1)
			}
		}
	}()
	client := rlsv3.NewRateLimitServiceClient(conn)
	deadline := time.Now().Add(10 * time.Second)
	calls, reconnected := 0, false
	for !reconnected || w.goaways.Load() == 0 || leftReady.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s and %d calls: %d dials, %d GOAWAY frames, left READY %d times; want a GOAWAY, a second dial served, READY left",
				calls, dials.Load(), w.goaways.Load(), leftReady.Load())
		}
		before := dials.Load()
		callCtx, callCancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := client.ShouldRateLimit(callCtx, &rlsv3.RateLimitRequest{Domain: "basic", Descriptors: []*commonv3.RateLimitDescriptor{desc("key1", "age")}})
		callCancel()
		calls++
		if err != nil {
			t.Fatalf("call %d across the connection's age: %v", calls, err)
		}
		if before >= 2 {
			reconnected = true
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d calls, %d dials, %d GOAWAY frames", calls, dials.Load(), w.goaways.Load())
}

// GRPC_MAX_CONNECTION_AGE_GRACE: after the GOAWAY at the connection's
// age, a call in flight (a decision waiting on a stopped Redis) still gets
// its answer on that connection; once the grace has passed, the server
// closes the connection, and a stream still open on it (a health Watch)
// ends Unavailable. The bounds hold on a saturated machine: the close
// comes no earlier than the age (less its 10% jitter) and the grace after
// the first call, as timers never fire early, and the test waits 10s
// more than both for it (grpc-go's server waits a second for the client
// to close first); the grace leaves 4s to answer the call.
func TestGRPCMaxConnectionAgeGrace(t *testing.T) {
	const age, grace = time.Second, 4 * time.Second
	redis := redistest.Start(t)
	r := startRLS(t, "", nil, map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redis.Addr,
		"GRPC_MAX_CONNECTION_AGE": age.String(), "GRPC_MAX_CONNECTION_AGE_GRACE": grace.String(),
	})
	r.call("basic", desc("key1", "warm")) // the server's Redis connection is up

	w := newConnWatch()
	var dials atomic.Int32
	var first atomic.Value // the first connection's local address, a string
	conn, err := grpc.NewClient(r.srv.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil || dials.Add(1) > 1 {
				return c, err
			}
			first.Store(c.LocalAddr().String())
			return watchGoAway(c, w), nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	start := time.Now() // before the first connection, so before its age starts
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{Service: healthServiceName})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health Watch = %v, %v; want SERVING", resp, err)
	}

	if err := redis.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var resumed sync.Once
	resume := func() {
		resumed.Do(func() {
			if err := redis.Signal(syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		})
	}
	defer resume()
	type result struct {
		resp *rlsv3.RateLimitResponse
		err  error
		on   string // the connection's local address
	}
	done := make(chan result, 1)
	go func() {
		callCtx, callCancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer callCancel()
		var p peer.Peer
		resp, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(callCtx, &rlsv3.RateLimitRequest{
			Domain: "basic", Descriptors: []*commonv3.RateLimitDescriptor{desc("key1", "grace")}, HitsAddend: 1,
		}, grpc.Peer(&p))
		on := ""
		if p.LocalAddr != nil {
			on = p.LocalAddr.String()
		}
		done <- result{resp, err, on}
	}()

	deadline := time.Now().Add(age + 10*time.Second)
	for w.goaways.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no GOAWAY %v after the first call (GRPC_MAX_CONNECTION_AGE %v)", time.Since(start), age)
		}
		select {
		case res := <-done:
			t.Fatalf("the decision returned with Redis stopped, before the GOAWAY: %v, %v", res.resp, res.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	resume()
	var res result
	select {
	case res = <-done:
	case <-time.After(grace + 10*time.Second):
		t.Fatalf("the call in flight across the GOAWAY had no answer %v after it", grace+10*time.Second)
	}
	if res.err != nil || res.resp.GetOverallCode() != ok {
		t.Errorf("the call in flight across the GOAWAY = %v, %v; want OK within the grace", res.resp, res.err)
	}
	if f, _ := first.Load().(string); res.on != f {
		t.Errorf("the call was answered on %q, want the first connection %q: it was sent after the GOAWAY (a stall longer than the age?)", res.on, f)
	}

	select {
	case <-w.ended:
	case <-time.After(time.Until(start.Add(age*11/10 + grace + 10*time.Second))):
		t.Fatalf("the first connection, a stream open on it, still open %v after the first call (age %v, grace %v)", time.Since(start), age, grace)
	}
	if !errors.Is(w.readErr, io.EOF) && !errors.Is(w.readErr, syscall.ECONNRESET) {
		t.Errorf("the first connection's reads ended with %v, want the server's close (EOF)", w.readErr)
	}
	if took := w.endedAt.Sub(start); took < age*9/10+grace {
		t.Errorf("the server closed the connection %v after the first call, before its age (%v, less 10%%) and grace (%v)", took, age, grace)
	}
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("health Watch open across the grace = %v, want Unavailable", err)
	}
	t.Logf("closed %v after the first call; %d dials", w.endedAt.Sub(start), dials.Load())
}
