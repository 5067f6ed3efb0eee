package main

import (
	"context"
	"net"
	"testing"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	xdsserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"

	"github.com/ratekit/ratekit/fakeclock"
)

// xdsServer is a go-control-plane management server serving snapshots of
// RateLimitConfig resources to the node "test-node", as Envoy Gateway does.
type xdsServer struct {
	t     *testing.T
	cache cache.SnapshotCache
	Addr  string
}

func startXDS(t *testing.T, opts ...grpc.ServerOption) *xdsServer {
	ctx, cancel := context.WithCancel(context.Background())
	snaps := cache.NewSnapshotCache(true, cache.IDHash{}, nil)
	gs := grpc.NewServer(opts...)
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(gs, xdsserver.NewServer(ctx, snaps, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(ln)
	t.Cleanup(func() { cancel(); gs.Stop() })
	return &xdsServer{t: t, cache: snaps, Addr: ln.Addr().String()}
}

func (x *xdsServer) set(version string, confs ...*rlsconfv3.RateLimitConfig) {
	x.t.Helper()
	res := make([]types.Resource, len(confs))
	for i, c := range confs {
		res[i] = c
	}
	snap, err := cache.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: res})
	if err != nil {
		x.t.Fatal(err)
	}
	if err := x.cache.SetSnapshot(context.Background(), "test-node", snap); err != nil {
		x.t.Fatal(err)
	}
}

func xdsBasic(rpu uint32) *rlsconfv3.RateLimitConfig {
	return &rlsconfv3.RateLimitConfig{Name: "basic", Domain: "xds", Descriptors: []*rlsconfv3.RateLimitDescriptor{
		{Key: "key1", RateLimit: &rlsconfv3.RateLimitPolicy{Unit: rlsconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: rpu}},
		{Key: "parent", Value: "p", Descriptors: []*rlsconfv3.RateLimitDescriptor{
			{Key: "child", RateLimit: &rlsconfv3.RateLimitPolicy{Unit: rlsconfv3.RateLimitUnit_HOUR, RequestsPerUnit: 2, Name: "child"}},
		}},
		{Key: "free", RateLimit: &rlsconfv3.RateLimitPolicy{Unlimited: true}},
		{Key: "blocked", RateLimit: &rlsconfv3.RateLimitPolicy{Unit: rlsconfv3.RateLimitUnit_SECOND}},
	}}
}

// CONFIG_TYPE=GRPC_XDS_SOTW: rules from an xDS management server, a new
// snapshot loaded while running, a bad one refused (the old kept).
func TestXDS(t *testing.T) {
	x := startXDS(t)
	x.set("1", xdsBasic(3))
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{
		"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": x.Addr, "CONFIG_GRPC_XDS_NODE_ID": "test-node",
		"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL": "50ms",
	})
	checkResponse(t, "xds key1", r.call("xds", desc("key1", "a")), ok, wantStatus{ok, 3, minute, 2})
	checkResponse(t, "xds nested", r.call("xds", desc("parent", "p", "child", "c")), ok, wantStatus{ok, 2, rlsv3.RateLimitResponse_RateLimit_HOUR, 1})
	checkResponse(t, "xds unlimited", r.call("xds", desc("free", "f")), ok, wantStatus{code: ok, remaining: 1<<32 - 1})
	checkResponse(t, "xds blocked", r.call("xds", desc("blocked", "b")), over, wantStatus{over, 0, rlsv3.RateLimitResponse_RateLimit_SECOND, 0})

	const loads = "ratelimit.service.config_load_success"
	n := r.stat(loads)
	x.set("2", xdsBasic(10))
	r.waitStat(loads, n)
	checkResponse(t, "xds raised", r.call("xds", desc("key1", "a")), ok, wantStatus{ok, 10, minute, 8})

	// A duplicate descriptor is refused: the configuration in force stays.
	bad := xdsBasic(20)
	bad.Descriptors = append(bad.Descriptors, bad.Descriptors[0])
	n = r.stat("ratelimit.service.config_load_error")
	x.set("3", bad)
	r.waitStat("ratelimit.service.config_load_error", n)
	checkResponse(t, "xds bad kept", r.call("xds", desc("key1", "a")), ok, wantStatus{ok, 10, minute, 7})
}
