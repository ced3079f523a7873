package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/testwait"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP traces endpoint: it keeps the trace id of every span it
// is sent, by span name.
type collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans map[string][]string // name → trace ids (hex)
}

func newCollector(t *testing.T) *collector {
	c := &collector{spans: map[string][]string{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans[s.Name] = append(c.spans[s.Name], hex.EncodeToString(s.TraceId))
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) traces(name string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.spans[name]...)
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, serve traces a forwarded event end to end:
// the internal service receives a traceparent in the trace of the provider's request,
// and the spans of that request and of the delivery reach the collector.
func TestServe_TracesAForwardedEventToTheDownstreamService(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	col := newCollector(t)
	b := setupForward(t, `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - name: gateway
    path: /webhooks/github
    provider: github
    secrets_env: [E2E_GITHUB_SECRET]
    mode: sync
    handler: forward
    forward: {url: "`+rcv.url()+`"}
shutdown_timeout: 10s
`)
	b.env = append(b.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.srv.URL, "OTEL_SERVICE_NAME=hookinbox-e2e",
		"OTEL_TRACES_SAMPLER=always_on", "OTEL_BSP_SCHEDULE_DELAY=100")
	p := b.serve(t)
	mustRun(t, b.env, "send", "--url", p.url("/webhooks/github"), "--provider", "github", "--secret-env", "E2E_GITHUB_SECRET",
		"--file", "testdata/invoice_paid.json", "--id", "gh-trace-1", "--type", "issues")
	testwait.Until(t, 30*time.Second, "the forwarded event", func() bool { return len(rcv.received()) == 1 })
	tp := rcv.received()[0].header.Get("traceparent")
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		t.Fatalf("the internal service received traceparent %q", tp)
	}
	traceID := parts[1]
	p.signal(syscall.SIGTERM) // and shutdown exports what is left
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	for _, name := range []string{"POST gateway", "hookinbox.verify", "hookinbox.receive", "hookinbox.handle issues", "send endpoint:gateway"} {
		if got := col.traces(name); len(got) != 1 || got[0] != traceID {
			t.Errorf("span %q exported in traces %v, want once in %s", name, got, traceID)
		}
	}
	if !strings.Contains(p.Logs(), `"msg":"hookinbox: tracing on"`) {
		t.Error("serve did not log that tracing is on")
	}
}
