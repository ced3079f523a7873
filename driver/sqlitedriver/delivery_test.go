package sqlitedriver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/effect"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/outbox"
)

// The rest of the machinery on SQLite: HTTP delivery, the outbox dispatcher and
// recorded effects.

func post(t *testing.T, url string, signer hookinboxtest.Signer, body []byte) *http.Response {
	t.Helper()
	req, err := hookinboxtest.NewRequest(url, signer, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

// G5 and G3 over HTTP: a signed delivery is processed, then a duplicate; a delivery
// with a wrong signature is refused and writes nothing.
func TestEndpoint_SignedDeliveryProcessedOnceUnsignedWritesNothing(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{})
	srv := httptest.NewServer(inbox.Endpoint(epBilling))
	defer srv.Close()
	body := invoiceEvent(epBilling, "evt_1", billing.TypeInvoicePaid, "in_1", 1500).Payload

	if resp := post(t, srv.URL, hookinboxtest.Stripe("whsec_someone_else"), body); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d, want 401", resp.StatusCode)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 0 {
		t.Fatalf("%d receipts after a refused delivery", n)
	}
	for _, want := range []hookinbox.Outcome{hookinbox.OutcomeProcessed, hookinbox.OutcomeDuplicate} {
		resp := post(t, srv.URL, hookinboxtest.Stripe(testSecret), body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(hookinbox.OutcomeHeader) != string(want) {
			t.Fatalf("delivery: %d %s, want 200 %s", resp.StatusCode, resp.Header.Get(hookinbox.OutcomeHeader), want)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM ledger_entries`); n != 1 {
		t.Fatalf("ledger rows %d, want 1", n)
	}
}

// G8 on SQLite: the message a handler wrote is delivered by the dispatcher with its
// idempotency key and fencing token, and marked published, so it is not delivered
// again.
func TestDispatcher_DeliversTheHandlersMessageOnce(t *testing.T) {
	t.Parallel()
	b, inbox := setupInbox(t, inboxOpts{})
	receive(t, inbox, invoiceEvent(epBilling, "evt_1", billing.TypeInvoicePaid, "in_1", 1500))

	var mu sync.Mutex
	var got []*hookinboxtype.OutboxMessage
	d, err := outbox.NewDispatcher(inbox.Driver().Executor(), &outbox.Config{
		Sinks: map[string]outbox.Sink{"test": outbox.SinkFunc(func(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, m)
			return nil
		})},
		DefaultSink: "test", // billing's messages have no destination
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DispatchOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("first dispatch: %d %v", n, err)
	}
	if n, err := d.DispatchOnce(b.ctx); err != nil || n != 0 {
		t.Fatalf("second dispatch: %d %v, want nothing left", n, err)
	}
	if len(got) != 1 || got[0].FencingToken == 0 || got[0].IdempotencyKey() == "" || got[0].Source.EventID != "evt_1" {
		t.Fatalf("delivered %+v", got)
	}
	var payload struct {
		InvoiceID string `json:"invoice_id"`
		Amount    int64  `json:"amount"`
	}
	if err := json.Unmarshal(got[0].Payload, &payload); err != nil || payload.InvoiceID != "in_1" || payload.Amount != 1500 {
		t.Fatalf("payload %s (%v)", got[0].Payload, err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'published' AND published_at IS NOT NULL`); n != 1 {
		t.Fatalf("published %d, want 1", n)
	}
}

// Effects on SQLite: eight recorders, each with its own *sql.DB, released together;
// the call is made once and every caller gets its result.
func TestEffect_ConcurrentCallersFromEightProcessesCallOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	release := make(chan struct{})
	fn := func(ctx context.Context, key string) ([]byte, error) {
		calls.Add(1)
		<-release // the external call, until every other caller has asked
		return []byte("re_1"), nil
	}
	var start, asked, wg sync.WaitGroup
	start.Add(1)
	results := make(chan string, 8)
	for range 8 {
		db := b.process(t)
		rec := effect.New(sqlitedriver.New(db).Executor(), nil)
		asked.Add(1)
		wg.Go(func() {
			start.Wait()
			asked.Done()
			got, err := rec.Do(b.ctx, "webhook:evt_1:refund", fn)
			if err != nil {
				t.Error(err)
			}
			results <- string(got)
		})
	}
	start.Done()
	asked.Wait()
	close(release)
	wg.Wait()
	close(results)
	for got := range results {
		if got != "re_1" {
			t.Fatalf("result %q, want re_1", got)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("called %d times, want 1", n)
	}
}
