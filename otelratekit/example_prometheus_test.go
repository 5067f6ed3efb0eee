package otelratekit_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

// The metrics on a Prometheus /metrics endpoint, through OpenTelemetry's
// Prometheus exporter. (The test server here stands for your own, and the
// scrape for Prometheus.)
func Example_prometheus() {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo())
	if err != nil {
		panic(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	tel, err := otelratekit.New(otelratekit.Config{MeterProvider: mp})
	if err != nil {
		panic(err)
	}

	mem, _ := memory.New()
	defer mem.Close()
	store, _ := tel.Store(mem)
	lim, _ := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second, Burst: 3})
	api, _ := tel.Limiter("api", lim)
	for i := 0; i < 5; i++ {
		api.Allow(context.Background(), "user:42")
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "ratekit_decisions") || strings.HasPrefix(sc.Text(), "ratekit_store_duration_seconds_count") {
			fmt.Println(sc.Text())
		}
	}
	// Output:
	// ratekit_decisions_total{ratekit_algorithm="gcra",ratekit_limiter_name="api",ratekit_outcome="allowed",ratekit_store="memory"} 3
	// ratekit_decisions_total{ratekit_algorithm="gcra",ratekit_limiter_name="api",ratekit_outcome="denied",ratekit_store="memory"} 2
	// ratekit_store_duration_seconds_count{ratekit_script="gcra",ratekit_store="memory",ratekit_store_operation="run_script"} 5
}
