package grpclimit_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/grpclimit"
	"github.com/ratekit/ratekit/store/memory"
)

// The test service, registered by hand as generated code would: Do is
// unary, Watch streams from the server. A request's value names the code
// the handler answers with ("" for OK); a handler waits on the server's
// hold channel, when set, after telling entered.
const (
	doMethod    = "/ratekit.test.Svc/Do"
	watchMethod = "/ratekit.test.Svc/Watch"
)

type svc struct {
	entered chan struct{}
	hold    chan struct{}
	// seen receives the context of each call its handler ran.
	seen chan context.Context
}

func (s *svc) wait(ctx context.Context) {
	if s.seen != nil {
		s.seen <- ctx
	}
	if s.hold != nil {
		s.entered <- struct{}{}
		select {
		case <-s.hold:
		case <-ctx.Done():
		}
	}
}

func answer(req *wrapperspb.StringValue) error {
	switch req.GetValue() {
	case "":
		return nil
	case "unauthenticated":
		return status.Error(codes.Unauthenticated, "no")
	case "panic":
		panic("handler panicked")
	}
	return status.Error(codes.Unknown, req.GetValue())
}

var svcDesc = grpc.ServiceDesc{
	ServiceName: "ratekit.test.Svc",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Do",
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			req := new(wrapperspb.StringValue)
			if err := dec(req); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, r any) (any, error) {
				srv.(*svc).wait(ctx)
				return wrapperspb.String("done"), answer(r.(*wrapperspb.StringValue))
			}
			if icpt == nil {
				return h(ctx, req)
			}
			return icpt(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: doMethod}, h)
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Watch",
		ServerStreams: true,
		Handler: func(srv any, ss grpc.ServerStream) error {
			req := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(req); err != nil {
				return err
			}
			srv.(*svc).wait(ss.Context())
			if err := answer(req); err != nil {
				return err
			}
			return ss.SendMsg(wrapperspb.String("event"))
		},
	}},
}

// serve starts a real gRPC server on a loopback TCP port with the
// interceptors in, and returns a client connection to it.
func serve(t *testing.T, in *grpclimit.Interceptors, s *svc, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return serveChain(t, []*grpclimit.Interceptors{in}, s, opts...)
}

// serveChain is serve with several Interceptors chained, the first
// outermost.
func serveChain(t *testing.T, ins []*grpclimit.Interceptors, s *svc, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Outermost, a recovery interceptor turns a handler's panic into
	// Internal, as servers do (grpc-go itself does not recover).
	recovery := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = status.Errorf(codes.Internal, "panic: %v", p)
			}
		}()
		return h(ctx, req)
	}
	unary := []grpc.UnaryServerInterceptor{recovery}
	var stream []grpc.StreamServerInterceptor
	for _, in := range ins {
		unary = append(unary, in.Unary())
		stream = append(stream, in.Stream())
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	srv.RegisterService(&svcDesc, s)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// decideTimeout is the Timeout newInterceptors gives a Config without
// one: the tests that are not about Timeout must not see its outcome (a
// call served without the limit, or Unavailable) because a saturated
// machine took longer than DefaultTimeout (100 ms) to decide. The tests
// of Timeout (bound_test.go) set their own.
const decideTimeout = 10 * time.Second

// newInterceptors builds the interceptors, with Timeout decideTimeout when
// cfg has none.
func newInterceptors(t *testing.T, cfg grpclimit.Config) *grpclimit.Interceptors {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = decideTimeout
	}
	in, err := grpclimit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// do calls Do with value and returns its header metadata and error.
func do(conn *grpc.ClientConn, ctx context.Context, value string, opts ...grpc.CallOption) (metadata.MD, error) {
	var header metadata.MD
	err := conn.Invoke(ctx, doMethod, wrapperspb.String(value), new(wrapperspb.StringValue), append(opts, grpc.Header(&header))...)
	return header, err
}

// watch opens Watch with value, reads to its end, and returns its header
// metadata and error.
func watch(conn *grpc.ClientConn, ctx context.Context, value string) (metadata.MD, error) {
	st, err := conn.NewStream(ctx, &svcDesc.Streams[0], watchMethod)
	if err != nil {
		return nil, err
	}
	if err := st.SendMsg(wrapperspb.String(value)); err != nil {
		return nil, err
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	for {
		if err = st.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			break
		}
	}
	header, _ := st.Header()
	if err == io.EOF {
		err = nil
	}
	return header, err
}

// bucket returns a memory store on a manual clock and a token bucket of
// capacity on it, refilled by 1 a minute.
func bucket(t *testing.T, capacity int64) (*ratekit.Limiter, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	mem, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	lim, err := tokenbucket.New(mem, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Minute, Clock: clock, Prefix: fmt.Sprintf("tb%d:", capacity)})
	if err != nil {
		t.Fatal(err)
	}
	return lim, clock
}
