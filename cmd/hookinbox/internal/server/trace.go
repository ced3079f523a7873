package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// EnvTraceDB turns on a span per database statement (otelpgx), beneath the spans of
// the receipt, the handler or the attempt that ran it.
const EnvTraceDB = "HOOKINBOX_TRACE_DB"

// Tracing is serve's OpenTelemetry setup, read from the standard environment
// variables. With no OTLP endpoint it is off: Provider is nil, and the inbox and the
// dispatcher make no span at all.
type Tracing struct {
	// Provider is nil when tracing is off.
	Provider trace.TracerProvider
	// Endpoint is where spans are exported (OTLP over HTTP, protobuf).
	Endpoint string
	// DB adds a span per PostgreSQL statement (EnvTraceDB).
	DB bool

	shutdown func(context.Context) error
}

// NewTracing reads the environment through lookup (the SDK itself reads the sampler,
// the resource attributes and the exporter's details from the process's environment):
//
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or OTEL_EXPORTER_OTLP_ENDPOINT
//     (with /v1/traces appended): where to export; neither set means tracing is off.
//     Only OTLP over HTTP with protobuf is spoken (OTEL_EXPORTER_OTLP_PROTOCOL
//     http/protobuf, the default); the exporter reads its other OTEL_EXPORTER_OTLP_*
//     settings (headers, timeout, certificates) itself.
//   - OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off too.
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the service (default
//     "hookinbox"); OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the sampler
//     (default parentbased_always_on), as the SDK reads them.
func NewTracing(ctx context.Context, lookup func(string) (string, bool)) (*Tracing, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(get("OTEL_TRACES_EXPORTER"), "none") {
		return &Tracing{}, nil
	}
	endpoint := get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		if base := get("OTEL_EXPORTER_OTLP_ENDPOINT"); base != "" {
			endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return &Tracing{}, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := get(k); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%s: hookinbox exports traces over OTLP/HTTP with protobuf only (http/protobuf)", k, p)
		}
		if get(k) != "" {
			break
		}
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("error creating the OTLP trace exporter for %s: %w", endpoint, err)
	}
	service := get("OTEL_SERVICE_NAME")
	if service == "" {
		service = "hookinbox"
	}
	res, err := resource.New(ctx,
		resource.WithFromEnv(), // OTEL_RESOURCE_ATTRIBUTES
		resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("error reading the trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	on := get(EnvTraceDB)
	return &Tracing{Provider: tp, Endpoint: endpoint, DB: on == "1" || strings.EqualFold(on, "true"), shutdown: tp.Shutdown}, nil
}

// Shutdown exports the spans still buffered and stops the exporter. It is a no-op
// when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// traceDB gives the pool's connections otelpgx's tracer when OpenOptions ask for
// database spans. otelpgx makes a span only beneath a recording span, so statements
// outside a traced receipt, handler or attempt (claims, polls, /readyz) make none;
// their SQL text (with $n placeholders) is recorded, never the arguments.
func traceDB(pcfg *pgxpool.Config, opts OpenOptions) {
	if !opts.TraceDB || opts.TracerProvider == nil {
		return
	}
	pcfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(opts.TracerProvider),
		otelpgx.WithTrimSQLInSpanName(), otelpgx.WithDisableConnectionDetailsInAttributes())
}
