package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// The black-box tests run the built binary against a fresh schema, as an operator
// would: migrate, serve, send, status, events, cleanup.

const e2eSecret = "whsec_e2e_test_secret"

const e2eConfig = `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - name: billing
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [E2E_STRIPE_SECRET]
    mode: sync
    handler: billing
  - name: queue
    path: /webhooks/queue
    provider: stripe
    secrets_env: [E2E_STRIPE_SECRET]
    mode: async
    handler: billing
worker: {concurrency: 2, max_attempts: 2, poll_interval: 100ms}
shutdown_timeout: 10s
`

type e2eBundle struct {
	db     *testdb.DB
	dbURL  string
	env    []string
	config string
}

// setupE2E creates a schema, writes a config for it (the database reached through
// dbHost when set), and migrates it with the binary.
func setupE2E(t *testing.T, dbHost string) *e2eBundle {
	t.Helper()
	db := testdb.New(t)
	b := &e2eBundle{db: db, dbURL: schemaURL(t, db, ""), env: childEnv("E2E_STRIPE_SECRET=" + e2eSecret)}
	b.config = filepath.Join(t.TempDir(), "hookinbox.yaml")
	if err := os.WriteFile(b.config, fmt.Appendf(nil, e2eConfig, schemaURL(t, db, dbHost)), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, b.env, "migrate", "--database-url", b.dbURL, "--config", b.config)
	if !strings.Contains(out, "schema migrated from version 0 to") {
		t.Fatalf("migrate printed %q", out)
	}
	return b
}

func (b *e2eBundle) serve(t *testing.T) *serveProc {
	t.Helper()
	p := startServe(t, b.env, "--config", b.config)
	testwait.Until(t, 30*time.Second, "/readyz to answer 200", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })
	return p
}

// send runs "hookinbox send" against path and returns its output lines.
func (b *e2eBundle) send(t *testing.T, p *serveProc, path string, args ...string) []string {
	t.Helper()
	out := mustRun(t, b.env, append([]string{"send", "--url", p.url(path), "--secret-env", "E2E_STRIPE_SECRET"}, args...)...)
	return strings.Split(strings.TrimSpace(out), "\n")
}

func (b *e2eBundle) status(t *testing.T) statusJSON {
	t.Helper()
	var s statusJSON
	out := mustRun(t, b.env, "status", "--json", "--config", b.config)
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status --json printed %q: %v", out, err)
	}
	return s
}

func (b *e2eBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// metric returns the value of one sample of /metrics, 0 when absent.
func metric(t *testing.T, p *serveProc, sample string) float64 {
	t.Helper()
	code, body := get(p.url("/metrics"))
	if code != 200 {
		t.Fatalf("/metrics answered %d", code)
	}
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

func outcomes(lines []string) map[string]int {
	got := map[string]int{}
	re := regexp.MustCompile(`-> (\d+) \{"outcome":"(\w+)"\}`)
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			got[m[1]+" "+m[2]]++
		} else {
			got[l]++
		}
	}
	return got
}

