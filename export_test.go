package hookinbox

import (
	"context"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Internals the external tests drive one step at a time.

var ErrAlreadyProcessed = errAlreadyProcessed

// ClaimForTest claims one receipt of the given endpoints, as a worker with a batch
// size of 1 does.
func (i *Inbox[TTx]) ClaimForTest(ctx context.Context, endpoints ...string) (*hookinboxtype.Receipt, error) {
	rs, err := i.driver.Executor().InboxClaim(ctx, &driver.InboxClaimParams{
		Endpoints: endpoints, Limit: 1, Lease: i.worker.Lease, MaxAttempts: i.worker.MaxAttempts,
	})
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return rs[0], nil
}

// AcceptQueuedForTest returns the number of receipts waiting for a group commit.
func (i *Inbox[TTx]) AcceptQueuedForTest() int { return i.accepter.Queued() }

// ProcessClaimedForTest processes a claimed receipt and records its failure, as a
// worker does.
func (i *Inbox[TTx]) ProcessClaimedForTest(ctx context.Context, r *hookinboxtype.Receipt) error {
	return i.processClaimedBy(ctx, r, time.Now().Add(i.worker.Lease), "test-worker")
}

// ClaimBatchForTest claims up to limit receipts in one statement, as a worker does.
func (i *Inbox[TTx]) ClaimBatchForTest(ctx context.Context, limit int, endpoints ...string) ([]*hookinboxtype.Receipt, error) {
	return i.driver.Executor().InboxClaim(ctx, &driver.InboxClaimParams{
		Endpoints: endpoints, Limit: limit, Lease: i.worker.Lease, MaxAttempts: i.worker.MaxAttempts,
	})
}

// ProcessBatchForTest processes claimed receipts as a worker does, as if they had
// just been claimed.
func (i *Inbox[TTx]) ProcessBatchForTest(ctx context.Context, batch []*hookinboxtype.Receipt) {
	i.processBatch(ctx, batch, time.Now(), "test-worker")
}

// SyncQueuedForTest returns the number of sync deliveries waiting for a group.
func (i *Inbox[TTx]) SyncQueuedForTest() int { return i.syncer.Queued() }

// ClaimsForTest returns how many claim statements the workers have run.
func (i *Inbox[TTx]) ClaimsForTest() int64 { return i.claims.Load() }

// WorkerConcurrencyForTest returns the number of workers Run starts.
func (i *Inbox[TTx]) WorkerConcurrencyForTest() int { return i.worker.Concurrency }

// ProcessParkedForTest makes the inbox's workers process a receipt handed to them
// that its insert parked (its endpoint paused): the pause test's broken variant.
func (i *Inbox[TTx]) ProcessParkedForTest() { i.processParked = true }

// StaleHandoffsForTest makes the inbox's workers process hand-offs under the lease
// their insert took, however long they waited: the hand-off test's broken variant.
func (i *Inbox[TTx]) StaleHandoffsForTest() { i.staleHandoffs = true }

// AbandonHandoffsForTest makes Run's stop drop the receipts that wait for its workers:
// the stop test's broken variant.
func (i *Inbox[TTx]) AbandonHandoffsForTest() { i.abandonHandoffs = true }

// HandoffRoomForTest returns how many more receipts may be leased to the workers.
func (i *Inbox[TTx]) HandoffRoomForTest() int64 { return i.handoff.room.Load() }

// CommitNotTheHandlersForTest makes a sync delivery's failed commit the database's
// failure, never the handler's: the hybrid outbox test's broken variant.
func (i *Inbox[TTx]) CommitNotTheHandlersForTest() { i.commitNotTheHandlers = true }

// RoomByReceiversForTest makes the receivers of failed batches return their room, not
// the accept path's flusher: the room test's broken variant.
func (i *Inbox[TTx]) RoomByReceiversForTest() { i.roomByReceivers = true }

// ClaimBatchesForTest leaves ReceiveBatch's async receipts to the claims: the batch
// hand-off test's broken variant.
func (i *Inbox[TTx]) ClaimBatchesForTest() { i.claimBatches = true }

// HandedOffForTest returns how many receipts the workers took from the hand-off.
func (i *Inbox[TTx]) HandedOffForTest() int64 { return i.handoff.taken.Load() }

// UntracedHandoffsForTest hands receipts off without their trace context: the trace
// test's broken variant.
func (i *Inbox[TTx]) UntracedHandoffsForTest() { i.untracedHandoffs = true }

// StopWithoutWaitingForTest makes Run's stop close the hand-off without waiting for
// the accept batches in flight: the stop test's other broken variant.
func (i *Inbox[TTx]) StopWithoutWaitingForTest() { i.stopWithoutWaiting = true }
