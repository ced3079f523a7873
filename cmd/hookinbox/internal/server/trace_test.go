package server

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
	"github.com/hookinbox/hookinbox/provider"
)

// otlpReceiver is a collector's OTLP/HTTP traces endpoint: it decodes every export
// request and keeps the raw bodies too.
type otlpReceiver struct {
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	raw      [][]byte
	errs     []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	o.mu.Lock()
	defer o.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || len(body) == 0 {
		o.errs = append(o.errs, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		o.errs = append(o.errs, err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	o.requests = append(o.requests, &req)
	o.raw = append(o.raw, body)
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// spans returns the exported span names by service.name.
func (o *otlpReceiver) spans() map[string][]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	got := map[string][]string{}
	for _, req := range o.requests {
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, kv := range rs.Resource.GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					got[service] = append(got[service], s.Name)
				}
			}
		}
	}
	return got
}

const (
	otlpTestSecret = "whsec_otlp_test_secret_0123456789"
	otlpMarker     = "PAYLOAD-MARKER-never-exported"
)

// serve's tracing, configured from the standard variables, exports the spans of a
// delivery over OTLP/HTTP to the collector's endpoint, named by OTEL_SERVICE_NAME,
// and neither the body nor the secret is in what it sends.
func TestTracing_ExportsSpansOverOTLPHTTP(t *testing.T) {
	t.Parallel()
	collector := &otlpReceiver{}
	srv := httptest.NewServer(collector)
	t.Cleanup(srv.Close)
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
		"OTEL_SERVICE_NAME":           "hookinbox-otlp-test",
	}
	ctx := context.Background()
	tracing, err := NewTracing(ctx, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || tracing.Provider == nil {
		t.Fatalf("NewTracing: %+v, %v", tracing, err)
	}

	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "otlp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{otlpTestSecret}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(sqlitedriver.New(db), &hookinbox.Config{
		Endpoints:      []hookinbox.EndpointConfig{{Name: "in", Verifier: v, Mode: hookinbox.ModeAsync}},
		TracerProvider: tracing.Provider, Logger: discardLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	inbox.Handle("in", "*", func(context.Context, *sql.Tx, hookinbox.Event) error { return nil })
	body := []byte(`{"id":"evt_otlp_1","object":"event","type":"invoice.paid","data":{"object":{"description":"` + otlpMarker + `"}}}`)
	sig := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: otlpTestSecret, Timestamp: time.Now()}).Header
	req := httptest.NewRequest(http.MethodPost, "/in", bytes.NewReader(body))
	req.Header.Set("Stripe-Signature", sig)
	rec := httptest.NewRecorder()
	inbox.Endpoint("in").ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("answer %d %s", rec.Code, rec.Body)
	}
	// Shutdown exports what the batcher holds.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tracing.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}

	collector.mu.Lock()
	errs, raw := collector.errs, collector.raw
	collector.mu.Unlock()
	if len(errs) > 0 || len(raw) == 0 {
		t.Fatalf("collector: %d export requests, refused: %v", len(raw), errs)
	}
	names := collector.spans()["hookinbox-otlp-test"]
	for _, want := range []string{"POST in", "hookinbox.verify", "hookinbox.receive"} {
		if !slices.Contains(names, want) {
			t.Errorf("exported spans of hookinbox-otlp-test %v lack %q (all: %v)", names, want, collector.spans())
		}
	}
	for _, b := range raw {
		for _, forbidden := range []string{otlpMarker, otlpTestSecret} {
			if bytes.Contains(b, []byte(forbidden)) {
				t.Errorf("an export request contains %q", forbidden)
			}
		}
	}
}

// Without an endpoint, or switched off, tracing is off: no provider at all.
func TestTracing_OffWithoutEndpoint(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
	} {
		tr, err := NewTracing(context.Background(), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil || tr.Provider != nil {
			t.Errorf("%v: provider %v, err %v; want off", env, tr.Provider, err)
		}
	}
	_, err := NewTracing(context.Background(), func(k string) (string, bool) {
		v, ok := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}[k]
		return v, ok
	})
	if err == nil {
		t.Error("OTEL_EXPORTER_OTLP_PROTOCOL=grpc was accepted; only http/protobuf is spoken")
	}
}

