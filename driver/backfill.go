package driver

import (
	"context"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// BackfillStore keeps the checkpoints of backfills and the origin of receipts (schema
// version 5), a part of Executor.
type BackfillStore interface {
	// BackfillCheckpoint returns the named checkpoint, or nil if there is none.
	BackfillCheckpoint(ctx context.Context, name string) (*BackfillCheckpoint, error)

	// BackfillAdvance stores the checkpoint params.Name as params says and, when
	// params.Origin is set, marks the receipt of params.Key with it unless the receipt
	// has an origin already, in one transaction: a checkpoint never moves past an
	// event whose origin was not recorded.
	BackfillAdvance(ctx context.Context, params *BackfillAdvanceParams) error

	// InboxOrigin returns the receipt's origin: "" for a webhook delivery (or no such
	// receipt), "backfill" or "reconcile".
	InboxOrigin(ctx context.Context, key hookinboxtype.Key) (string, error)
}

// BackfillCheckpoint is where a backfill stopped.
type BackfillCheckpoint struct {
	Name string
	// Cursor is the source's position after the last event fed; "" at the start.
	Cursor string
	// Events counts the events fed since the run started.
	Events int64
	// Done is set when the run reached the end of the source.
	Done      bool
	StartedAt time.Time
	UpdatedAt time.Time
}

// BackfillAdvanceParams are BackfillAdvance's.
type BackfillAdvanceParams struct {
	Name   string
	Cursor string
	Events int64
	Done   bool
	// Restart sets the checkpoint's start time to now: a new run.
	Restart bool
	// Origin, when set, is recorded on the receipt of Key if it has none.
	Origin string
	Key    hookinboxtype.Key
}
