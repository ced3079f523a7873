package hookinbox_test

// The seed article's two broken receivers, kept as test-only code so that the tests of
// G2 and G3 are seen to fail on them: a test that cannot fail proves nothing.
//
// Each scenario runs once with the real Inbox.Receive and once with a broken variant;
// the real one must hold the guarantee and the broken one must be caught breaking it.

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// receiveFunc is a receiver under test. crashAfterBusinessCommit makes it die (return
// errCrash) right after the business update commits, before it answers.
type receiveFunc func(ctx context.Context, b *testBundle, ev hookinbox.Event, fn hookinbox.HandlerFunc[pgx.Tx], crashAfterBusinessCommit bool) (hookinbox.Outcome, error)

var errCrash = errors.New("process died")

// receiveReal is Inbox.Receive. Its business update and receipt commit together, so a
// crash "after the business commit" is a crash after the receipt commit as well.
func receiveReal(ctx context.Context, b *testBundle, ev hookinbox.Event, _ hookinbox.HandlerFunc[pgx.Tx], crash bool) (hookinbox.Outcome, error) {
	out, err := b.inbox.Receive(ctx, ev)
	if err == nil && crash {
		return "", errCrash
	}
	return out, err
}

// receiveMarkFirst is Case A: the receipt commits in its own transaction, then the
// business update runs in another. A failed update leaves a receipt that makes every
// retry a duplicate: the event is lost.
func receiveMarkFirst(ctx context.Context, b *testBundle, ev hookinbox.Event, fn hookinbox.HandlerFunc[pgx.Tx], crash bool) (hookinbox.Outcome, error) {
	d := pgxdriver.New(b.db.Pool)
	inserted, err := d.Executor().InboxInsert(ctx, &driver.InboxInsertParams{
		Key: hookinboxtype.Key{Provider: "stripe", Endpoint: ev.Endpoint, EventID: ev.ID}, EventType: ev.Type,
		Payload: ev.Payload, Processed: true, Outcome: "processed",
	})
	if err != nil {
		return "", err
	}
	if !inserted {
		return hookinbox.OutcomeDuplicate, nil
	}
	ev.Provider = "stripe"
	if err := pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error { return fn(ctx, tx, ev) }); err != nil {
		return "", err
	}
	if crash {
		return "", errCrash
	}
	return hookinbox.OutcomeProcessed, nil
}

// receiveMarkAfter is Case B: check, commit the business update, then record the
// receipt. A crash between the two commits makes the retry apply the event again.
func receiveMarkAfter(ctx context.Context, b *testBundle, ev hookinbox.Event, fn hookinbox.HandlerFunc[pgx.Tx], crash bool) (hookinbox.Outcome, error) {
	d := pgxdriver.New(b.db.Pool)
	key := hookinboxtype.Key{Provider: "stripe", Endpoint: ev.Endpoint, EventID: ev.ID}
	seen, err := d.Executor().InboxGet(ctx, key)
	if err != nil {
		return "", err
	}
	if seen != nil {
		return hookinbox.OutcomeDuplicate, nil
	}
	ev.Provider = "stripe"
	if err := pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error { return fn(ctx, tx, ev) }); err != nil {
		return "", err
	}
	if crash {
		return "", errCrash
	}
	if _, err := d.Executor().InboxInsert(ctx, &driver.InboxInsertParams{
		Key: key, EventType: ev.Type, Payload: ev.Payload, Processed: true, Outcome: "processed",
	}); err != nil {
		return "", err
	}
	return hookinbox.OutcomeProcessed, nil
}

// scenarioUpdateFailsThenRedelivered (G2, seed case 4 and Case A): the first
// delivery's business update fails after writing; the provider redelivers. It returns
// the redelivery's outcome and the number of ledger rows.
func scenarioUpdateFailsThenRedelivered(t *testing.T, receive receiveFunc) (hookinbox.Outcome, int) {
	b := setup(t, setupOpts{noBilling: true})
	paid := billing.Handlers[pgx.Tx]()[billing.TypeInvoicePaid]
	fail := true
	fn := func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		if err := paid(ctx, tx, ev); err != nil {
			return err
		}
		if fail {
			fail = false
			return errors.New("injected database error after the ledger insert")
		}
		return nil
	}
	b.inbox.Handle(epBilling, billing.TypeInvoicePaid, fn)
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)

	if _, err := receive(b.ctx, b, ev, fn, false); err == nil {
		t.Fatal("first delivery succeeded; the scenario needs it to fail")
	}
	out, err := receive(b.ctx, b, ev, fn, false)
	if err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	return out, b.ledgerRows(t)
}

// scenarioCrashAfterBusinessCommit (G3, Case B): the receiver dies right after the
// business update commits, before answering; the provider redelivers. The handler
// writes to a table with no unique key, so nothing but the inbox can stop a second
// application. It returns the number of applications.
func scenarioCrashAfterBusinessCommit(t *testing.T, receive receiveFunc) int {
	b := setup(t, setupOpts{noBilling: true})
	b.inbox.Handle(epBilling, "invoice.paid", countingHandler)
	ev := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)

	if _, err := receive(b.ctx, b, ev, countingHandler, true); !errors.Is(err, errCrash) {
		t.Fatalf("first delivery: %v, want the simulated crash", err)
	}
	if _, err := receive(b.ctx, b, ev, countingHandler, false); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	return b.effects(t, "evt_1")
}

func TestReceive_FailedUpdateIsNotLost(t *testing.T) {
	t.Parallel()
	out, ledger := scenarioUpdateFailsThenRedelivered(t, receiveReal)
	if out != hookinbox.OutcomeProcessed || ledger != 1 {
		t.Fatalf("redelivery %s with %d ledger rows, want processed with 1", out, ledger)
	}
}

// Seed case 9.
func TestBrokenCaseA_MarkFirstLosesTheEvent(t *testing.T) {
	t.Parallel()
	out, ledger := scenarioUpdateFailsThenRedelivered(t, receiveMarkFirst)
	if out != hookinbox.OutcomeDuplicate || ledger != 0 {
		t.Fatalf("Case A not reproduced: redelivery %s with %d ledger rows, want duplicate with 0", out, ledger)
	}
}

func TestReceive_CrashAfterCommitMakesRetryDuplicate(t *testing.T) {
	t.Parallel()
	if n := scenarioCrashAfterBusinessCommit(t, receiveReal); n != 1 {
		t.Fatalf("applied %d times, want 1", n)
	}
}

// Seed case 10.
func TestBrokenCaseB_MarkAfterAppliesTwice(t *testing.T) {
	t.Parallel()
	if n := scenarioCrashAfterBusinessCommit(t, receiveMarkAfter); n != 2 {
		t.Fatalf("Case B not reproduced: applied %d times, want 2", n)
	}
}
