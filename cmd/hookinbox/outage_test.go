package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/chaos"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// A database outage under load, on a private PostgreSQL that the test stops and
// starts again (scripts/outage.sh starts it and sets the variables below; without
// them the test is skipped, so that the shared server is never stopped):
//
//	HOOKINBOX_OUTAGE_DATABASE_URL  the private server
//	HOOKINBOX_OUTAGE_STOP          a command that stops it (pg_ctl -m immediate stop)
//	HOOKINBOX_OUTAGE_START         a command that starts it again
//	HOOKINBOX_OUTAGE_SECONDS       how long it stays down (default 10)
const (
	envOutageURL     = "HOOKINBOX_OUTAGE_DATABASE_URL"
	envOutageStop    = "HOOKINBOX_OUTAGE_STOP"
	envOutageStart   = "HOOKINBOX_OUTAGE_START"
	envOutageSeconds = "HOOKINBOX_OUTAGE_SECONDS"
)

const outageConfig = `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - {name: billing, path: /webhooks/stripe, provider: stripe, secrets_env: [E2E_STRIPE_SECRET], mode: sync, handler: billing}
  - {name: queue, path: /webhooks/queue, provider: stripe, secrets_env: [E2E_STRIPE_SECRET], mode: async, handler: billing}
worker: {concurrency: 2, poll_interval: 100ms, lease: 5s, statement_timeout: 2s}
shutdown_timeout: 10s
`

// The workers' lease is short because a batch claimed as the database went away
// cannot have its leases shortened (the database is gone): those receipts wait for
// their lease to end before a worker claims them again, 2 min with the default.

const (
	outageSenders = 8
	// outageClientTimeout is each request's limit, as a provider has one (Stripe
	// waits about 20 s): an answer after it is no answer.
	outageClientTimeout = 15 * time.Second
	// outageSendEvery paces each sender.
	outageSendEvery = 50 * time.Millisecond
)

// outageEvent is one event a sender sends until it is answered 2xx: invoice.paid of
// its own invoice, to the sync endpoint or (every other one) the async one.
type outageEvent struct {
	id, path string
	body     []byte
}

func newOutageEvent(sender, seq int) outageEvent {
	ev := outageEvent{id: fmt.Sprintf("evt_outage_%d_%05d", sender, seq), path: "/webhooks/stripe"}
	if seq%2 == 1 {
		ev.path = "/webhooks/queue"
	}
	ev.body = fmt.Appendf(nil, `{"id":%q,"type":"invoice.paid","data":{"object":{"id":"in_outage_%d_%05d","customer":"cus_outage","amount_paid":100,"currency":"eur"}}}`,
		ev.id, sender, seq)
	return ev
}

// outageAnswer is one request and what came back.
type outageAnswer struct {
	event   string
	status  int // 0: no HTTP answer
	err     error
	sent    time.Time
	latency time.Duration
}

