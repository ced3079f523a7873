package hookinbox_test

import (
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox"
)

// A retry with the same event id but another body is still a duplicate (the first body
// won, nothing is applied again), but it is counted on the receipt, listed, and logged
// with both hashes; a retry with the same body is not a conflict.
func TestReceive_SameIDOtherBodyIsADuplicateCountedAsAConflict(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	b := setup(t, setupOpts{logs: logs})
	first := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 1000)
	if out := b.receive(t, first); out != hookinbox.OutcomeProcessed {
		t.Fatalf("first delivery: %s", out)
	}
	if out := b.receive(t, first); out != hookinbox.OutcomeDuplicate {
		t.Fatalf("same body again: %s", out)
	}
	if r := b.receipt(t, epBilling, "evt_1"); r.Conflicts != 0 || len(r.BodySHA256) != 32 {
		t.Fatalf("after a same-body retry: conflicts %d, hash %x", r.Conflicts, r.BodySHA256)
	}
	changed := invoiceEvent(epBilling, "evt_1", "invoice.paid", "in_1", 999_999) // same id, another amount
	if out := b.receive(t, changed); out != hookinbox.OutcomeDuplicate {
		t.Fatalf("another body under the same id: %s, want duplicate", out)
	}
	if n := b.ledgerRows(t); n != 1 {
		t.Fatalf("ledger rows %d, want 1: the changed body must not be applied", n)
	}
	r := b.receipt(t, epBilling, "evt_1")
	if r.Conflicts != 1 {
		t.Fatalf("conflicts %d, want 1", r.Conflicts)
	}
	list, err := b.inbox.Operator().ListReceipts(b.ctx, hookinbox.ListParams{Conflicts: true})
	if err != nil || len(list) != 1 || list[0].EventID != "evt_1" {
		t.Fatalf("conflicts list %v, %v", list, err)
	}
	if !strings.Contains(logs.String(), "duplicate with another body") || !strings.Contains(logs.String(), "received_sha256") {
		t.Errorf("no conflict line in the log:\n%s", logs.String())
	}
}
