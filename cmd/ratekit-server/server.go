package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	gostats "github.com/lyft/gostats"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/encoding/protojson"
)

// server is a running ratekit-server: its listeners, its service and its
// health.
type server struct {
	settings   settings
	log        *slog.Logger
	health     *healthState
	stats      *stats
	service    *service
	closeStore func()

	grpc  *grpc.Server
	https []*http.Server

	// Addresses bound, for tests that listen on port 0.
	GRPCAddr, HTTPAddr, DebugAddr, PrometheusAddr string

	stopStats   chan struct{}
	stopTracing func(context.Context) error
	wg          sync.WaitGroup
	errOnce     sync.Once
	errc        chan error
}

// streamWorkers is how many goroutines serve gRPC calls, each many in
// turn, keeping the stack a decision grows: with a goroutine per call
// (grpc-go's default) growing and copying each new stack was 13% of the
// server's CPU under make bench-rls's three-descriptor mix (pprof on the
// debug port). Calls beyond that many at once get goroutines of their own.
const streamWorkers = 256

// start opens the store, loads the rules and starts serving every port.
func start(s settings, log *slog.Logger) (_ *server, err error) {
	srv := &server{settings: s, log: log, health: newHealthState(), stats: newStats(), errc: make(chan error, 1)}
	defer func() {
		if err != nil {
			srv.stop(context.Background())
		}
	}()
	if s.Backend == "memory" {
		log.Warn("no REDIS_URL: counting in this process's memory, not shared with other replicas")
	}
	store, closeStore, err := openStore(s)
	if err != nil {
		return nil, err
	}
	srv.closeStore = closeStore
	srv.service, err = newService(s, store, srv.stats, srv.health, log)
	if err != nil {
		return nil, err
	}

	opts := []grpc.ServerOption{grpc.KeepaliveParams(keepalive.ServerParameters{
		MaxConnectionAge:      s.GRPCMaxConnectionAge,
		MaxConnectionAgeGrace: s.GRPCMaxConnectionAgeGrace,
	}), grpc.NumStreamWorkers(streamWorkers)}
	if s.TracingEnabled {
		traced, shutdown, err := startTracing(s)
		if err != nil {
			return nil, err
		}
		opts = append(opts, traced)
		srv.stopTracing = shutdown
	}
	if s.GRPCServerUseTLS {
		cfg, err := grpcTLS(s)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	srv.grpc = grpc.NewServer(opts...)
	rlsv3.RegisterRateLimitServiceServer(srv.grpc, srv.service)
	healthpb.RegisterHealthServer(srv.grpc, srv.health.grpc)

	network, addr := "tcp", net.JoinHostPort(s.GRPCHost, strconv.Itoa(s.GRPCPort))
	if s.GRPCUDS != "" {
		network, addr = "unix", s.GRPCUDS
		os.Remove(addr) // a socket left by a previous run
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("gRPC listener: %w", err)
	}
	srv.GRPCAddr = ln.Addr().String()
	srv.serve("gRPC", func() error { return srv.grpc.Serve(ln) })

	api := http.NewServeMux()
	api.Handle("/healthcheck", srv.health)
	api.HandleFunc("/json", srv.serveJSON)
	if srv.HTTPAddr, err = srv.listenHTTP("HTTP", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), api); err != nil {
		return nil, err
	}

	if srv.DebugAddr, err = srv.listenHTTP("debug", net.JoinHostPort(s.DebugHost, strconv.Itoa(s.DebugPort)), srv.debugMux()); err != nil {
		return nil, err
	}

	if s.UsePrometheus && !s.DisableStats {
		reg := prometheus.NewRegistry()
		reg.MustRegister(promCollector{srv.stats})
		mux := http.NewServeMux()
		mux.Handle(s.PrometheusPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		if srv.PrometheusAddr, err = srv.listenHTTP("Prometheus", s.PrometheusAddr, mux); err != nil {
			return nil, err
		}
	}
	if s.UseStatsd && !s.DisableStats {
		sink := gostats.NewTCPStatsdSink(gostats.WithStatsdHost(s.StatsdHost), gostats.WithStatsdPort(s.StatsdPort))
		srv.stopStats = make(chan struct{})
		srv.wg.Add(1)
		go func() {
			defer srv.wg.Done()
			srv.stats.flushLoop(sink, s.StatsFlushInterval, srv.stopStats)
		}()
	}
	log.Info("ratekit-server serving", "grpc", srv.GRPCAddr, "http", srv.HTTPAddr, "debug", srv.DebugAddr,
		"prometheus", srv.PrometheusAddr, "store", s.Backend, "gogc", gcPercent())
	return srv, nil
}

func (srv *server) listenHTTP(name, addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s listener: %w", name, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	srv.https = append(srv.https, hs)
	srv.serve(name, func() error { return hs.Serve(ln) })
	return ln.Addr().String(), nil
}

// serve runs a listener's loop; an unexpected end is reported by done.
func (srv *server) serve(name string, loop func() error) {
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		err := loop()
		if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) {
			return
		}
		srv.errOnce.Do(func() { srv.errc <- fmt.Errorf("%s server: %w", name, err) })
	}()
}

