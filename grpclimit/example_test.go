package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/grpclimit"
	"github.com/ratekit/ratekit/store/memory"
)

// exampleServer serves gRPC's health service on a loopback port behind
// the interceptors, and returns a client of it and a function that stops
// both.
func exampleServer(in *grpclimit.Interceptors, opts ...grpc.DialOption) (healthpb.HealthClient, func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(in.Unary()), grpc.ChainStreamInterceptor(in.Stream()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		panic(err)
	}
	return healthpb.NewHealthClient(conn), func() { conn.Close(); srv.Stop() }
}

// Two calls a minute per client address: the third is denied with
// ResourceExhausted, and the server's advice is in RetryInfo and in the
// header metadata.
func Example() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 2, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	limits, err := grpclimit.New(grpclimit.Config{Name: "api", Limiter: limiter})
	if err != nil {
		panic(err)
	}
	client, stop := exampleServer(limits)
	defer stop()

	for i := 0; i < 3; i++ {
		var header metadata.MD
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		fmt.Println(status.Code(err), header.Get("ratelimit"), header.Get("retry-after"))
		if wait, ok := grpclimit.RetryDelay(err); ok {
			fmt.Println("retry in", wait.Round(time.Second))
		}
	}
	// Output:
	// OK ["api";r=1;t=60] []
	// OK ["api";r=0;t=60] []
	// ResourceExhausted ["api";r=0;t=60] [60]
	// retry in 1m0s
}

// A policy (ratekit.NewPolicy) decides all of its limits at once: the
// fields carry one value per limit, each with the window of its own
// configuration, and a denial names the limit that denied.
func Example_policy() {
	store, _ := memory.New()
	defer store.Close()
	burst, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 5, RefillRate: 5, RefillInterval: time.Second, Prefix: "burst:"})
	daily, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: 24 * time.Hour, Prefix: "daily:"})
	policy, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "burst", Limiter: burst}, {Name: "daily", Limiter: daily}}})
	if err != nil {
		panic(err)
	}
	limits, err := grpclimit.New(grpclimit.Config{Limiter: policy})
	if err != nil {
		panic(err)
	}
	client, stop := exampleServer(limits)
	defer stop()

	for i := 0; i < 2; i++ {
		var header metadata.MD
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		fmt.Println(status.Code(err), header.Get("ratelimit-policy"))
		if err != nil {
			fmt.Println(status.Convert(err).Message())
		}
	}
	// Output:
	// OK ["burst";q=5;w=1 "daily";q=1;w=86400]
	// ResourceExhausted ["burst";q=5;w=1 "daily";q=1;w=86400]
	// rate limit exceeded (limit daily), retry in 86400s
}

// Limits of different keys are Interceptors chained: here 100 calls a
// minute per client address, and 2 a minute for every client of a
// method. Each adds its value to the fields; the third call is denied by
// the method's limit, after the client's has counted it.
func Example_chain() {
	store, _ := memory.New()
	defer store.Close()
	perClient, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 100, Window: time.Minute, Prefix: "client:"})
	perMethod, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 2, Window: time.Minute, Prefix: "method:"})
	client, err := grpclimit.New(grpclimit.Config{Name: "client", Limiter: perClient})
	if err != nil {
		panic(err)
	}
	method, err := grpclimit.New(grpclimit.Config{Name: "method", Limiter: perMethod, Key: grpclimit.Method{}})
	if err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(client.Unary(), method.Unary()),
		grpc.ChainStreamInterceptor(client.Stream(), method.Stream()),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)

	for i := 0; i < 3; i++ {
		var header metadata.MD
		_, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		fmt.Println(status.Code(err), header.Get("ratelimit-policy"))
	}
	// Output:
	// OK ["client";q=100;w=60 "method";q=2;w=60]
	// OK ["client";q=100;w=60 "method";q=2;w=60]
	// ResourceExhausted ["client";q=100;w=60 "method";q=2;w=60]
}

// The client interceptor waits the RetryInfo of a denial and calls again:
// here 100 ms, for 10 calls a second.
func ExampleUnaryClientInterceptor() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second, Burst: 1})
	limits, _ := grpclimit.New(grpclimit.Config{Limiter: limiter})
	retry, err := grpclimit.UnaryClientInterceptor(grpclimit.RetryConfig{MaxAttempts: 3, MaxWait: time.Second})
	if err != nil {
		panic(err)
	}
	client, stop := exampleServer(limits, grpc.WithUnaryInterceptor(retry))
	defer stop()

	start := time.Now()
	for i := 0; i < 2; i++ {
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
		fmt.Println(status.Code(err))
	}
	fmt.Println("waited at least 90 ms:", time.Since(start) >= 90*time.Millisecond)
	// Output:
	// OK
	// OK
	// waited at least 90 ms: true
}

// Behind proxies at 10.0.0.0/8 that append to x-forwarded-for, a call is
// keyed by the last address they did not add, whatever hops the client
// wrote itself.
func ExampleClientIP() {
	key := grpclimit.ClientIP{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Header:         grpclimit.XForwardedFor,
	}
	call := grpclimit.Call{
		FullMethod: "/shop.Cart/Add",
		Peer:       &net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 50000},
		Metadata:   metadata.Pairs("x-forwarded-for", "1.1.1.1, 203.0.113.9, 10.0.0.2"),
	}
	fmt.Println(key.Key(context.Background(), call))
	// Output: ip4:203.0.113.9 <nil>
}

// Join keys a call by several parts: here a tenant's metadata and the
// method, each quoted so that no tenant name can forge another's key.
func ExampleJoin() {
	key := grpclimit.Join(grpclimit.Metadata{Name: "x-tenant"}, grpclimit.Method{})
	call := grpclimit.Call{FullMethod: "/shop.Cart/Add", Metadata: metadata.Pairs("x-tenant", "acme")}
	fmt.Println(key.Key(context.Background(), call))
	call.Metadata = nil
	fmt.Println(key.Key(context.Background(), call))
	// Output:
	// "md:acme" "m:/shop.Cart/Add" <nil>
	//  ratekit: invalid key: metadata x-tenant is missing
}

// Each call's limits from its caller's contract (Config.Params): here a
// tenant named in the metadata, as read from your records.
func Example_params() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	gold, err := tokenbucket.NewParams(tokenbucket.Config{Capacity: 3, RefillRate: 3, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	limits, err := grpclimit.New(grpclimit.Config{
		Name:    "api",
		Limiter: limiter,
		Key:     grpclimit.Metadata{Name: "tenant"},
		Params: func(ctx context.Context, c grpclimit.Call) ([]core.Params, error) {
			if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("tenant")) == 1 && md.Get("tenant")[0] == "gold" {
				return []core.Params{gold}, nil
			}
			return nil, nil // the limiter's own
		},
	})
	if err != nil {
		panic(err)
	}
	client, stop := exampleServer(limits)
	defer stop()
	for _, tenant := range []string{"gold", "gold", "free", "free"} {
		var header metadata.MD
		ctx := metadata.AppendToOutgoingContext(context.Background(), "tenant", tenant)
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		fmt.Println(tenant, status.Code(err), header.Get("ratelimit-policy"))
	}
	// Output:
	// gold OK ["api";q=3;w=60]
	// gold OK ["api";q=3;w=60]
	// free OK ["api";q=1;w=60]
	// free ResourceExhausted ["api";q=1;w=60]
}
