package main

import (
	"context"
	"fmt"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"google.golang.org/grpc"
)

// startTracing is TRACING_ENABLED: a span for every gRPC call, exported
// over OTLP (TRACING_EXPORTER_PROTOCOL http or grpc; the endpoint and its
// options from the standard OTEL_EXPORTER_OTLP_* variables), as
// envoyproxy/ratelimit exports them. It returns the server option that
// traces calls and the function that flushes and stops the exporter.
func startTracing(s settings) (grpc.ServerOption, func(context.Context) error, error) {
	ctx := context.Background()
	var exp sdktrace.SpanExporter
	var err error
	switch s.TracingProtocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("TRACING_EXPORTER_PROTOCOL %s: %w", s.TracingProtocol, err)
	}
	attrs := resource.NewSchemaless(
		semconv.ServiceName(s.TracingServiceName),
		semconv.ServiceNamespace(s.TracingServiceNamespace),
		semconv.ServiceInstanceID(s.TracingServiceInstanceID),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(attrs),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(s.TracingSamplingRate))),
	)
	return grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp))), tp.Shutdown, nil
}