// done reports a listener that failed while serving.
func (srv *server) done() <-chan error { return srv.errc }

// drain is the graceful stop on SIGTERM: the health check fails first, so
// that load balancers stop sending; after delay, the servers stop taking
// calls and those in flight finish, for at most ctx's time.
func (srv *server) drain(ctx context.Context, delay time.Duration) {
	srv.health.set(componentSigterm, false)
	srv.log.Warn("SIGTERM: health check failing, draining", "delay", delay)
	select {
	case <-time.After(delay):
	case <-ctx.Done():
	}
	srv.stop(ctx)
}

// stop stops every listener (gracefully while ctx lasts) and closes the
// store.
func (srv *server) stop(ctx context.Context) {
	if srv.grpc != nil {
		stopped := make(chan struct{})
		go func() { srv.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			srv.grpc.Stop()
			<-stopped
		}
	}
	for _, hs := range srv.https {
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
	}
	if srv.stopStats != nil {
		close(srv.stopStats)
		srv.stopStats = nil
	}
	if srv.stopTracing != nil {
		srv.stopTracing(ctx) // flushes the spans of the last calls
		srv.stopTracing = nil
	}
	srv.wg.Wait()
	if srv.service != nil {
		srv.service.close()
	}
	if srv.closeStore != nil {
		srv.closeStore()
	}
}

// serveJSON is envoyproxy/ratelimit's /json: a RateLimitRequest in
// protojson, its response in protojson; 429 when over the limit, 400 for a
// bad request or any error, as envoyproxy/ratelimit answers.
func (srv *server) serveJSON(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, http.StatusText(http.StatusBadRequest), http.StatusBadRequest)
		return
	}
	var req rlsv3.RateLimitRequest
	if err := protojson.Unmarshal(body, &req); err != nil {
		http.Error(w, http.StatusText(http.StatusBadRequest), http.StatusBadRequest)
		return
	}
	resp, err := srv.service.ShouldRateLimit(r.Context(), &req)
	if err != nil {
		http.Error(w, http.StatusText(http.StatusBadRequest), http.StatusBadRequest)
		return
	}
	out, err := protojson.Marshal(resp)
	if err != nil {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch resp.OverallCode {
	case rlsv3.RateLimitResponse_OVER_LIMIT:
		w.WriteHeader(http.StatusTooManyRequests)
	case rlsv3.RateLimitResponse_UNKNOWN:
		w.WriteHeader(http.StatusInternalServerError)
	}
	w.Write(out)
}

// debugMux serves the debug port: /rlconfig, /stats and pprof, with an
// index at /.
func (srv *server) debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	endpoints := map[string]string{
		"/rlconfig":     "print out the currently loaded configuration for debugging",
		"/stats":        "print out stats",
		"/debug/pprof/": "pprof profiles",
	}
	mux.HandleFunc("/rlconfig", func(w http.ResponseWriter, r *http.Request) { srv.service.dumpConfig(w) })
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) { srv.stats.writeText(w) })
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		for _, p := range []string{"/debug/pprof/", "/rlconfig", "/stats"} {
			fmt.Fprintf(w, "%s: %s\n", p, endpoints[p])
		}
	})
	return mux
}

// grpcTLS is GRPC_SERVER_USE_TLS: the server's certificate, and with
// GRPC_CLIENT_TLS_CACERT clients must present one signed by that CA (and
// naming GRPC_CLIENT_TLS_SAN, when set).
func grpcTLS(s settings) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(s.GRPCServerTLSCert, s.GRPCServerTLSKey)
	if err != nil {
		return nil, fmt.Errorf("GRPC_SERVER_TLS_CERT: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if s.GRPCClientTLSCACert == "" {
		return cfg, nil
	}
	pool, err := certPool(s.GRPCClientTLSCACert)
	if err != nil {
		return nil, fmt.Errorf("GRPC_CLIENT_TLS_CACERT: %w", err)
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	if san := s.GRPCClientTLSSAN; san != "" {
		cfg.VerifyPeerCertificate = func(_ [][]byte, chains [][]*x509.Certificate) error {
			for _, chain := range chains {
				if len(chain) > 0 && hasSAN(chain[0], san) {
					return nil
				}
			}
			return fmt.Errorf("client certificate does not name %q", san)
		}
	}
	return cfg, nil
}

// hasSAN reports whether cert names san among its DNS names, URIs, email
// or IP addresses.
func hasSAN(cert *x509.Certificate, san string) bool {
	for _, n := range cert.DNSNames {
		if n == san {
			return true
		}
	}
	for _, u := range cert.URIs {
		if u.String() == san {
			return true
		}
	}
	for _, e := range cert.EmailAddresses {
		if e == san {
			return true
		}
	}
	for _, ip := range cert.IPAddresses {
		if ip.String() == san {
			return true
		}
	}
	return false
}

// gcPercent is the garbage collector's GOGC in force.
func gcPercent() uint64 {
	m := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}
