package hookinbox_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// batchBundle is a groupBundle whose sync and hybrid endpoints have a set-based
// handler (HandleBatch): it records the size of every call, applies each event as the
// counting handler does, and fails the whole call while an event of it is told to fail.
type batchBundle struct {
	*groupBundle
	calls []int // sizes of the batch handler's calls, in order
	batch hookinbox.BatchHandlerFunc[pgx.Tx]
	// swallow are event ids for which the handler runs a failing statement and
	// ignores its error, leaving the transaction aborted while it returns nil.
	swallow map[string]bool
}

func setupBatch(t *testing.T) *batchBundle {
	t.Helper()
	g := newGroupBundle(t)
	b := &batchBundle{groupBundle: g, swallow: map[string]bool{}}
	b.batch = func(ctx context.Context, tx pgx.Tx, evs []hookinbox.Event) error {
		if len(evs) == 1 && evs[0].ID == "evt_hold" {
			close(g.held)
			<-g.hold
		}
		g.mu.Lock()
		b.calls = append(b.calls, len(evs))
		g.mu.Unlock()
		for _, ev := range evs {
			if err := countingHandler(ctx, tx, ev); err != nil {
				return err
			}
			if b.swallow[ev.ID] {
				_, _ = tx.Exec(ctx, `SELECT 1/0`) // the error is ignored; the transaction is aborted
			}
			g.mu.Lock()
			fail := g.failFor[ev.ID] > 0
			if fail {
				g.failFor[ev.ID]--
			}
			g.mu.Unlock()
			if fail {
				return errors.New("refused for " + ev.ID)
			}
		}
		return nil
	}
	g.inbox.HandleBatch(epBilling, "invoice.paid", b.batch)
	g.inbox.HandleBatch(epHybrid, "invoice.paid", b.batch)
	return b
}

func (b *batchBundle) callSizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.calls...)
}

