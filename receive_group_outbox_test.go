package hookinbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// On PostgreSQL a handler's outbox messages (InsertOutboxBatchTx) leave with COMMIT
// (pgxdriver's queued statements). A message the database refuses then fails the
// group's commit, not the handler's call: the group is undone and each delivery is
// received alone, so the refused one fails with nothing left behind and the others
// are processed once, as when the insert failed at once.
func TestReceiveGroup_RefusedOutboxMessageAtCommitFailsOnlyItsDelivery(t *testing.T) {
	t.Parallel()
	g := newGroupBundle(t)
	g.db.RefuseOutboxMessagesOf(t, "evt_refused")
	// One set-based registration: the group is one batch, with no savepoint, so the
	// refusal reaches the commit.
	g.inbox.HandleBatch(epBilling, "invoice.paid", func(ctx context.Context, tx pgx.Tx, evs []hookinbox.Event) error {
		for _, ev := range evs {
			if ev.ID == "evt_hold" {
				close(g.held)
				<-g.hold
			}
		}
		return bookWithMessages(ctx, tx, evs)
	})
	byID := g.group(t, paid(epBilling, "evt_1"), paid(epBilling, "evt_refused"), paid(epBilling, "evt_3"))
	for _, id := range []string{"evt_1", "evt_3"} {
		if r := byID[id][0]; r.err != nil || r.out != hookinbox.OutcomeProcessed {
			t.Errorf("%s: %s, %v; want processed", id, r.out, r.err)
		}
		if n := g.effects(t, id); n != 1 {
			t.Errorf("%s applied %d times, want 1", id, n)
		}
		if n := g.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE aggregate_id = $1`, id); n != 1 {
			t.Errorf("%s: %d outbox messages, want 1", id, n)
		}
	}
	if r := byID["evt_refused"][0]; r.err == nil || !strings.Contains(r.err.Error(), "message refused") {
		t.Fatalf("evt_refused: %s, %v; want the refusal's error", r.out, r.err)
	}
	if n := g.effects(t, "evt_refused"); n != 0 || g.receipt(t, epBilling, "evt_refused") != nil {
		t.Fatalf("the refused delivery left %d effects or a receipt behind", n)
	}
	if sizes, failed := g.groups.sizes(hookinbox.GroupSync); !failed {
		t.Fatalf("sync groups %v, none failed: the refusal did not reach the group's commit", sizes)
	}
}

// bookWithMessages is a set-based handler that applies each event (test_effects) and
// writes an outbox message of aggregate id the event's id for each.
func bookWithMessages(ctx context.Context, tx pgx.Tx, evs []hookinbox.Event) error {
	msgs := make([]hookinbox.OutboxMessage, len(evs))
	for k, ev := range evs {
		if err := countingHandler(ctx, tx, ev); err != nil {
			return err
		}
		msgs[k] = hookinbox.OutboxMessage{AggregateType: "invoice", AggregateID: ev.ID, EventType: "paid", Payload: map[string]string{}}
	}
	return hookinbox.InsertOutboxBatchTx[*pgxdriver.Driver](ctx, tx, evs, msgs)
}

// checkHybridKeepsReceiptOfRefusedMessage returns what broke: on a hybrid endpoint,
// a handler whose outbox message the database refuses at COMMIT has failed, as if
// the insert had failed at once: the receipt is kept pending for the workers, with
// the refusal as its error, and the delivery is answered accepted.
func checkHybridKeepsReceiptOfRefusedMessage(t *testing.T, broken bool) string {
	t.Helper()
	b := setup(t, setupOpts{noBilling: true})
	if broken {
		b.inbox.CommitNotTheHandlersForTest()
	}
	b.db.RefuseOutboxMessagesOf(t, "evt_refused")
	b.inbox.HandleBatch(epHybrid, "invoice.paid", bookWithMessages)
	out, err := b.inbox.Receive(b.ctx, paid(epHybrid, "evt_refused"))
	if n := b.effects(t, "evt_refused"); n != 0 {
		t.Fatalf("the refused delivery left %d effects", n)
	}
	if err != nil || out != hookinbox.OutcomeAccepted {
		return fmt.Sprintf("hybrid delivery whose message was refused at COMMIT: %s, %v; want accepted", out, err)
	}
	r := b.receipt(t, epHybrid, "evt_refused")
	if r == nil || r.State != hookinboxtype.StatePending || !strings.Contains(r.LastError, "message refused") {
		return fmt.Sprintf("the receipt kept: %+v; want pending with the refusal as its error", r)
	}
	return ""
}

func TestReceive_HybridKeepsTheReceiptWhenItsMessageIsRefusedAtCommit(t *testing.T) {
	t.Parallel()
	if broke := checkHybridKeepsReceiptOfRefusedMessage(t, false); broke != "" {
		t.Fatal(broke)
	}
}

func TestReceive_BrokenCommitNotTheHandlersIsCaught(t *testing.T) {
	t.Parallel()
	if broke := checkHybridKeepsReceiptOfRefusedMessage(t, true); broke == "" {
		t.Fatal("a hybrid endpoint that answered the refusal at COMMIT as the database's was not caught")
	}
}
