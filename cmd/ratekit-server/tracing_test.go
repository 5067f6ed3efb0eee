package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/fakeclock"
)

// TRACING_ENABLED: every ShouldRateLimit is a span, exported over OTLP/HTTP
// to OTEL_EXPORTER_OTLP_ENDPOINT.
func TestTracing(t *testing.T) {
	var spans atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && len(b) > 0 {
			spans.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{"TRACING_ENABLED": "true", "TRACING_SERVICE_NAME": "ratekit-test"})
	checkResponse(t, "traced", r.call("extras", desc("small", "trace")), ok, wantStatus{ok, 3, minute, 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.srv.stop(ctx) // flushes the spans
	if spans.Load() == 0 {
		t.Error("no span exported to the OTLP collector")
	}
}
