package main

import (
	"net/http"
	"sync"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthServiceName is the gRPC health service envoyproxy/ratelimit
// reports; ratekit-server reports the server as a whole ("") alike, which
// is what Kubernetes' gRPC probes ask when they name no service.
const healthServiceName = "ratelimit"

// healthState is the server's health: healthy while every component is.
// It is reported by grpc.health.v1 and by GET /healthcheck.
type healthState struct {
	grpc *health.Server

	mu   sync.Mutex
	down map[string]bool // component -> unhealthy
}

// The components that can make the server unhealthy.
const (
	componentSigterm = "sigterm" // draining: a SIGTERM arrived
	componentConfig  = "config"  // no domain loaded, with HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED
)

func newHealthState() *healthState {
	h := &healthState{grpc: health.NewServer(), down: map[string]bool{}}
	h.publish()
	return h
}

// set marks component healthy or not and publishes the overall state.
func (h *healthState) set(component string, healthy bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if healthy {
		delete(h.down, component)
	} else {
		h.down[component] = true
	}
	h.publishLocked()
}

func (h *healthState) publish() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishLocked()
}

func (h *healthState) publishLocked() {
	status := healthpb.HealthCheckResponse_SERVING
	if len(h.down) > 0 {
		status = healthpb.HealthCheckResponse_NOT_SERVING
	}
	h.grpc.SetServingStatus("", status)
	h.grpc.SetServingStatus(healthServiceName, status)
}

func (h *healthState) healthy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.down) == 0
}

// ServeHTTP answers /healthcheck as envoyproxy/ratelimit does: 200 "OK",
// or 500 while any component is unhealthy.
func (h *healthState) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.healthy() {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Write([]byte("OK"))
}
