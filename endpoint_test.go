package hookinbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// serve mounts every test endpoint at /<name>.
func (b *testBundle) serve(t *testing.T, inbox *hookinbox.Inbox[pgx.Tx]) *httptest.Server {
	mux := http.NewServeMux()
	for _, ep := range []string{epBilling, epAnalytics, epAsync, epHybrid} {
		mux.Handle("/"+ep, inbox.Endpoint(ep))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// signed returns the Stripe-Signature of body at at: hookinboxtest's, a signer
// independent of package provider that writes the same bytes as stripe-go's test
// helper (internal/oracle checks that it does).
func signed(body []byte, secret string, at time.Time) string {
	h, err := hookinboxtest.Stripe(secret).Sign(body, at)
	if err != nil {
		panic(err)
	}
	return h.Get("Stripe-Signature")
}

type answer struct {
	status  int
	outcome string
	header  string
	errText string
}

func post(t *testing.T, method, url string, body []byte, sig string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var parsed struct{ Outcome, Error string }
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %q", method, url, raw)
	}
	return answer{resp.StatusCode, parsed.Outcome, resp.Header.Get(hookinbox.OutcomeHeader), parsed.Error}
}

// The rows of the HTTP contract (docs/CONTRACT.md, "Receiving (HTTP)") that the
// endpoint answers on its own, through the handler; serve's server limits, the schema
// gate, handshakes and batches have tests of their own. Rows that must write nothing
// are checked against a count of every table.
func TestEndpoint_ContractTable(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	for _, ep := range []string{epBilling, epAsync} {
		b.inbox.Handle(ep, "invoice.paid", countingHandler)
	}
	b.inbox.Handle(epBilling, "invoice.fails", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		if err := countingHandler(ctx, tx, ev); err != nil {
			return err
		}
		return errors.New("secret internal detail: relation foo is locked")
	})
	srv := b.serve(t, b.inbox)
	now := time.Now()
	body := func(id, typ string) []byte {
		return invoiceEvent(epBilling, id, typ, "in_1", 1000).Payload
	}
	paid := body("evt_1", "invoice.paid")

	tests := []struct {
		name       string
		method     string
		path       string
		body       []byte
		sig        string
		wantStatus int
		wantOut    string
		wantErr    string // a substring of the error
		writes     bool
	}{
		{"processed", "POST", "/billing", paid, signed(paid, testSecret, now), 200, "processed", "", true},
		{"duplicate", "POST", "/billing", paid, signed(paid, testSecret, now), 200, "duplicate", "", false},
		{"ignored", "POST", "/billing", body("evt_2", "customer.created"), signed(body("evt_2", "customer.created"), testSecret, now), 200, "ignored", "", true},
		{"accepted (async)", "POST", "/async", paid, signed(paid, testSecret, now), 200, "accepted", "", true},
		{"missing signature", "POST", "/billing", body("evt_3", "invoice.paid"), "", 400, "", "missing", false},
		{"malformed signature", "POST", "/billing", body("evt_3", "invoice.paid"), "garbage", 400, "", "malformed", false},
		{"wrong secret", "POST", "/billing", body("evt_3", "invoice.paid"), signed(body("evt_3", "invoice.paid"), "whsec_other", now), 401, "", "no valid signature", false},
		{"body changed after signing", "POST", "/billing", body("evt_3", "invoice.paid"), signed(body("evt_4", "invoice.paid"), testSecret, now), 401, "", "no valid signature", false},
		{"stale timestamp", "POST", "/billing", body("evt_3", "invoice.paid"), signed(body("evt_3", "invoice.paid"), testSecret, now.Add(-6*time.Minute)), 401, "", "tolerance", false},
		{"future timestamp", "POST", "/billing", body("evt_3", "invoice.paid"), signed(body("evt_3", "invoice.paid"), testSecret, now.Add(6*time.Minute)), 401, "", "tolerance", false},
		{"body over the limit", "POST", "/billing", bytes.Repeat([]byte("x"), 1<<20+1), "t=1,v1=00", 413, "", "larger", false},
		{"not POST", "GET", "/billing", nil, "", 405, "", "method", false},
		{"verified but no id", "POST", "/billing", []byte(`{"type":"invoice.paid"}`), signed([]byte(`{"type":"invoice.paid"}`), testSecret, now), 400, "", "id", false},
		{"verified but JSON the database refuses", "POST", "/billing", []byte(`{"id":"evt_5","type":"invoice.paid","x":"\u0000"}`), signed([]byte(`{"id":"evt_5","type":"invoice.paid","x":"\u0000"}`), testSecret, now), 400, "", "refused", false},
		{"handler failure", "POST", "/billing", body("evt_6", "invoice.fails"), signed(body("evt_6", "invoice.fails"), testSecret, now), 500, "", "internal error", false},
	}
	for _, tt := range tests {
		before := b.tableCounts(t)
		got := post(t, tt.method, srv.URL+tt.path, tt.body, tt.sig)
		after := b.tableCounts(t)
		if got.status != tt.wantStatus || got.outcome != tt.wantOut || got.header != tt.wantOut {
			t.Errorf("%s: got %d %q (header %q), want %d %q", tt.name, got.status, got.outcome, got.header, tt.wantStatus, tt.wantOut)
		}
		if !strings.Contains(got.errText, tt.wantErr) {
			t.Errorf("%s: error %q, want it to mention %q", tt.name, got.errText, tt.wantErr)
		}
		if strings.Contains(got.errText, "secret internal detail") || strings.Contains(got.errText, testSecret) {
			t.Errorf("%s: error %q leaks internals", tt.name, got.errText)
		}
		if wrote := before != after; wrote != tt.writes {
			t.Errorf("%s: wrote=%v, want %v\nbefore %s\nafter  %s", tt.name, wrote, tt.writes, before, after)
		}
	}
}

// The tolerance holds in both directions, with the boundary inside it accepted.
func TestEndpoint_TimestampToleranceBothDirections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := b.serve(t, b.inbox)
	now := time.Now()
	for i, tc := range []struct {
		offset time.Duration
		want   int
	}{
		{-4 * time.Minute, 200}, {4 * time.Minute, 200},
		{-5*time.Minute - 10*time.Second, 401}, {5*time.Minute + 10*time.Second, 401},
		{-72 * time.Hour, 401}, {72 * time.Hour, 401},
	} {
		ev := invoiceEvent(epBilling, "evt_"+string(rune('a'+i)), "invoice.created", "in_1", 0)
		if got := post(t, "POST", srv.URL+"/billing", ev.Payload, signed(ev.Payload, testSecret, now.Add(tc.offset))); got.status != tc.want {
			t.Errorf("signed %s from now: %d, want %d", tc.offset, got.status, tc.want)
		}
	}
}

// An unreachable database is a 503 with Retry-After, so the sender retries.
func TestEndpoint_DatabaseDownIs503(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg, err := pgxpool.ParseConfig("postgres://postgres@127.0.0.1:1/none?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg) // lazy: connects on first use
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	v, _ := provider.NewStripe(provider.StripeConfig{Secrets: []string{testSecret}})
	down, err := hookinbox.New(pgxdriver.New(pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: epBilling, Verifier: v}},
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	down.Handle(epBilling, "invoice.paid", countingHandler)
	srv := httptest.NewServer(down.Endpoint(epBilling))
	t.Cleanup(srv.Close)
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)
	if got := post(t, "POST", srv.URL, ev.Payload, signed(ev.Payload, testSecret, time.Now())); got.status != 503 {
		t.Fatalf("status %d (%s), want 503", got.status, got.errText)
	}
}