func TestServe_ReceivesProcessesAndReports(t *testing.T) {
	t.Parallel()
	b := setupE2E(t, "")
	p := b.serve(t)
	const processed = `hookinbox_deliveries_total{endpoint="billing",outcome="processed",status="200"}`
	const duplicate = `hookinbox_deliveries_total{endpoint="billing",outcome="duplicate",status="200"}`
	processedBefore := metric(t, p, processed)

	// An event, the same event again, and a type without a handler.
	if got := b.send(t, p, "/webhooks/stripe", "--id", "evt_e2e_1", "--invoice", "in_e2e_1", "--amount", "4200"); len(got) != 1 || !strings.HasSuffix(got[0], `200 {"outcome":"processed"}`) {
		t.Errorf("first send: %q", got)
	}
	if got := b.send(t, p, "/webhooks/stripe", "--id", "evt_e2e_1", "--invoice", "in_e2e_1", "--amount", "4200"); len(got) != 1 || !strings.HasSuffix(got[0], `200 {"outcome":"duplicate"}`) {
		t.Errorf("second send: %q", got)
	}
	if got := b.send(t, p, "/webhooks/stripe", "--type", "customer.created"); len(got) != 1 || !strings.HasSuffix(got[0], `200 {"outcome":"ignored"}`) {
		t.Errorf("send customer.created: %q", got)
	}

	// Copies at once: exactly one is processed.
	got := outcomes(b.send(t, p, "/webhooks/stripe", "--invoice", "in_e2e_2", "--repeat", "8", "--concurrency", "8"))
	if got["200 processed"] != 1 || got["200 duplicate"] != 7 {
		t.Errorf("8 concurrent copies: %v, want 1 processed and 7 duplicates", got)
	}

	// An invoice's lifecycle out of order, with its payment under two event ids.
	got = outcomes(b.send(t, p, "/webhooks/stripe", "--invoice", "in_e2e_3", "--shuffle",
		"--type", "invoice.created,invoice.finalized,invoice.paid,invoice.payment_succeeded"))
	if got["200 processed"] != 4 {
		t.Errorf("lifecycle: %v, want 4 processed", got)
	}

	// A JSON file, sent byte for byte.
	if got := b.send(t, p, "/webhooks/stripe", "--file", "testdata/invoice_paid.json"); len(got) != 1 || got[0] != `evt_file_1 invoice.paid -> 200 {"outcome":"processed"}` {
		t.Errorf("send --file: %q", got)
	}

	// stripe-go's signer, an independent client.
	for _, id := range []string{"evt_e2e_go_1", "evt_e2e_go_1"} {
		body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":"invoice.payment_succeeded","data":{"object":{"id":"in_e2e_4","customer":"cus_go","amount_paid":999,"currency":"eur","status":"paid"}}}`, id)
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: e2eSecret, Timestamp: time.Now()})
		req, _ := http.NewRequest(http.MethodPost, p.url("/webhooks/stripe"), bytes.NewReader(signed.Payload))
		req.Header.Set("Stripe-Signature", signed.Header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("stripe-go signed request answered %d", resp.StatusCode)
		}
	}
	// A wrong secret is refused, and send exits 1.
	r := runBinary(t, b.env, "send", "--url", p.url("/webhooks/stripe"), "--secret", "whsec_wrong")
	if r.code != 1 || !strings.Contains(r.stdout, "-> 401 ") {
		t.Errorf("send with a wrong secret: exit %d, %q", r.code, r.stdout)
	}

	// One ledger row per paid invoice, whatever the copies and event ids.
	for invoice, amount := range map[string]int{"in_e2e_1": 4200, "in_e2e_2": 1000, "in_e2e_3": 1000, "in_e2e_4": 999, "in_file_1": 500} {
		if n := b.count(t, `SELECT count(*) FROM ledger_entries WHERE invoice_id = $1 AND amount = $2`, invoice, amount); n != 1 {
			t.Errorf("ledger rows for %s = %d, want 1", invoice, n)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM ledger_entries`); n != 5 {
		t.Errorf("ledger rows = %d, want 5", n)
	}

	s := b.status(t)
	// in_e2e_1, in_e2e_2, in_e2e_3's and in_file_1's paid; the rest under their own types.
	if s.Unprocessed != 0 || s.NeedsReview != 0 || s.ReceivedLastHour["invoice.paid"] != 4 ||
		s.ReceivedLastHour["invoice.payment_succeeded"] != 2 || s.ReceivedLastHour["customer.created"] != 1 {
		t.Errorf("status = %+v", s)
	}
	// 1 + 1 + 4 + 1 processed by send and 1 by stripe-go.
	if d := metric(t, p, processed) - processedBefore; d != 8 {
		t.Errorf("processed deliveries counter moved by %v, want 8", d)
	}
	if d := metric(t, p, duplicate); d != 9 {
		t.Errorf("duplicate deliveries counter = %v, want 9", d)
	}
	if v := metric(t, p, `hookinbox_deliveries_total{endpoint="billing",outcome="unauthorized",status="401"}`); v != 1 {
		t.Errorf("unauthorized deliveries counter = %v, want 1", v)
	}
	if v := metric(t, p, "hookinbox_stats_up"); v != 1 {
		t.Errorf("hookinbox_stats_up = %v", v)
	}

	// Logs: one JSON line per delivery, no secret, no body.
	logs := p.Logs()
	if !strings.Contains(logs, `"event_id":"evt_e2e_1"`) || !strings.Contains(logs, `"outcome":"duplicate"`) {
		t.Errorf("delivery lines missing from the logs")
	}
	if strings.Contains(logs, e2eSecret) || strings.Contains(logs, "in_e2e_1") {
		t.Errorf("the logs contain a secret or a body")
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}
}

// A receipt that used every attempt waits for a person; once the cause is fixed,
// events retry brings it back and a worker processes it.
func TestEvents_RetryBringsNeedsReviewBack(t *testing.T) {
	t.Parallel()
	b := setupE2E(t, "")
	p := b.serve(t)
	ctx := context.Background()

	// The "bug": the database refuses this customer's invoices.
	if _, err := b.db.Pool.Exec(ctx, `ALTER TABLE invoices ADD CONSTRAINT e2e_block CHECK (customer_id <> 'cus_blocked')`); err != nil {
		t.Fatal(err)
	}
	if got := b.send(t, p, "/webhooks/queue", "--id", "evt_e2e_review", "--invoice", "in_e2e_review", "--customer", "cus_blocked"); !strings.HasSuffix(got[0], `200 {"outcome":"accepted"}`) {
		t.Fatalf("send to the async endpoint: %q", got)
	}
	testwait.Until(t, 30*time.Second, "the receipt to need review", func() bool { return b.status(t).NeedsReview == 1 })
	// The worker counts an attempt just after the state it records commits: wait for
	// the counter too, rather than read it at the instant the state changed.
	testwait.Until(t, 30*time.Second, "the failed attempts counter to reach 2", func() bool {
		return metric(t, p, `hookinbox_attempts_total{endpoint="queue",result="failed"}`) == 2
	})

	var list []receiptJSON
	if err := json.Unmarshal([]byte(mustRun(t, b.env, "events", "list", "--needs-review", "--json", "--config", b.config)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].EventID != "evt_e2e_review" || list[0].State != "needs_review" || !strings.Contains(list[0].LastError, "e2e_block") {
		t.Fatalf("events list --needs-review = %+v", list)
	}

	// Nothing to retry under a wrong key: exit 1.
	if r := runBinary(t, b.env, "events", "retry", "stripe", "queue", "evt_absent", "--config", b.config); r.code != 1 {
		t.Errorf("events retry of an absent receipt: exit %d, %s", r.code, r.stderr)
	}

	if _, err := b.db.Pool.Exec(ctx, `ALTER TABLE invoices DROP CONSTRAINT e2e_block`); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, b.env, "events", "retry", "stripe", "queue", "evt_e2e_review", "--config", b.config); !strings.Contains(out, "retrying stripe queue evt_e2e_review") {
		t.Errorf("events retry printed %q", out)
	}
	testwait.Until(t, 30*time.Second, "the retried receipt to be processed", func() bool {
		var r receiptJSON
		out := mustRun(t, b.env, "events", "show", "stripe", "queue", "evt_e2e_review", "--json", "--config", b.config)
		return json.Unmarshal([]byte(out), &r) == nil && r.State == "processed"
	})
	if n := b.count(t, `SELECT count(*) FROM ledger_entries WHERE invoice_id = 'in_e2e_review'`); n != 1 {
		t.Errorf("ledger rows = %d, want 1", n)
	}
	if s := b.status(t); s.NeedsReview != 0 || s.Unprocessed != 0 {
		t.Errorf("status after retry = %+v", s)
	}
}

func TestCleanup_DryRunCountsAndShortRetentionIsRefused(t *testing.T) {
	t.Parallel()
	b := setupE2E(t, "")
	p := b.serve(t)
	b.send(t, p, "/webhooks/stripe", "--repeat", "1", "--type", "invoice.created,invoice.paid,customer.created")
	// Two of them were processed 100 hours ago.
	if _, err := b.db.Pool.Exec(context.Background(), `
UPDATE hookinbox_inbox SET received_at = now() - interval '100 hours', processed_at = now() - interval '100 hours'
 WHERE event_type <> 'customer.created'`); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, b.env, "cleanup", "--older-than", "96h", "--dry-run", "--config", b.config)
	if !strings.Contains(out, "would delete 2 processed receipts, 0 published outbox messages and 0 recorded effects older than 96h") {
		t.Errorf("cleanup --dry-run printed %q", out)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 3 {
		t.Errorf("receipts after a dry run = %d, want 3", n)
	}

	r := runBinary(t, b.env, "cleanup", "--older-than", "1h", "--config", b.config)
	if r.code != 2 || !strings.Contains(r.stderr, "--force") {
		t.Errorf("cleanup under the retry window: exit %d, %q", r.code, r.stderr)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 3 {
		t.Errorf("receipts after a refused cleanup = %d, want 3", n)
	}
	out = mustRun(t, b.env, "cleanup", "--older-than", "1h", "--force", "--dry-run", "--config", b.config)
	if !strings.Contains(out, "would delete 2 ") {
		t.Errorf("cleanup --force --dry-run printed %q", out)
	}

	out = mustRun(t, b.env, "cleanup", "--older-than", "96h", "--config", b.config)
	if !strings.Contains(out, "deleted 2 processed receipts") {
		t.Errorf("cleanup printed %q", out)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 1 {
		t.Errorf("receipts after cleanup = %d, want 1", n)
	}
}

func TestServe_ReadyzFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	proxy := newTCPProxy(t, serverHost(t))
	b := setupE2E(t, proxy.addr())
	p := b.serve(t)

	proxy.setDown(true)
	testwait.Until(t, 30*time.Second, "/readyz to answer 503", func() bool { code, _ := get(p.url("/readyz")); return code == 503 })
	if code, body := get(p.url("/readyz")); !strings.Contains(body, `"database unreachable"`) {
		t.Errorf("/readyz while down = %d %s", code, body)
	}
	if code, _ := get(p.url("/healthz")); code != 200 {
		t.Errorf("/healthz while the database is down = %d, want 200", code)
	}
	// A delivery meanwhile is refused with 503, so the provider retries.
	r := runBinary(t, b.env, "send", "--url", p.url("/webhooks/stripe"), "--secret-env", "E2E_STRIPE_SECRET", "--id", "evt_e2e_down")
	if r.code != 1 || !regexp.MustCompile(`-> 503 `).MatchString(r.stdout) {
		t.Errorf("send while the database is down: exit %d, %q", r.code, r.stdout)
	}

	proxy.setDown(false)
	testwait.Until(t, 30*time.Second, "/readyz to answer 200 again", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })
	if got := b.send(t, p, "/webhooks/stripe", "--id", "evt_e2e_down"); !strings.HasSuffix(got[0], `200 {"outcome":"processed"}`) {
		t.Errorf("the retry after the outage: %q", got)
	}
}

// serverHost is the test database server's host:port.
func serverHost(t *testing.T) string {
	t.Helper()
	u := schemaURL(t, &testdb.DB{}, "")
	m := regexp.MustCompile(`@([^/]+)/`).FindStringSubmatch(u)
	if m == nil {
		t.Fatalf("no host in %s", testdb.URL())
	}
	return m[1]
}

// SIGTERM during a burst: every request answered 2xx has its effect committed, and
// serve exits 0 within its shutdown timeout.
func TestServe_SigtermDuringBurstLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	b := setupE2E(t, "")
	p := b.serve(t)
	const total, concurrency = 200, 16

	var once sync.Once
	acked := burst(t, p.url("/webhooks/stripe"), "burst", total, concurrency, func(n int) {
		if n == total/4 {
			once.Do(func() { p.signal(syscall.SIGTERM) })
		}
	})
	once.Do(func() { p.signal(syscall.SIGTERM) }) // if the burst ended first
	if code := p.wait(10*time.Second + 20*time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM, want 0", code)
	}
	if len(acked) < total/4 {
		t.Fatalf("only %d requests acknowledged", len(acked))
	}
	for id := range acked {
		invoice := strings.Replace(id, "evt_", "in_", 1)
		if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = $1 AND processed_at IS NOT NULL`, id); n != 1 {
			t.Errorf("acknowledged %s has %d processed receipts, want 1", id, n)
		}
		if n := b.count(t, `SELECT count(*) FROM ledger_entries WHERE invoice_id = $1`, invoice); n != 1 {
			t.Errorf("acknowledged %s has %d ledger rows, want 1", id, n)
		}
	}
	t.Logf("%d of %d requests acknowledged before the shutdown", len(acked), total)
}

