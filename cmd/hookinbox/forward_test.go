package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testnats"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// The forward tests run serve with handler forward against a real receiver: an HTTP
// server of the test's own, or a JetStream stream.

const e2eGitHubSecret = "gh_e2e_secret"

// receiver is an internal service that forwarded events are POSTed to. It records
// what it accepted and can refuse everything until the test fixes it.
type receiver struct {
	srv     *httptest.Server
	failing atomic.Bool
	refused atomic.Int32

	mu       sync.Mutex
	accepted []received
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if r.failing.Load() {
			r.refused.Add(1)
			http.Error(w, "receiver unavailable", http.StatusServiceUnavailable)
			return
		}
		r.mu.Lock()
		r.accepted = append(r.accepted, received{header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/events" }

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.accepted...)
}

// receivedBySource returns the accepted deliveries by the source event id they
// carry, failing the test if an idempotency key arrived twice.
func (r *receiver) receivedBySource(t *testing.T) map[string]received {
	t.Helper()
	keys := map[string]bool{}
	out := map[string]received{}
	for _, got := range r.received() {
		key := got.header.Get("Idempotency-Key")
		if key == "" || keys[key] {
			t.Errorf("delivery with idempotency key %q: empty or seen before", key)
		}
		keys[key] = true
		out[got.header.Get("Hookinbox-Source-Event-Id")] = got
	}
	return out
}

// setupForward creates a schema, writes config (a format with the database URL as
// its only verb) and migrates.
func setupForward(t *testing.T, config string) *e2eBundle {
	t.Helper()
	db := testdb.New(t)
	b := &e2eBundle{db: db, dbURL: schemaURL(t, db, ""), env: childEnv(
		"E2E_STRIPE_SECRET="+e2eSecret, "E2E_GITHUB_SECRET="+e2eGitHubSecret)}
	b.config = filepath.Join(t.TempDir(), "hookinbox.yaml")
	if err := os.WriteFile(b.config, fmt.Appendf(nil, config, b.dbURL), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, b.env, "migrate", "--config", b.config)
	return b
}

func (b *e2eBundle) outboxList(t *testing.T, flags ...string) []outboxMessageJSON {
	t.Helper()
	var list []outboxMessageJSON
	out := mustRun(t, b.env, append([]string{"outbox", "list", "--json", "--config", b.config}, flags...)...)
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("outbox list printed %q: %v", out, err)
	}
	return list
}

