package hookinbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// A batch of the accept path is handed to the workers as one hand-off, so that one
// worker processes it in one transaction however many workers wait: with a hand-off
// per receipt, 32 waiting workers each took one, and committed batches of one (bench
// --mode mixed --workers 32 fell from 3,110 to 1,288 events/s, docs/BENCHMARKS.md).

// handOffFunc is what the accept path's flusher calls with a committed batch.
type handOffFunc func(i *Inbox[any], batch []*driver.InboxInsertParams, inserted []bool, at time.Time)

// checkOneHandOffPerBatch hands off a batch of six leased receipts (one of them a
// duplicate) and one that was not leased, and reports how that broke the promise.
func checkOneHandOffPerBatch(handOff handOffFunc) error {
	i := &Inbox[any]{worker: WorkerConfig{Concurrency: 32, BatchSize: 25}}
	i.openHandoff()
	var batch []*driver.InboxInsertParams
	var inserted []bool
	for n := range 7 {
		p := &driver.InboxInsertParams{Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "a", EventID: fmt.Sprint("evt_", n)}, MaxAttempts: 3}
		if n < 6 && i.handoff.reserve() {
			p.Lease = time.Minute
		}
		batch = append(batch, p)
		inserted = append(inserted, n != 2) // the third, leased, was a duplicate
	}
	handOff(i, batch, inserted, time.Now())
	switch {
	case len(i.handoff.q) != 1:
		return fmt.Errorf("%d hand-offs for one batch, want 1", len(i.handoff.q))
	case len(i.handoff.q[0].rs) != 5:
		return fmt.Errorf("the hand-off does not hold the batch's 5 leased and inserted receipts")
	case i.handoff.room.Load() != 32*25-5:
		return fmt.Errorf("room %d, want %d: the duplicate's returned, the five handed off taken", i.handoff.room.Load(), 32*25-5)
	}
	return nil
}

func TestHandOff_OneHandOffPerAcceptBatch(t *testing.T) {
	if err := checkOneHandOffPerBatch((*Inbox[any]).handOff); err != nil {
		t.Fatal(err)
	}
}

// The broken variant: a hand-off per receipt.
func TestBrokenHandOffPerReceipt_IsCaught(t *testing.T) {
	perReceipt := func(i *Inbox[any], batch []*driver.InboxInsertParams, inserted []bool, at time.Time) {
		for n := range batch {
			i.handOff(batch[n:n+1], inserted[n:n+1], at)
		}
	}
	if err := checkOneHandOffPerBatch(perReceipt); err == nil {
		t.Fatal("a hand-off per receipt passed the check; the test would not notice")
	}
}