// While PostgreSQL is stopped under load from concurrent senders: no 2xx without a
// commit, every request is answered before its client gives up (fast 503s), /readyz
// goes false and comes back, the process recovers without a restart, and every
// event, retried by its sender until it is answered 2xx, is processed exactly once.
func TestOutage_DatabaseStoppedUnderLoad(t *testing.T) {
	baseURL, stopCmd, startCmd := os.Getenv(envOutageURL), os.Getenv(envOutageStop), os.Getenv(envOutageStart)
	if baseURL == "" || stopCmd == "" || startCmd == "" {
		t.Skipf("needs a private PostgreSQL it may stop: run scripts/outage.sh (%s, %s, %s)", envOutageURL, envOutageStop, envOutageStart)
	}
	outage := 10 * time.Second
	if s := os.Getenv(envOutageSeconds); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of seconds", envOutageSeconds, s)
		}
		outage = time.Duration(n) * time.Second
	}

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		t.Fatalf("the private PostgreSQL is not reachable: %v", err)
	}
	schema := "outage_" + randomSuffix(t)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	admin.Close(ctx)
	dbURL := withSearchPath(t, baseURL, schema)
	t.Cleanup(func() {
		// The server is up again unless the test failed while it was down.
		if c, err := pgx.Connect(context.Background(), baseURL); err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})

	env := childEnv("E2E_STRIPE_SECRET=" + e2eSecret)
	cfgPath := filepath.Join(t.TempDir(), "hookinbox.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, outageConfig, dbURL), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, env, "migrate", "--config", cfgPath)
	// The audit triggers count every committed application of billing's handler and
	// every commit that marks a receipt processed: a double shows there even where the
	// primary key and the ledger's unique key hide it from the tables.
	audit, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := chaos.Audit(ctx, audit); err != nil {
		t.Fatal(err)
	}
	audit.Close(ctx)
	p := startServe(t, env, "--config", cfgPath)
	testwait.Until(t, 30*time.Second, "/readyz to answer 200", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })

	var (
		mu      sync.Mutex
		answers []outageAnswer
		acked   = map[string]time.Time{} // event id -> when its 2xx arrived
		events  []string                 // every event id sent, in order of first send
		finish  atomic.Bool
		wg      sync.WaitGroup
	)
	signer := hookinboxtest.Stripe(e2eSecret)
	for s := range outageSenders {
		wg.Go(func() {
			client := &http.Client{Timeout: outageClientTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			tick := time.NewTicker(outageSendEvery)
			defer tick.Stop()
			// A provider keeps sending new events and retries each refused one
			// later, until it is answered 2xx: half the sends are retries while there
			// are any, and once finishing, only retries until none is left.
			var retries []outageEvent
			for n, seq := 0, 0; ; n++ {
				var ev outageEvent
				switch {
				case len(retries) > 0 && (finish.Load() || n%2 == 0):
					ev, retries = retries[0], retries[1:]
				case finish.Load():
					return
				default:
					ev = newOutageEvent(s, seq)
					seq++
					mu.Lock()
					events = append(events, ev.id)
					mu.Unlock()
				}
				a := outageSend(client, signer, p.url(ev.path), ev.id, ev.body)
				mu.Lock()
				answers = append(answers, a)
				if a.status/100 == 2 {
					acked[ev.id] = a.sent.Add(a.latency)
				}
				mu.Unlock()
				if a.status/100 != 2 {
					retries = append(retries, ev)
				}
				<-tick.C
			}
		})
	}
	countAcked := func(after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, at := range acked {
			if at.After(after) {
				n++
			}
		}
		return n
	}
	testwait.Until(t, 30*time.Second, "the senders to be answered before the outage", func() bool { return countAcked(time.Time{}) >= 25*outageSenders })

	shell(t, stopCmd)
	down := time.Now()
	testwait.Until(t, 30*time.Second, "/readyz to answer 503", func() bool { code, _ := get(p.url("/readyz")); return code == 503 })
	notReadyAfter := time.Since(down)
	// Liveness never depends on the database: an orchestrator must not restart the
	// process for an outage it cannot fix.
	if code, body := get(p.url("/healthz")); code != 200 {
		t.Errorf("/healthz during the outage = %d %s, want 200", code, body)
	}
	time.Sleep(outage - min(outage, time.Since(down))) // the outage itself: the database is away this long
	startAt := time.Now()
	shell(t, startCmd)
	testwait.Until(t, 30*time.Second, "/readyz to answer 200 again", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })
	readyAgainAfter := time.Since(startAt)
	testwait.Until(t, 30*time.Second, "the senders to be answered 2xx after the outage", func() bool { return countAcked(startAt) >= 25*outageSenders })
	finish.Store(true)
	wg.Wait()

	select {
	case <-p.done:
		t.Fatalf("serve exited (%d) during the outage:\n%s", p.exitCode, p.Logs())
	default:
	}

	// Every request was answered by the server, 2xx or a refusal to retry, before
	// its client's limit: none hung, none was dropped.
	statuses := map[int]int{}
	tries := map[string]int{}
	var outageLatencies []time.Duration
	var okDuringOutage int
	for _, a := range answers {
		tries[a.event]++
		if a.err != nil {
			t.Errorf("%s: no answer after %s: %v", a.event, a.latency.Round(time.Millisecond), a.err)
			continue
		}
		statuses[a.status]++
		if a.status != http.StatusOK && a.status != http.StatusServiceUnavailable {
			t.Errorf("%s answered %d, want 200 or 503", a.event, a.status)
		}
		if a.sent.After(down) && a.sent.Before(startAt) {
			outageLatencies = append(outageLatencies, a.latency)
			if a.status/100 == 2 {
				okDuringOutage++
			}
		}
	}

	// Exactly once: one receipt per event sent, every one processed (the async ones
	// by the workers, which recovered too), one ledger entry per invoice, and no
	// 2xx for an event without its receipt.
	check, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close(ctx)
	testwait.Until(t, 30*time.Second, "the workers to process every accepted receipt", func() bool {
		var pending int
		err := check.QueryRow(ctx, `SELECT count(*) FROM hookinbox_inbox WHERE processed_at IS NULL`).Scan(&pending)
		return err == nil && pending == 0
	})
	for _, problem := range outageOnce(t, check, events) {
		t.Error(problem)
	}
	for _, id := range events {
		if _, ok := acked[id]; !ok {
			t.Errorf("%s was never answered 2xx", id)
		}
	}
	// The check can fail: a second application planted for one event (what a
	// worker without its re-check would commit) is counted, and only it.
	if _, err := check.Exec(ctx, `INSERT INTO chaos_applied (invoice_id, status) VALUES ($1, 'paid')`, outageInvoice(events[0])); err != nil {
		t.Fatal(err)
	}
	if problems := outageOnce(t, check, events); len(problems) != 1 {
		t.Errorf("with one application planted twice, the check found %d problems, want 1: %v", len(problems), problems)
	}

	retried, mostTries := 0, 0
	for _, n := range tries {
		if n > 1 {
			retried++
		}
		mostTries = max(mostTries, n)
	}
	slices.Sort(outageLatencies)
	q := func(f float64) time.Duration {
		if len(outageLatencies) == 0 {
			return 0
		}
		return outageLatencies[min(len(outageLatencies)-1, int(f*float64(len(outageLatencies))))].Round(time.Millisecond)
	}
	t.Logf("outage: database stopped %s, %d senders; %d events, %d requests (%v by status); /readyz 503 %s after the stop, 200 %s after the start",
		outage, outageSenders, len(events), len(answers), statuses, notReadyAfter.Round(time.Millisecond), readyAgainAfter.Round(time.Millisecond))
	t.Logf("outage: %d requests sent while it was down, %d of them 2xx (committed before the stop); latency p50 %s, p99 %s, max %s",
		len(outageLatencies), okDuringOutage, q(0.5), q(0.99), q(1))
	t.Logf("outage: %d events retried by their senders (up to %d requests for one), each processed once", retried, mostTries)
	// Through the outage's errors and retries, neither the secret nor a payload
	// reached serve's log.
	if logs := p.Logs(); strings.Contains(logs, e2eSecret) || strings.Contains(logs, "cus_outage") || strings.Contains(logs, `"amount_paid"`) {
		t.Errorf("serve's log holds the secret or a payload")
	}
}