// Every verified, de-duplicated event reaches the internal service once, unchanged,
// with the source event in its headers; the duplicate delivery is not forwarded. The
// dispatcher polls once an hour here, so forwarding rests on serve waking it.
func TestServe_ForwardsEachEventOnceToHTTP(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	b := setupForward(t, `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - name: billing
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [E2E_STRIPE_SECRET]
    handler: billing
  - name: gateway
    path: /webhooks/github
    provider: github
    secrets_env: [E2E_GITHUB_SECRET]
    mode: sync
    handler: forward
    forward: {url: "`+rcv.url()+`"}
outbox: {poll_interval: 1h}
shutdown_timeout: 10s
`)
	p := b.serve(t)

	// Billing writes an outbox message without a destination; with no outbox.sink it
	// must stay pending, not go to the gateway's receiver (the only sink).
	b.send(t, p, "/webhooks/stripe", "--id", "evt_fwd_billing", "--invoice", "in_fwd_1")

	body, err := os.ReadFile("testdata/invoice_paid.json")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"gh-fwd-1", "gh-fwd-2", "gh-fwd-3"}
	for _, id := range ids {
		out := mustRun(t, b.env, "send", "--url", p.url("/webhooks/github"), "--provider", "github", "--secret-env", "E2E_GITHUB_SECRET",
			"--file", "testdata/invoice_paid.json", "--id", id, "--type", "issues", "--repeat", "2")
		if got := outcomes(strings.Split(strings.TrimSpace(out), "\n")); got["200 processed"] != 1 || got["200 duplicate"] != 1 {
			t.Errorf("send %s twice: %v", id, got)
		}
	}
	testwait.Until(t, 30*time.Second, "three forwarded events", func() bool { return len(rcv.received()) >= 3 })
	testwait.Until(t, 30*time.Second, "the outbox to hold only billing's message", func() bool { return len(b.outboxList(t, "--pending")) == 1 })

	got := rcv.receivedBySource(t)
	if len(rcv.received()) != 3 || len(got) != 3 {
		t.Fatalf("received %d deliveries for sources %v, want one per event", len(rcv.received()), keysOf(got))
	}
	for _, id := range ids {
		d, ok := got[id]
		if !ok {
			t.Errorf("event %s was not forwarded", id)
			continue
		}
		h := d.header
		if h.Get("Hookinbox-Source-Provider") != "github" || h.Get("Hookinbox-Source-Endpoint") != "gateway" ||
			h.Get("Hookinbox-Event-Type") != "issues" || h.Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(h.Get("Idempotency-Key"), "hookinbox:github:gateway:"+id+":") || h.Get("Hookinbox-Fencing-Token") == "" {
			t.Errorf("headers of %s: %v", id, h)
		}
		// Equal as JSON: the payload is stored as jsonb, which keeps the values but
		// not the key order or spacing.
		if !jsonEqual(t, d.body, body) {
			t.Errorf("body of %s = %s, want the verified body %s", id, d.body, body)
		}
	}

	pending := b.outboxList(t, "--pending")
	if len(pending) != 1 || pending[0].Destination != "" || pending[0].Attempts != 0 || pending[0].State != "pending" ||
		pending[0].Source.EventID != "evt_fwd_billing" || pending[0].EventType != "InvoicePaymentBooked" {
		t.Errorf("pending outbox messages = %+v, want billing's, never attempted", pending)
	}
	if all := b.outboxList(t); len(all) != 4 || all[0].State != "published" || all[0].Destination != "endpoint:gateway" || all[0].PublishedAt == nil {
		t.Errorf("outbox list = %+v", all)
	}
	if s := b.status(t); s.Outbox.Pending != 1 || s.Outbox.NeedsReview != 0 || s.Outbox.OldestPendingAgeSeconds <= 0 {
		t.Errorf("status outbox = %+v", s.Outbox)
	}
	if v := metric(t, p, `hookinbox_outbox_deliveries_total{result="delivered",sink="endpoint:gateway"}`); v != 3 {
		t.Errorf("delivered counter = %v, want 3", v)
	}
	if v := metric(t, p, "hookinbox_outbox_pending"); v != 1 {
		t.Errorf("hookinbox_outbox_pending = %v, want 1", v)
	}
	if logs := p.Logs(); !strings.Contains(logs, `"forward":"url `+rcv.url()+`"`) || !strings.Contains(logs, "no outbox.sink") {
		t.Errorf("serve did not log where forwarded events and billing's messages go")
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}
}

