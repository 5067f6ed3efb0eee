package main

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ratekit/ratekit/fakeclock"
)

// goAwayConn is a client connection that reads the server's HTTP/2
// frames as they pass, counting its GOAWAY frames.
type goAwayConn struct {
	net.Conn
	frames *io.PipeWriter
}

func watchGoAway(c net.Conn, goaways *atomic.Int32) net.Conn {
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
				goaways.Add(1)
			}
		}
	}()
	return &goAwayConn{Conn: c, frames: pw}
}

func (c *goAwayConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.frames.Write(p[:n])
	}
	if err != nil {
		c.frames.CloseWithError(err)
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
// grace is long so that no call is cut on a busy machine; its end, which
// closes a connection whose calls have not finished, is not observed (the
// RLS has unary calls only, each far shorter).
func TestGRPCMaxConnectionAge(t *testing.T) {
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{
		"GRPC_MAX_CONNECTION_AGE": "200ms", "GRPC_MAX_CONNECTION_AGE_GRACE": "1s",
	})
	var dials, goaways, leftReady atomic.Int32
	conn, err := grpc.NewClient(r.srv.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			dials.Add(1)
			return watchGoAway(c, &goaways), nil
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
	for !reconnected || goaways.Load() == 0 || leftReady.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s and %d calls: %d dials, %d GOAWAY frames, left READY %d times; want a GOAWAY, a second dial served, READY left",
				calls, dials.Load(), goaways.Load(), leftReady.Load())
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
	t.Logf("%d calls, %d dials, %d GOAWAY frames", calls, dials.Load(), goaways.Load())
}