// outageOnce checks that every event sent has one processed receipt, marked
// processed by one commit, its invoice applied by one commit and booked once, and
// that there are no more receipts than events and no billing anomalies. It returns
// what it found wrong.
func outageOnce(t *testing.T, conn *pgx.Conn, events []string) []string {
	t.Helper()
	receipts := countBy(t, conn, `SELECT event_id, count(*) FROM hookinbox_inbox WHERE state = 'processed' GROUP BY event_id`)
	marks := countBy(t, conn, `SELECT event_id, count(*) FROM chaos_processed GROUP BY event_id`)
	applied := countBy(t, conn, `SELECT invoice_id, count(*) FROM chaos_applied WHERE status = 'paid' GROUP BY invoice_id`)
	ledger := countBy(t, conn, `SELECT invoice_id, count(*) FROM ledger_entries GROUP BY invoice_id`)
	var totalReceipts, anomalies int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM hookinbox_inbox), (SELECT count(*) FROM billing_anomalies)`).Scan(&totalReceipts, &anomalies); err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, id := range events {
		invoice := outageInvoice(id)
		switch {
		case receipts[id] != 1:
			problems = append(problems, fmt.Sprintf("%s has %d processed receipts, want 1", id, receipts[id]))
		case marks[id] != 1:
			problems = append(problems, fmt.Sprintf("%s was marked processed by %d commits, want 1", id, marks[id]))
		case applied[invoice] != 1:
			problems = append(problems, fmt.Sprintf("%s was applied by %d commits, want 1", invoice, applied[invoice]))
		case ledger[invoice] != 1:
			problems = append(problems, fmt.Sprintf("%s has %d ledger entries, want 1", invoice, ledger[invoice]))
		}
	}
	if totalReceipts != len(events) || len(ledger) != len(events) || anomalies != 0 {
		problems = append(problems, fmt.Sprintf("%d receipts, %d invoices in the ledger, %d anomalies for %d events", totalReceipts, len(ledger), anomalies, len(events)))
	}
	return problems
}

// outageInvoice is the invoice of an event of the outage test.
func outageInvoice(event string) string { return "in_" + strings.TrimPrefix(event, "evt_") }

// outageSend posts one signed delivery and times it.
func outageSend(client *http.Client, signer hookinboxtest.Signer, url, id string, body []byte) outageAnswer {
	a := outageAnswer{event: id, sent: time.Now()}
	req, err := hookinboxtest.NewRequest(url, signer, body)
	if err != nil {
		a.err = err
		return a
	}
	resp, err := client.Do(req)
	a.latency = time.Since(a.sent)
	if err != nil {
		a.err = err
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			a.err = fmt.Errorf("client timeout (%s): %w", outageClientTimeout, err)
		}
		return a
	}
	resp.Body.Close()
	a.status = resp.StatusCode
	return a
}

// countBy returns query's counts by key: it selects a key and a count.
func countBy(t *testing.T, conn *pgx.Conn, query string) map[string]int {
	t.Helper()
	rows, err := conn.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for rows.Next() {
		var key string
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		counts[key] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// shell runs a command line of the outage script's, failing the test if it fails.
func shell(t *testing.T, command string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", command).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

func withSearchPath(t *testing.T, raw, schema string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