// An async endpoint forwards to JetStream: one message per event, with Nats-Msg-Id
// set to the idempotency key.
func TestServe_ForwardsEachEventOnceToJetStream(t *testing.T) {
	t.Parallel()
	stream := testnats.New(t)
	b := setupForward(t, `
database_url: %s
listen: 127.0.0.1:0
nats_url: `+stream.Conn.ConnectedUrl()+`
endpoints:
  - name: js
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [E2E_STRIPE_SECRET]
    mode: async
    handler: forward
    forward: {nats_subject: `+stream.Subject+`}
worker: {poll_interval: 100ms}
outbox: {poll_interval: 1h}
shutdown_timeout: 10s
`)
	p := b.serve(t)
	ids := []string{"evt_js_1", "evt_js_2", "evt_js_3"}
	for _, id := range ids {
		got := outcomes(b.send(t, p, "/webhooks/stripe", "--id", id, "--type", "customer.created", "--repeat", "2"))
		if got["200 accepted"] != 1 || got["200 duplicate"] != 1 {
			t.Errorf("send %s twice: %v", id, got)
		}
	}
	testwait.Until(t, 30*time.Second, "the outbox to be delivered", func() bool {
		s := b.status(t)
		return s.Unprocessed == 0 && s.Outbox.Pending == 0 && b.count(t, `SELECT count(*) FROM hookinbox_outbox`) == 3
	})
	if n := stream.Count(t); n != 3 {
		t.Fatalf("stream holds %d messages, want 3", n)
	}
	seen := map[string]bool{}
	for seq := uint64(1); seq <= 3; seq++ {
		msg, err := stream.Stream.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		id := msg.Header.Get("Hookinbox-Source-Event-Id")
		if msgID := msg.Header.Get("Nats-Msg-Id"); !strings.HasPrefix(msgID, "hookinbox:stripe:js:"+id+":") || msgID != msg.Header.Get("Idempotency-Key") {
			t.Errorf("message %d: Nats-Msg-Id %q for source %q", seq, msgID, id)
		}
		var ev struct{ ID, Type string }
		if err := json.Unmarshal(msg.Data, &ev); err != nil || ev.ID != id || ev.Type != "customer.created" {
			t.Errorf("message %d: payload %s is not the event %s", seq, msg.Data, id)
		}
		seen[id] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("event %s was not published", id)
		}
	}
	if v := metric(t, p, `hookinbox_outbox_deliveries_total{result="delivered",sink="endpoint:js"}`); v != 3 {
		t.Errorf("delivered counter = %v, want 3", v)
	}
	if _, body := get(p.url("/readyz")); !strings.Contains(body, `"nats":"connected"`) {
		t.Errorf("/readyz = %s, want it to report NATS connected", body)
	}
}

// serve starts while NATS is unreachable, reports it without failing /readyz, and
// delivers once NATS is back.
func TestServe_ForwardsToJetStreamOnceNATSIsBack(t *testing.T) {
	t.Parallel()
	stream := testnats.New(t)
	natsHost := strings.TrimPrefix(stream.Conn.ConnectedUrl(), "nats://")
	proxy := newTCPProxy(t, natsHost)
	proxy.setDown(true)
	b := setupForward(t, `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - name: js
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [E2E_STRIPE_SECRET]
    handler: forward
    forward: {nats_subject: `+stream.Subject+`}
outbox: {poll_interval: 100ms}
shutdown_timeout: 10s
`)
	b.env = append(b.env, "HOOKINBOX_NATS_URL=nats://"+proxy.addr())
	p := b.serve(t)
	if code, body := get(p.url("/readyz")); code != 200 || !strings.Contains(body, `"nats":"disconnected"`) {
		t.Errorf("/readyz without NATS = %d %s, want 200 reporting NATS disconnected", code, body)
	}
	if got := b.send(t, p, "/webhooks/stripe", "--id", "evt_js_late", "--type", "customer.created"); !strings.HasSuffix(got[0], `200 {"outcome":"processed"}`) {
		t.Errorf("send while NATS is down: %q", got)
	}
	const failed = `hookinbox_outbox_deliveries_total{result="failed",sink="endpoint:js"}`
	testwait.Until(t, 30*time.Second, "a failed delivery", func() bool { return metric(t, p, failed) >= 1 })

	proxy.setDown(false)
	testwait.Until(t, 30*time.Second, "the message in the stream", func() bool { return stream.Count(t) == 1 })
	testwait.Until(t, 30*time.Second, "the outbox to be delivered", func() bool { return b.status(t).Outbox.Pending == 0 })
	testwait.Until(t, 30*time.Second, "/readyz to report NATS connected", func() bool {
		_, body := get(p.url("/readyz"))
		return strings.Contains(body, `"nats":"connected"`)
	})
	if !strings.Contains(p.Logs(), "NATS is unreachable") {
		t.Errorf("serve did not log that NATS was unreachable")
	}
}

