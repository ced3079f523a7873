package chaos

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/outbox"
	"github.com/hookinbox/hookinbox/provider"
)

// The checks count what they must. A workload is received by an inbox in this
// process, with billing and forward endpoints and a dispatcher to the recording
// sink, and the checks count 0; then each fault the harness looks for is planted in
// the result, one after the other, and exactly its check counts it. The faults are
// the broken variants of the guarantees: a receipt lost, an acknowledged receipt
// lost and received again from a later copy, an effect missing behind its receipt
// (mark first), billing's handler applied a second time (the ledger's unique key
// hides it from the business tables), a receipt marked processed twice, an event
// forwarded twice, a wrong invoice, a receipt left pending or in review, a delivery
// never acknowledged.
func TestCheck_CountsEachPlantedFault(t *testing.T) {
	t.Parallel()
	b := setupWorld(t)
	f := b.check(t)
	if f.Failed() {
		t.Fatalf("the correct result fails the checks:\n%s", b.table(f))
	}

	paid := b.fact(t, func(f *Fact) bool { return !f.Endpoint.Forward() && f.Script == ScriptPaid })
	void := b.fact(t, func(f *Fact) bool { return !f.Endpoint.Forward() && f.Script == ScriptVoid })
	other := b.fact(t, func(f *Fact) bool {
		return !f.Endpoint.Forward() && (f.Script == ScriptUncollectible || f.Script == ScriptRecovered)
	})
	fwd := b.fact(t, func(f *Fact) bool { return f.Endpoint.Forward() && !f.Endpoint.Batched() })
	published := b.publishedMessages(t)
	event := func(f *Fact, applies string) *Event {
		for _, ev := range f.Events {
			if ev.Applies == applies {
				return ev
			}
		}
		t.Fatalf("%s has no %s event", f.Invoice, applies)
		return nil
	}
	want := map[string]int{}
	steps := []struct {
		name  string
		check string
		plant func(ctx context.Context)
	}{
		{"receipt deleted", CheckLost, func(ctx context.Context) {
			b.exec(t, `DELETE FROM hookinbox_inbox WHERE event_id = $1`, event(void, "draft").ID)
		}},
		{"acknowledged receipt lost, received again later", CheckLost, func(ctx context.Context) {
			ev := event(other, "draft")
			b.exec(t, `UPDATE hookinbox_inbox SET received_at = $2 WHERE event_id = $1`, ev.ID, b.acks.FirstAck[ev].Add(time.Second))
		}},
		{"effect missing behind its receipt (mark first)", CheckLost, func(ctx context.Context) {
			b.exec(t, `DELETE FROM chaos_applied WHERE invoice_id = $1 AND status = 'open'`, void.Invoice)
		}},
		{"billing handler applied again (hidden by the ledger)", CheckTwice, func(ctx context.Context) {
			ev := event(paid, "paid")
			tx, err := b.db.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			hev := hookinbox.Event{Provider: "stripe", Endpoint: paid.Endpoint.Name, ID: ev.ID, Type: ev.Type, Payload: ev.Body}
			if err := billing.Handlers[pgx.Tx]()[ev.Type](ctx, tx, hev); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{"receipt marked processed twice", CheckTwice, func(ctx context.Context) {
			b.exec(t, `UPDATE hookinbox_inbox SET processed_at = processed_at + interval '1 second' WHERE event_id = $1`, event(other, "uncollectible").ID)
		}},
		{"forwarded event processed twice", CheckForwarded, func(ctx context.Context) {
			ev := fwd.Events[0]
			tx, err := b.db.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			hev := hookinbox.Event{Provider: "stripe", Endpoint: fwd.Endpoint.Name, ID: ev.ID, Type: ev.Type, Payload: ev.Body}
			if err := b.inbox.ForwardTo(server.ForwardDestination(fwd.Endpoint.Name))(ctx, tx, []hookinbox.Event{hev}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			want[CheckTwice]++ // two outbox rows for one event
			b.dispatch(t)
		}},
		{"invoice left open", CheckWrongState, func(ctx context.Context) {
			b.exec(t, `UPDATE invoices SET status = 'open' WHERE id = $1`, paid.Invoice)
		}},
		{"receipt left pending", CheckUnprocessed, func(ctx context.Context) {
			b.exec(t, `UPDATE hookinbox_inbox SET state = 'pending', processed_at = NULL WHERE event_id = $1`, event(paid, "draft").ID)
		}},
		{"receipt in review", CheckReview, func(ctx context.Context) {
			b.exec(t, `UPDATE hookinbox_inbox SET state = 'needs_review', processed_at = NULL WHERE event_id = $1`, event(paid, "open").ID)
		}},
		{"delivery never acknowledged", CheckUnacked, func(ctx context.Context) {
			b.acks.Unacked = append(b.acks.Unacked, b.work.Deliveries[0])
		}},
		{"outbox message published twice (a zombie's unfenced mark)", CheckRepublished, func(ctx context.Context) {
			b.exec(t, `INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token)
			           SELECT id, attempts, claim_token FROM hookinbox_outbox WHERE id = $1`, published[0])
		}},
		{"outbox message published, and claimed since under a later token", CheckRepublished, func(ctx context.Context) {
			b.exec(t, `UPDATE hookinbox_outbox SET claim_token = claim_token + 1000 WHERE id = $1`, published[1])
		}},
		{"outbox message delivered under a later token than the one that published it", CheckRepublished, func(ctx context.Context) {
			var token int64
			if err := b.db.Pool.QueryRow(ctx, `SELECT claim_token FROM hookinbox_outbox WHERE id = $1`, published[2]).Scan(&token); err != nil {
				t.Fatal(err)
			}
			b.highest[published[2]] = token + 1
		}},
		{"503 answered without Retry-After", CheckNoRetry, func(ctx context.Context) {
			b.acks.Log = append(b.acks.Log, Attempt{Delivery: b.work.Deliveries[0], Class: "5xx", Status: 503})
		}},
		{"receipts of a transaction whose COMMIT answer was cut, answered processed", CheckCutAcked, func(ctx context.Context) {
			// A sync receipt's transaction, as the proxy would have recorded its cut:
			// every receipt it committed was answered processed by the request that
			// inserted it (a SendGrid batch's, as in flight at the cut).
			var c Cut
			var n int
			if err := b.db.Pool.QueryRow(ctx, `SELECT r.pid, r.xact_start,
			        (SELECT count(*) FROM chaos_received x WHERE x.pid = r.pid AND x.xact_start = r.xact_start)
			   FROM chaos_received r WHERE r.event_id = $1`, event(paid, "paid").ID).Scan(&c.PID, &c.TxStart, &n); err != nil {
				t.Fatal(err)
			}
			c.At, c.Receiving, c.Link = c.TxStart, true, "planted"
			b.cuts = append(b.cuts, c)
			want[CheckCutAcked] += n - 1
		}},
	}
	for _, s := range steps {
		s.plant(t.Context())
		want[s.check]++
		f := b.check(t)
		for _, c := range Checks {
			if f.Count(c) != want[c] {
				t.Fatalf("after planting %q, %q counts %d, want %d:\n%s", s.name, c, f.Count(c), want[c], b.table(f))
			}
		}
	}
}

type world struct {
	db      *testdb.DB
	inbox   *hookinbox.Inbox[pgx.Tx]
	disp    *outbox.Dispatcher
	sink    *Sink
	work    *Workload
	acks    *Acks
	highest map[int64]int64
	cuts    []Cut
}

// setupWorld receives a small workload in this process: billing on a sync endpoint,
// forwarding on another, SendGrid batches forwarded on a third, the dispatcher
// delivering every kind of outbox message to the recording sink. No faults are
// injected.
func setupWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	b := &world{db: testdb.New(t), sink: &Sink{}}
	drv := pgxdriver.New(b.db.Pool)
	if err := drv.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := billing.Migrate(ctx, pgxdriver.New(b.db.Pool)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(ctx, faultsSQL); err != nil {
		t.Fatal(err)
	}
	const secret = "whsec_check"
	stripe, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	sgKey, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sgPublic, err := hookinboxtest.SendGridPublicKey(sgKey)
	if err != nil {
		t.Fatal(err)
	}
	sendgrid, err := provider.NewSendGrid(provider.SendGridConfig{PublicKeys: []string{sgPublic}})
	if err != nil {
		t.Fatal(err)
	}
	eps := []*Endpoint{{Name: "billing", Mode: "sync", Handler: "billing"}, {Name: "forward", Mode: "sync", Handler: "forward"},
		{Name: "sendgrid", Mode: "sync", Handler: "forward", Provider: "sendgrid"}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.inbox, err = hookinbox.New(drv, &hookinbox.Config{Logger: logger, Endpoints: []hookinbox.EndpointConfig{
		{Name: "billing", Verifier: stripe, Mode: hookinbox.ModeSync},
		{Name: "forward", Verifier: stripe, Mode: hookinbox.ModeSync},
		{Name: "sendgrid", Verifier: sendgrid, Mode: hookinbox.ModeSync},
	}})
	if err != nil {
		t.Fatal(err)
	}
	billing.Register(b.inbox, "billing")
	b.inbox.HandleBatch("forward", "*", b.inbox.ForwardTo(server.ForwardDestination("forward")))
	b.inbox.HandleBatch("sendgrid", "*", b.inbox.ForwardTo(server.ForwardDestination("sendgrid")))
	mux := http.NewServeMux()
	for _, ep := range eps {
		mux.Handle(ep.Path(), b.inbox.Endpoint(ep.Name))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	sinkSrv := httptest.NewServer(b.sink)
	t.Cleanup(sinkSrv.Close)
	b.disp, err = outbox.NewDispatcher(drv.Executor(), &outbox.Config{
		Logger: logger, PollInterval: 20 * time.Millisecond, DefaultSink: "billing",
		Sinks: map[string]outbox.Sink{
			"billing":                             &outbox.HTTPSink{URL: sinkSrv.URL + "/billing"},
			server.ForwardDestination("forward"):  &outbox.HTTPSink{URL: sinkSrv.URL + "/forward"},
			server.ForwardDestination("sendgrid"): &outbox.HTTPSink{URL: sinkSrv.URL + "/sendgrid"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	// Enough facts that every script and every endpoint occur.
	b.work = NewWorkload(WorkloadConfig{Prefix: "check", Invoices: 60, Endpoints: eps, SecondObjectShare: 0.3,
		Spread: 200 * time.Millisecond, Rand: rand.New(rand.NewPCG(1, 2))})
	sender := &Sender{
		Receivers:   func() string { return srv.URL },
		Signers:     map[string]hookinboxtest.Signer{"stripe": hookinboxtest.Stripe(secret), "sendgrid": hookinboxtest.SendGrid(sgKey)},
		Concurrency: 4, Timeout: 10 * time.Second,
	}
	b.acks = sender.Send(ctx, b.work)
	b.dispatch(t)
	b.highest = b.sink.Highest()
	return b
}

// publishedMessages returns three published outbox messages.
func (b *world) publishedMessages(t *testing.T) []int64 {
	t.Helper()
	var ids []int64
	rows, err := b.db.Pool.Query(t.Context(), `SELECT id FROM hookinbox_outbox WHERE state = 'published' ORDER BY id LIMIT 3`)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil || len(ids) < 3 {
		t.Fatalf("published messages: %v, %v", ids, err)
	}
	return ids
}

// dispatch runs the dispatcher until no outbox message is pending.
func (b *world) dispatch(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.disp.Run(ctx) }()
	err := drain(t.Context(), b.db.Pool, 30*time.Second)
	cancel()
	if rerr := <-done; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (b *world) check(t *testing.T) Findings {
	t.Helper()
	f, err := Check(t.Context(), b.db.Pool, b.work, &Observed{Acks: b.acks, Sink: b.sink.Deliveries(), BillingSink: true, SinkHighest: b.highest})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckCuts(t.Context(), b.db.Pool, f, b.work, b.acks, b.cuts); err != nil {
		t.Fatal(err)
	}
	return f
}

func (b *world) fact(t *testing.T, match func(*Fact) bool) *Fact {
	t.Helper()
	for _, f := range b.work.Facts {
		if match(f) {
			return f
		}
	}
	t.Fatal("the workload has no such fact")
	return nil
}

func (b *world) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	tag, err := b.db.Pool.Exec(t.Context(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("%s: %d rows, want 1", sql, tag.RowsAffected())
	}
}

func (b *world) table(f Findings) string {
	var s strings.Builder
	PrintTable(&s, []*Report{{Scenario: "planted", Findings: f, Figures: map[string]int{}}})
	return s.String()
}

// The canary check counts each log line that holds the secret or the payload marker,
// and nothing in a clean log: the broken variant is a server that logs a body.
func TestCheckLogs_CountsLinesWithACanary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.log")
	leaky := filepath.Join(dir, "leaky.log")
	if err := os.WriteFile(clean, []byte(`{"level":"WARN","msg":"hookinbox: handler failed","event_id":"evt_1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(leaky, []byte(`{"msg":"ok"}`+"\n"+`{"msg":"body","body":"..`+PayloadMarker+`.."}`+"\n"+`{"secret":"whsec_x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := Findings{}
	if err := checkLogs(f, []string{clean}, []string{"whsec_x", PayloadMarker}); err != nil || f.Count(CheckLeaked) != 0 {
		t.Fatalf("a clean log: %d, %v", f.Count(CheckLeaked), err)
	}
	if err := checkLogs(f, []string{clean, leaky}, []string{"whsec_x", PayloadMarker}); err != nil || f.Count(CheckLeaked) != 2 {
		t.Fatalf("a log with a payload and a secret: %d, %v; want 2", f.Count(CheckLeaked), err)
	}
}
