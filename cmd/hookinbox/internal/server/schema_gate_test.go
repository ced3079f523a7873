package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

const gateYAML = `
endpoints:
  - {name: billing, path: /webhooks/stripe, provider: stripe, secrets_env: [STRIPE_SECRET], handler: billing}
  - {name: queue, path: /webhooks/queue, provider: stripe, secrets_env: [STRIPE_SECRET], mode: async, handler: billing}
`

// gateServer serves cfg's endpoints on target, which is not migrated, through the
// server's own handler. bare serves them without the schema gate: the broken
// variant.
func gateServer(t *testing.T, target config.Database, bare bool) (*httptest.Server, *Backend) {
	t.Helper()
	env := map[string]string{"STRIPE_SECRET": hostileStripeSecret}
	cfg, err := config.Parse("gate.yaml", []byte(gateYAML), config.Options{
		ResolveSecrets: true,
		LookupEnv:      func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), target, cfg, OpenOptions{Logger: discardLogger(), Observer: NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	var h http.Handler = New(cfg, b, NewMetrics(), discardLogger()).mux
	if bare {
		mux := http.NewServeMux()
		for _, ep := range cfg.Endpoints {
			mux.Handle(ep.Path, b.Inbox.Endpoint(ep.Name))
		}
		h = mux
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, b
}

// postEvent sends a signed event and returns the status and Retry-After.
func postEvent(t *testing.T, url, id string) (int, string) {
	t.Helper()
	req, err := hookinboxtest.NewRequest(url, hookinboxtest.Stripe(hostileStripeSecret), stripeBody(id, "invoice.paid"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// Before `hookinbox migrate`, a webhook is answered 503 with Retry-After on every
// endpoint, sync and async, and nothing is written; once migrated, the same event is
// received.
func TestEndpoint_SchemaNotCurrentIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	srv, b := gateServer(t, schemaDatabase(t, db), false)
	for _, path := range []string{"/webhooks/stripe", "/webhooks/queue"} {
		code, retry := postEvent(t, srv.URL+path, "evt_gate_1")
		if code != http.StatusServiceUnavailable || retry == "" {
			t.Errorf("POST %s before migrate = %d, Retry-After %q; want 503 with Retry-After", path, code, retry)
		}
	}
	var tables int
	if err := db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("%d tables before migrate (%v): nothing may be created by a request", tables, err)
	}
	if _, err := b.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The gate looks again at most every second: wait on the state asserted.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := postEvent(t, srv.URL+"/webhooks/stripe", "evt_gate_1")
		if code == http.StatusOK {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("POST after migrate = %d, want 200 (503 until the gate looks again)", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var receipts int
	if err := db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM hookinbox_inbox`).Scan(&receipts); err != nil || receipts != 1 {
		t.Fatalf("receipts after migrate = %d, %v; want 1", receipts, err)
	}
}

// The broken variant: without the gate, the endpoint meets the missing table and
// answers 500, which a provider counts as a failure of the receiver.
func TestBrokenEndpointWithoutSchemaGate_Answers500(t *testing.T) {
	t.Parallel()
	srv, _ := gateServer(t, schemaDatabase(t, testdb.New(t)), true)
	if code, _ := postEvent(t, srv.URL+"/webhooks/stripe", "evt_gate_broken"); code != http.StatusInternalServerError {
		t.Fatalf("POST before migrate without the gate = %d, want 500 (what the gate prevents)", code)
	}
}

// While PostgreSQL cannot be reached (nothing listens on its port), a webhook is
// answered 503 with Retry-After, never 500.
func TestEndpoint_DatabaseUnreachableIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	target := config.Database{Driver: config.DriverPostgres, URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/none?sslmode=disable&connect_timeout=2", closedPort(t))}
	srv, _ := gateServer(t, target, false)
	for _, path := range []string{"/webhooks/stripe", "/webhooks/queue"} {
		if code, retry := postEvent(t, srv.URL+path, "evt_gate_down"); code != http.StatusServiceUnavailable || retry == "" {
			t.Errorf("POST %s with the database unreachable = %d, Retry-After %q; want 503 with Retry-After", path, code, retry)
		}
	}
}

// closedPort returns a port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