// Messages that used every attempt are listed and retried by the operator commands,
// and then delivered; status shows them meanwhile.
func TestOutbox_RetryBringsNeedsReviewBack(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	rcv.failing.Store(true)
	b := setupForward(t, `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - name: gateway
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [E2E_STRIPE_SECRET]
    handler: forward
    forward: {url: "`+rcv.url()+`"}
outbox: {max_attempts: 2, poll_interval: 100ms}
shutdown_timeout: 10s
`)
	p := b.serve(t)
	for _, id := range []string{"evt_review_1", "evt_review_2"} {
		b.send(t, p, "/webhooks/stripe", "--id", id, "--type", "customer.created")
	}
	testwait.Until(t, 30*time.Second, "both messages to need review", func() bool { return b.status(t).Outbox.NeedsReview == 2 })
	if s := b.status(t); s.Outbox.Pending != 2 || s.Unprocessed != 0 {
		t.Errorf("status = %+v", s)
	}
	if out := mustRun(t, b.env, "status", "--config", b.config); !regexp.MustCompile(`(?m)^outbox needs review +2$`).MatchString(out) {
		t.Errorf("status printed %q", out)
	}
	if n := rcv.refused.Load(); n != 4 {
		t.Errorf("receiver refused %d deliveries, want 2 attempts of 2 messages", n)
	}
	// Each delivery is counted just after its failure is recorded: wait for the counter.
	testwait.Until(t, 30*time.Second, "the failed deliveries counter to reach 4", func() bool {
		return metric(t, p, `hookinbox_outbox_deliveries_total{result="failed",sink="endpoint:gateway"}`) == 4
	})

	list := b.outboxList(t, "--needs-review")
	if len(list) != 2 {
		t.Fatalf("outbox list --needs-review = %+v", list)
	}
	byEvent := map[string]outboxMessageJSON{}
	for _, m := range list {
		if m.State != "needs_review" || m.Attempts != 2 || m.Destination != "endpoint:gateway" || !strings.Contains(m.LastError, "503") {
			t.Errorf("message needing review: %+v", m)
		}
		byEvent[m.Source.EventID] = m
	}
	if out := mustRun(t, b.env, "outbox", "list", "--needs-review", "--config", b.config); !strings.Contains(out, "needs_review") || !strings.Contains(out, "evt_review_1") {
		t.Errorf("outbox list --needs-review printed %q", out)
	}
	if r := runBinary(t, b.env, "outbox", "retry", "999999", "--config", b.config); r.code != 1 || !strings.Contains(r.stderr, "no undelivered outbox message 999999") {
		t.Errorf("outbox retry of an absent message: exit %d, %q", r.code, r.stderr)
	}

	rcv.failing.Store(false)
	first := strconv.FormatInt(byEvent["evt_review_1"].ID, 10)
	if out := mustRun(t, b.env, "outbox", "retry", first, "--config", b.config); out != "retrying outbox message "+first+"\n" {
		t.Errorf("outbox retry printed %q", out)
	}
	testwait.Until(t, 30*time.Second, "the retried message to be delivered", func() bool { return len(rcv.received()) == 1 })
	if out := mustRun(t, b.env, "outbox", "retry", "--all-needs-review", "--config", b.config); out != "retrying 1 outbox messages\n" {
		t.Errorf("outbox retry --all-needs-review printed %q", out)
	}
	testwait.Until(t, 30*time.Second, "every message to be delivered", func() bool { return b.status(t).Outbox.Pending == 0 })
	if got := rcv.receivedBySource(t); len(got) != 2 || len(rcv.received()) != 2 {
		t.Errorf("received %d deliveries for %v, want one per event", len(rcv.received()), keysOf(got))
	}
	if r := runBinary(t, b.env, "outbox", "retry", first, "--config", b.config); r.code != 1 {
		t.Errorf("outbox retry of a delivered message: exit %d, %q", r.code, r.stderr)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