// Database spans are opt-in (OpenOptions.TraceDB): when on, the handler's statements
// are spans beneath the handler's span, with no statement's arguments (the payload
// is one) in them; when off, there is none. A statement run outside a traced
// operation (the migration) makes no span, so no trace starts at the database.
func TestTracing_DBSpansAreOptInAndBeneathTheHandler(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			t.Parallel()
			recorder := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			db := testdb.New(t)
			u, err := url.Parse(testdb.URL())
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			q.Set("search_path", db.Schema)
			u.RawQuery = q.Encode()
			cfg := parseConfig(t, `
endpoints:
  - {name: billing, path: /b, provider: stripe, handler: billing, secrets_env: [S]}
`)
			ctx := context.Background()
			b, err := Open(ctx, config.Database{Driver: config.DriverPostgres, URL: u.String()}, cfg,
				OpenOptions{Logger: discardLogger(), TracerProvider: tp, TraceDB: on})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			if _, err := b.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			body := []byte(`{"id":"evt_db_1","object":"event","type":"invoice.paid","created":1700000000,"data":{"object":` +
				`{"id":"in_db_1","object":"invoice","customer":"cus_1","status":"paid","amount_paid":100,"currency":"eur","description":"` + otlpMarker + `"}}}`)
			sig := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_test", Timestamp: time.Now()}).Header
			req := httptest.NewRequest(http.MethodPost, "/b", bytes.NewReader(body))
			req.Header.Set("Stripe-Signature", sig)
			rec := httptest.NewRecorder()
			b.Inbox.Endpoint("billing").ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("answer %d %s", rec.Code, rec.Body)
			}
			var handle sdktrace.ReadOnlySpan
			var dbSpans []sdktrace.ReadOnlySpan
			testwait.For(t, 10*time.Second, "the handler's span and, with TraceDB, its database spans", func() (bool, error) {
				handle, dbSpans = nil, nil
				for _, s := range recorder.Ended() {
					if s.Name() == "hookinbox.handle invoice.paid" {
						handle = s
					}
					for _, kv := range s.Attributes() {
						if kv.Key == "db.system.name" {
							dbSpans = append(dbSpans, s)
						}
					}
				}
				return handle != nil && (!on || len(dbSpans) > 0), fmt.Errorf("handler span %v, %d database spans", handle != nil, len(dbSpans))
			})
			if !on {
				if len(dbSpans) > 0 {
					t.Fatalf("database spans with TraceDB off: %d", len(dbSpans))
				}
				return
			}
			byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
			for _, s := range recorder.Ended() {
				byID[s.SpanContext().SpanID()] = s
			}
			// beneath reports whether s descends from a span named name.
			beneath := func(s sdktrace.ReadOnlySpan, name string) bool {
				for p, ok := byID[s.Parent().SpanID()]; ok; p, ok = byID[p.Parent().SpanID()] {
					if p.Name() == name {
						return true
					}
				}
				return false
			}
			underHandler := 0
			for _, s := range dbSpans {
				if s.SpanContext().TraceID() != handle.SpanContext().TraceID() || !beneath(s, "hookinbox.receive") {
					t.Errorf("database span %q is not in the delivery's trace beneath its receipt", s.Name())
				}
				if beneath(s, "hookinbox.handle invoice.paid") {
					underHandler++
				}
				for _, kv := range s.Attributes() {
					if strings.Contains(kv.Value.Emit(), otlpMarker) {
						t.Errorf("database span %q: %s carries the payload", s.Name(), kv.Key)
					}
				}
			}
			if underHandler == 0 {
				t.Errorf("no database span beneath the handler's span among %d", len(dbSpans))
			}
		})
	}
}