// A second signal exits at once, even with a request in flight; the request was not
// acknowledged and leaves nothing behind, so the sender's retry is processed normally.
func TestServe_SecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	b := setupE2E(t, "")
	p := b.serve(t)
	ctx := context.Background()

	// Hold the invoices table so that a delivery blocks inside its transaction.
	tx, err := b.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `LOCK TABLE invoices IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	answered := make(chan result, 1)
	go func() {
		answered <- runBinary(t, b.env, "send", "--url", p.url("/webhooks/stripe"), "--secret-env", "E2E_STRIPE_SECRET",
			"--id", "evt_e2e_blocked", "--invoice", "in_e2e_blocked")
	}()
	b.db.WaitForLockWaiters(t, 1)

	p.signal(syscall.SIGTERM)
	testwait.Until(t, 30*time.Second, "serve to start shutting down", func() bool { return strings.Contains(p.Logs(), "hookinbox: shutting down") })
	p.signal(syscall.SIGTERM)
	if code := p.wait(20 * time.Second); code != 128+int(syscall.SIGTERM) {
		t.Errorf("serve exited %d after a second SIGTERM, want %d", code, 128+int(syscall.SIGTERM))
	}
	if r := <-answered; r.code != 1 || strings.Contains(r.stdout, "-> 200") {
		t.Errorf("the blocked delivery: exit %d, %q; want no 2xx", r.code, r.stdout)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The sender's retry, to a new process, is processed normally: nothing of the
	// interrupted delivery was left behind to make it a duplicate.
	p = b.serve(t)
	if got := b.send(t, p, "/webhooks/stripe", "--id", "evt_e2e_blocked", "--invoice", "in_e2e_blocked"); !strings.HasSuffix(got[0], `200 {"outcome":"processed"}`) {
		t.Errorf("the retry after the forced exit: %q", got)
	}
	if n := b.count(t, `SELECT count(*) FROM ledger_entries`); n != 1 {
		t.Errorf("ledger rows = %d, want 1", n)
	}
}

// send signs for every scheme the way its verifier expects, through one serve.
func TestSend_SignsForEveryProvider(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dbURL := schemaURL(t, db, "")
	env := childEnv(
		"E2E_GITHUB=gh_secret", "E2E_SHOPIFY=shop_secret", "E2E_SLACK=slack_secret",
		"E2E_SW=whsec_ZTJlLXN0YW5kYXJkLXdlYmhvb2tzLXNlY3JldA==", "E2E_HMAC=hmac_secret",
	)
	config := filepath.Join(t.TempDir(), "hookinbox.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - {name: gh, path: /github, provider: github, secrets_env: [E2E_GITHUB], handler: none}
  - {name: shop, path: /shopify, provider: shopify, secrets_env: [E2E_SHOPIFY], handler: none}
  - {name: slack, path: /slack, provider: slack, secrets_env: [E2E_SLACK], handler: none}
  - {name: sw, path: /sw, provider: standardwebhooks, secrets_env: [E2E_SW], handler: none}
  - name: hmac
    path: /hmac
    provider: hmac
    secrets_env: [E2E_HMAC]
    handler: none
    options: {header: X-Signature, algorithm: sha256, id_field: id, type_field: type}
`, dbURL), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, env, "migrate", "--config", config)
	p := startServe(t, env, "--config", config)
	for _, tt := range []struct {
		path string
		args []string
	}{
		{"/github", []string{"--provider", "github", "--secret-env", "E2E_GITHUB", "--type", "issues"}},
		{"/shopify", []string{"--provider", "shopify", "--secret-env", "E2E_SHOPIFY", "--type", "orders/create"}},
		{"/slack", []string{"--provider", "slack", "--secret-env", "E2E_SLACK", "--type", "app_mention"}},
		{"/sw", []string{"--provider", "standardwebhooks", "--secret-env", "E2E_SW", "--type", "user.created"}},
		{"/hmac", []string{"--provider", "hmac", "--secret-env", "E2E_HMAC", "--type", "thing.done",
			"--option", "header=X-Signature", "--option", "algorithm=sha256", "--option", "id_field=id", "--option", "type_field=type"}},
	} {
		args := append([]string{"send", "--url", p.url(tt.path), "--id", "evt_e2e_" + strings.Trim(tt.path, "/"), "--repeat", "2"}, tt.args...)
		r := runBinary(t, env, args...)
		got := outcomes(strings.Split(strings.TrimSpace(r.stdout), "\n"))
		if r.code != 0 || got["200 ignored"] != 1 || got["200 duplicate"] != 1 {
			t.Errorf("send to %s: exit %d, %v, stderr %q", tt.path, r.code, got, r.stderr)
		}
	}
}