// A group's deliveries of one set-based registration are applied by one call.
func TestReceiveBatch_OneCallForTheGroup(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	byID := b.group(t, paid(epBilling, "evt_1"), paid(epBilling, "evt_2"), paid(epBilling, "evt_3"))
	for _, id := range []string{"evt_1", "evt_2", "evt_3"} {
		if r := byID[id][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed {
			t.Errorf("%s: %s, %v; want processed", id, r.out, r.err)
		}
		if n := b.effects(t, id); n != 1 {
			t.Errorf("%s applied %d times, want 1", id, n)
		}
	}
	// The held delivery's call, then one call for the three.
	if got := b.callSizes(); fmt.Sprint(got) != "[1 3]" {
		t.Fatalf("batch handler calls %v, want [1 3]", got)
	}
}

// A set-based handler that swallows a database error returns nil with the group's
// transaction aborted: the group's commit fails, nothing of it is answered 2xx, and
// each delivery is received again alone, so that only the swallowing one fails.
func TestReceiveBatch_HandlerThatSwallowsAnErrorFailsItsOwnDeliveryOnly(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	b.swallow["evt_swallow"] = true
	byID := b.group(t, paid(epBilling, "evt_1"), paid(epBilling, "evt_swallow"), paid(epBilling, "evt_3"))
	for _, id := range []string{"evt_1", "evt_3"} {
		if r := byID[id][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed {
			t.Errorf("%s: %s, %v; want processed", id, r.out, r.err)
		}
		if r := b.receipt(t, epBilling, id); r == nil || b.effects(t, id) != 1 {
			t.Errorf("%s: receipt %v, applied %d times; want a receipt, applied once", id, r, b.effects(t, id))
		}
	}
	if r := byID["evt_swallow"][0]; r.err == nil {
		t.Errorf("the swallowing delivery answered %s, want an error", r.out)
	}
	if b.receipt(t, epBilling, "evt_swallow") != nil || b.effects(t, "evt_swallow") != 0 {
		t.Error("the swallowing delivery left a receipt or an effect")
	}
}

// batchReceiver receives the events of one group: the real one is the inbox's shared
// transaction; the broken one below skips the batch's savepoint.
type batchReceiver func(t *testing.T, b *batchBundle, evs ...hookinbox.Event) map[string][]received

func receiveBatchReal(t *testing.T, b *batchBundle, evs ...hookinbox.Event) map[string][]received {
	return b.group(t, evs...)
}

// receiveBatchWithoutSavepoint is the broken variant: the group's receipts are
// inserted before the savepoint that covers the handler, so a failed batch rolls back
// the business update but keeps every receipt; received again one by one, each event
// finds its own receipt and is answered duplicate, and the poisoned one, whose sender
// got a 2xx, is lost.
func receiveBatchWithoutSavepoint(t *testing.T, b *batchBundle, evs ...hookinbox.Event) map[string][]received {
	t.Helper()
	d := pgxdriver.New(b.db.Pool)
	tx, err := d.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.ctx) //nolint:errcheck
	params := make([]*driver.InboxInsertParams, len(evs))
	for k, ev := range evs {
		params[k] = &driver.InboxInsertParams{Key: hookinboxtype.Key{Provider: "stripe", Endpoint: ev.Endpoint, EventID: ev.ID},
			EventType: ev.Type, Payload: ev.Payload, Processed: true, Outcome: "processed"}
	}
	if _, err := tx.InboxInsertMany(b.ctx, params); err != nil {
		t.Fatal(err)
	}
	byID := map[string][]received{}
	apply := func(evs []hookinbox.Event) error {
		if err := tx.Savepoint(b.ctx); err != nil {
			return err
		}
		if err := b.batch(b.ctx, tx.Native(), evs); err != nil {
			return errors.Join(err, tx.RollbackToSavepoint(b.ctx))
		}
		return tx.ReleaseSavepoint(b.ctx)
	}
	if apply(evs) == nil {
		for _, ev := range evs {
			byID[ev.ID] = append(byID[ev.ID], received{ev.ID, hookinbox.OutcomeProcessed, nil})
		}
	} else {
		for k, ev := range evs {
			inserted, err := tx.InboxInsert(b.ctx, params[k])
			if err == nil && !inserted {
				byID[ev.ID] = append(byID[ev.ID], received{ev.ID, hookinbox.OutcomeDuplicate, nil})
				continue
			}
			byID[ev.ID] = append(byID[ev.ID], received{ev.ID, "", errors.Join(err, apply([]hookinbox.Event{ev}))})
		}
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	return byID
}

// checkPoisonedBatch: one event of a batch fails; only its own sender hears it, the
// others are processed, the failed one leaves nothing, and the provider's retry of it
// is processed. Returns what broke, or "" if the guarantee held.
func checkPoisonedBatch(t *testing.T, receive batchReceiver) string {
	t.Helper()
	b := setupBatch(t)
	b.failFor["evt_2"] = 2 // the batch's call, then its own
	byID := receive(t, b, paid(epBilling, "evt_1"), paid(epBilling, "evt_2"), paid(epBilling, "evt_3"))
	var broke []string
	for _, id := range []string{"evt_1", "evt_3"} {
		if r := byID[id][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed || b.effects(t, id) != 1 {
			broke = append(broke, fmt.Sprintf("%s: %s, %v, applied %d times", id, r.out, r.err, b.effects(t, id)))
		}
	}
	if r := byID["evt_2"][0]; r.err == nil {
		broke = append(broke, fmt.Sprintf("evt_2 failed but was answered %s", r.out))
	}
	if out, err := b.inbox.Receive(b.ctx, paid(epBilling, "evt_2")); err != nil || out != hookinbox.OutcomeProcessed || b.effects(t, "evt_2") != 1 {
		broke = append(broke, fmt.Sprintf("the retry of evt_2: %s, %v, applied %d times", out, err, b.effects(t, "evt_2")))
	}
	return strings.Join(broke, "; ")
}

func TestReceiveBatch_PoisonedEventFailsOnlyItsOwnDelivery(t *testing.T) {
	t.Parallel()
	if broke := checkPoisonedBatch(t, receiveBatchReal); broke != "" {
		t.Fatal(broke)
	}
}

func TestBrokenBatchWithoutSavepoint_LosesThePoisonedEvent(t *testing.T) {
	t.Parallel()
	if broke := checkPoisonedBatch(t, receiveBatchWithoutSavepoint); broke == "" {
		t.Fatal("the broken batch receiver was not caught")
	}
}

// Copies of one event in a batch: applied once. When the first copy fails (in the
// batch, then alone), the second takes over and is processed.
func TestReceiveBatch_CopiesApplyOnce(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	b.failFor["evt_flaky"] = 2
	byID := b.group(t, paid(epBilling, "evt_1"), paid(epBilling, "evt_1"), paid(epBilling, "evt_2"),
		paid(epBilling, "evt_flaky"), paid(epBilling, "evt_flaky"))
	for _, id := range []string{"evt_1", "evt_2", "evt_flaky"} {
		processed := 0
		for _, r := range byID[id] {
			if r.err == nil && r.out == hookinbox.OutcomeProcessed {
				processed++
			}
		}
		if processed != 1 || b.effects(t, id) != 1 {
			t.Errorf("%s: %d copies processed (%v), applied %d times; want 1 and 1", id, processed, byID[id], b.effects(t, id))
		}
	}
	for _, r := range byID["evt_1"] {
		if r.err != nil {
			t.Errorf("a copy of evt_1: %v", r.err)
		}
	}
}

// A duplicate of an event committed before, inside a batch: answered duplicate, not
// passed to the handler again.
func TestReceiveBatch_EarlierReceiptIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	if out := b.receive(t, paid(epBilling, "evt_old")); out != hookinbox.OutcomeProcessed {
		t.Fatalf("first delivery: %s", out)
	}
	byID := b.group(t, paid(epBilling, "evt_old"), paid(epBilling, "evt_new"), paid(epBilling, "evt_new2"))
	if r := byID["evt_old"][0]; r.err != nil || r.out != hookinbox.OutcomeDuplicate {
		t.Fatalf("evt_old: %s, %v; want duplicate", r.out, r.err)
	}
	if n := b.effects(t, "evt_old"); n != 1 {
		t.Fatalf("evt_old applied %d times", n)
	}
	if got := b.callSizes(); fmt.Sprint(got) != "[1 1 2]" {
		t.Fatalf("batch handler calls %v, want [1 1 2]: the duplicate is not passed", got)
	}
}

// On a hybrid endpoint, the event that fails in a batch is kept pending for workers,
// in the group's transaction; the others are processed.
func TestReceiveBatch_HybridFailureIsKeptPending(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	b.failFor["evt_2"] = 2
	byID := b.group(t, paid(epHybrid, "evt_1"), paid(epHybrid, "evt_2"), paid(epHybrid, "evt_3"))
	for _, id := range []string{"evt_1", "evt_3"} {
		if r := byID[id][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed {
			t.Errorf("%s: %s, %v", id, r.out, r.err)
		}
	}
	if r := byID["evt_2"][0]; r.err != nil || r.out != hookinbox.OutcomeAccepted {
		t.Fatalf("evt_2: %s, %v; want accepted", r.out, r.err)
	}
	if r := b.receipt(t, epHybrid, "evt_2"); r == nil || r.State != hookinboxtype.StatePending || r.Attempts != 1 {
		t.Fatalf("evt_2's receipt %+v, want pending after 1 attempt", r)
	}
}

// A batch handler that panics fails the batch like an error: each event is then
// applied alone, and only the one that panics alone fails.
func TestReceiveBatch_PanicIsTheBatchsFailure(t *testing.T) {
	t.Parallel()
	g := setupGroup(t) // its hold and handler on the billing endpoint only
	var mu sync.Mutex
	var calls []int
	g.inbox.HandleBatch(epAnalytics, "invoice.paid", func(ctx context.Context, tx pgx.Tx, evs []hookinbox.Event) error {
		mu.Lock()
		calls = append(calls, len(evs))
		mu.Unlock()
		for _, ev := range evs {
			if ev.ID == "evt_panic" {
				panic("the handler's bug")
			}
			if err := countingHandler(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	})
	byID := g.group(t, paid(epAnalytics, "evt_1"), paid(epAnalytics, "evt_panic"), paid(epAnalytics, "evt_3"))
	var perr *hookinbox.PanicError
	if r := byID["evt_panic"][0]; !errors.As(r.err, &perr) {
		t.Fatalf("evt_panic: %s, %v; want its PanicError", r.out, r.err)
	}
	for _, id := range []string{"evt_1", "evt_3"} {
		if r := byID[id][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed || g.effects(t, id) != 1 {
			t.Errorf("%s: %s, %v", id, r.out, r.err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(calls) != "[3 1 1 1]" {
		t.Fatalf("calls %v, want [3 1 1 1]", calls)
	}
}

// billing's set-based payments leave the state that its one-event handler leaves, for
// every kind of payment a batch can hold: a new invoice, an open one, one paid before
// under another event id, a void one (an anomaly), and a second Event object for one
// payment in the same batch (which refuses the batch).
func TestBillingPaymentsBatch_SameStateAsOneByOne(t *testing.T) {
	t.Parallel()
	type snapshot struct{ invoices, ledger, outbox, anomalies string }
	run := func(batched bool) snapshot {
		b := setup(t)
		ctx := b.ctx
		// The state before: an open invoice, a paid one, a void one.
		for _, ev := range []hookinbox.Event{
			invoiceEvent(epBilling, "evt_c_open", "invoice.finalized", "in_open", 0),
			invoiceEvent(epBilling, "evt_p_paid", "invoice.paid", "in_paid", 300),
			invoiceEvent(epBilling, "evt_v_void", "invoice.voided", "in_void", 0),
		} {
			b.receive(t, ev)
		}
		payments := []hookinbox.Event{
			invoiceEvent(epBilling, "evt_new", "invoice.paid", "in_new", 100),
			invoiceEvent(epBilling, "evt_open", "invoice.paid", "in_open", 200),
			invoiceEvent(epBilling, "evt_paid_again", "invoice.payment_succeeded", "in_paid", 300),
			invoiceEvent(epBilling, "evt_void", "invoice.paid", "in_void", 400),
			invoiceEvent(epBilling, "evt_twice_1", "invoice.paid", "in_twice", 500),
			invoiceEvent(epBilling, "evt_twice_2", "invoice.payment_succeeded", "in_twice", 500),
		}
		for k := range payments {
			payments[k].Provider = "stripe"
		}
		fn := billing.PaymentsBatch[pgx.Tx]()
		apply := func(evs []hookinbox.Event) error {
			return pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error { return fn(ctx, tx, evs) })
		}
		if batched {
			if err := apply(payments[:4]); err != nil {
				t.Fatalf("the batch: %v", err)
			}
			if err := apply(payments[4:]); err == nil {
				t.Fatal("two payments of one invoice in one batch: accepted, want refused")
			}
			for _, ev := range payments[4:] {
				if err := apply([]hookinbox.Event{ev}); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			one := billing.Handlers[pgx.Tx]()[billing.TypeInvoicePaid]
			for _, ev := range payments {
				if err := pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error { return one(ctx, tx, ev) }); err != nil {
					t.Fatal(err)
				}
			}
		}
		rows := func(q string) string {
			r, err := b.db.Pool.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for r.Next() {
				vals, err := r.Values()
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, fmt.Sprint(vals...))
			}
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			sort.Strings(lines)
			return strings.Join(lines, "\n")
		}
		return snapshot{
			invoices:  rows(`SELECT id, status, amount_paid, currency, paid_at IS NOT NULL FROM invoices`),
			ledger:    rows(`SELECT invoice_id, kind, amount, currency, event_id FROM ledger_entries`),
			outbox:    rows(`SELECT aggregate_id, event_type, payload - 'ledger_entry_id', source_event_id FROM hookinbox_outbox`),
			anomalies: rows(`SELECT invoice_id, kind, event_id FROM billing_anomalies`),
		}
	}
	one, batched := run(false), run(true)
	if one != batched {
		t.Fatalf("one by one:\n%+v\nbatched:\n%+v", one, batched)
	}
	if !strings.Contains(one.anomalies, "payment_for_void_invoice") || strings.Count(one.ledger, "payment") != 4 {
		t.Fatalf("the scenario does not cover what it says: %+v", one)
	}
}

// billing.Register, as serve registers it, through shared transactions: a group of
// payments is booked once each, with its outbox message, by one batch.
func TestBillingRegister_GroupOfPaymentsBookedOnce(t *testing.T) {
	t.Parallel()
	g := setupGroup(t) // holds the flusher with a handler on the billing endpoint
	billing.Register(g.inbox, epAnalytics)
	var evs []hookinbox.Event
	for k := range 5 {
		evs = append(evs, invoiceEvent(epAnalytics, fmt.Sprintf("evt_%d", k), "invoice.paid", fmt.Sprintf("in_%d", k), 100))
	}
	evs = append(evs, evs[0]) // a copy in the same group
	byID := g.group(t, evs...)
	for id, rs := range byID {
		processed := 0
		for _, r := range rs {
			if r.err != nil {
				t.Errorf("%s: %v", id, r.err)
			}
			if r.out == hookinbox.OutcomeProcessed {
				processed++
			}
		}
		if processed != 1 {
			t.Errorf("%s: %d copies processed, want 1", id, processed)
		}
	}
	if n := g.count(t, `SELECT count(*) FROM ledger_entries`); n != 5 {
		t.Fatalf("%d ledger entries, want 5", n)
	}
	if n := g.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE event_type = 'InvoicePaymentBooked'`); n != 5 {
		t.Fatalf("%d outbox messages, want 5", n)
	}
	if n := g.count(t, `SELECT count(DISTINCT payload->>'ledger_entry_id') FROM hookinbox_outbox o
 JOIN ledger_entries l ON l.id = (o.payload->>'ledger_entry_id')::bigint AND l.invoice_id = o.aggregate_id`); n != 5 {
		t.Fatalf("%d outbox messages name their own ledger entry, want 5", n)
	}
}

// InsertOutboxBatchTx writes every message, in the order given (ids follow it), each
// on behalf of its own source, or none.
func TestInsertOutboxBatchTx_InOrderAllOrNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	src := func(id string) hookinbox.Event {
		return hookinbox.Event{Provider: "stripe", Endpoint: epBilling, ID: id}
	}
	msg := func(id string, payload any) hookinbox.OutboxMessage {
		return hookinbox.OutboxMessage{AggregateType: "Invoice", AggregateID: id, EventType: "e", Payload: payload, Destination: "nats"}
	}
	insert := func(sources []hookinbox.Event, msgs []hookinbox.OutboxMessage) error {
		return pgx.BeginFunc(b.ctx, b.db.Pool, func(tx pgx.Tx) error {
			return hookinbox.InsertOutboxBatchTx[*pgxdriver.Driver](b.ctx, tx, sources, msgs)
		})
	}
	if err := insert([]hookinbox.Event{src("evt_a"), src("evt_b"), src("evt_c")},
		[]hookinbox.OutboxMessage{msg("c", map[string]int{"n": 1}), msg("a", map[string]int{"n": 2}), msg("b", []byte(`{"n":3}`))}); err != nil {
		t.Fatal(err)
	}
	err := insert([]hookinbox.Event{src("evt_d"), src("evt_e")}, []hookinbox.OutboxMessage{msg("d", []byte(`{}`)), msg("e", []byte(`{`))})
	if !errors.Is(err, driver.ErrInvalidInput) {
		t.Fatalf("a batch with an invalid payload: %v, want ErrInvalidInput", err)
	}
	if err := insert([]hookinbox.Event{src("evt_f")}, nil); err == nil {
		t.Fatal("one source for no message: accepted")
	}
	var order string
	if err := b.db.Pool.QueryRow(b.ctx, `SELECT string_agg(aggregate_id || ':' || source_event_id || ':' || destination || ':' || (payload->>'n'), ',' ORDER BY id)
  FROM hookinbox_outbox`).Scan(&order); err != nil {
		t.Fatal(err)
	}
	if order != "c:evt_a:nats:1,a:evt_b:nats:2,b:evt_c:nats:3" {
		t.Fatalf("outbox %q, want the first batch in its order and nothing of the failed one", order)
	}
}

// Workers apply the receipts of a set-based registration in a claimed batch by one
// call; when it fails, each receipt is processed alone, and only the bad one records
// the failure and waits for its retry.
func TestWorkerBatch_SetBasedHandlerOneCallAndFallback(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	var mu sync.Mutex
	var calls []int
	fail := map[string]bool{}
	b.inbox.HandleBatch(epAsync, "invoice.paid", recordingBatch(&mu, &calls, func(id string) bool { return fail[id] }))
	process := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			b.receive(t, paid(epAsync, id))
		}
		batch, err := b.inbox.ClaimBatchForTest(b.ctx, 10, epAsync)
		if err != nil || len(batch) != len(ids) {
			t.Fatalf("claimed %d, %v; want %d", len(batch), err, len(ids))
		}
		b.inbox.ProcessBatchForTest(b.ctx, batch)
	}
	process("evt_1", "evt_2", "evt_3")
	mu.Lock()
	if fmt.Sprint(calls) != "[3]" {
		t.Fatalf("calls %v, want one of 3", calls)
	}
	calls, fail["evt_5"] = nil, true
	mu.Unlock()
	process("evt_4", "evt_5", "evt_6")
	mu.Lock()
	// The batch's call; then its halves: evt_4 alone, evt_5 and evt_6 together
	// (refused), then each of those alone.
	if fmt.Sprint(calls) != "[3 1 2 1 1]" {
		t.Fatalf("calls %v, want the batch's, then its halves', then one each", calls)
	}
	mu.Unlock()
	for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4", "evt_6"} {
		if r := b.receipt(t, epAsync, id); r == nil || r.State != hookinboxtype.StateProcessed || b.effects(t, id) != 1 {
			t.Errorf("%s: %+v, applied %d times; want processed once", id, r, b.effects(t, id))
		}
	}
	if r := b.receipt(t, epAsync, "evt_5"); r == nil || r.State != hookinboxtype.StatePending || r.LastError == "" || b.effects(t, "evt_5") != 0 {
		t.Fatalf("evt_5: %+v; want pending with its error and nothing applied", r)
	}
}

// A worker's batch with one failing receipt is split in halves until the failure is
// alone: every other receipt is processed once, in a part that committed; the failing
// one is left pending with its error; each receipt's attempt, counted once by the
// claim, ends as one row of the attempt history.
func TestWorkerBatch_FailureIsIsolatedByHalving(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	var mu sync.Mutex
	var calls []int
	b.inbox.HandleBatch(epAsync, "invoice.paid", recordingBatch(&mu, &calls, func(id string) bool { return id == "evt_6" }))
	var ids []string
	for n := range 8 {
		ids = append(ids, fmt.Sprintf("evt_%d", n))
		b.receive(t, paid(epAsync, ids[n]))
	}
	batch, err := b.inbox.ClaimBatchForTest(b.ctx, 10, epAsync)
	if err != nil || len(batch) != len(ids) {
		t.Fatalf("claimed %d, %v; want %d", len(batch), err, len(ids))
	}
	b.inbox.ProcessBatchForTest(b.ctx, batch)
	mu.Lock()
	// All 8 (refused); 0-3 (committed); 4-7 (refused); 4-5 (committed); 6-7
	// (refused); 6 alone (refused); 7 alone.
	if fmt.Sprint(calls) != "[8 4 4 2 2 1 1]" {
		t.Errorf("calls %v, want [8 4 4 2 2 1 1]", calls)
	}
	mu.Unlock()
	for _, id := range ids {
		r := b.receipt(t, epAsync, id)
		var history int
		if err := b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM hookinbox_attempt WHERE endpoint = $1 AND event_id = $2`,
			epAsync, id).Scan(&history); err != nil {
			t.Fatal(err)
		}
		switch {
		case id == "evt_6":
			if r == nil || r.State != hookinboxtype.StatePending || r.LastError == "" || b.effects(t, id) != 0 {
				t.Errorf("%s: %+v, applied %d times; want pending with its error, nothing applied", id, r, b.effects(t, id))
			}
		case r == nil || r.State != hookinboxtype.StateProcessed || b.effects(t, id) != 1:
			t.Errorf("%s: %+v, applied %d times; want processed once", id, r, b.effects(t, id))
		}
		if r != nil && (r.Attempts != 1 || history != 1) {
			t.Errorf("%s: %d attempts counted, %d in the history; want 1 and 1", id, r.Attempts, history)
		}
	}
}

// recordingBatch is a set-based handler that appends the size of each call to calls
// (under mu), applies each event as the counting handler does, and fails the call at
// the first event refuse names (refuse runs under mu).
func recordingBatch(mu *sync.Mutex, calls *[]int, refuse func(id string) bool) hookinbox.BatchHandlerFunc[pgx.Tx] {
	return func(ctx context.Context, tx pgx.Tx, evs []hookinbox.Event) error {
		mu.Lock()
		*calls = append(*calls, len(evs))
		mu.Unlock()
		for _, ev := range evs {
			if err := countingHandler(ctx, tx, ev); err != nil {
				return err
			}
			mu.Lock()
			bad := refuse(ev.ID)
			mu.Unlock()
			if bad {
				return errors.New("refused " + ev.ID)
			}
		}
		return nil
	}
}
