package pgxdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The backfill's SQL (schema version 5).
const (
	sqlBackfillCheckpoint = `
SELECT name, cursor, events, done, started_at, updated_at
  FROM hookinbox_backfill_checkpoint
 WHERE name = $1`

	// One statement, so the checkpoint and the receipt's origin commit together. The
	// origin is written only where none is: a receipt a delivery inserted first keeps
	// its NULL.
	sqlBackfillAdvance = `
WITH origin AS (
    UPDATE hookinbox_inbox
       SET origin = $6
     WHERE $6 <> '' AND provider = $7 AND endpoint = $8 AND event_id = $9 AND origin IS NULL
)
INSERT INTO hookinbox_backfill_checkpoint (name, cursor, events, done)
VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE
   SET cursor     = EXCLUDED.cursor,
       events     = EXCLUDED.events,
       done       = EXCLUDED.done,
       started_at = CASE WHEN $5 THEN now() ELSE hookinbox_backfill_checkpoint.started_at END,
       updated_at = now()`

	sqlInboxOrigin = `
SELECT coalesce(origin, '')
  FROM hookinbox_inbox
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3`
)

func (e *executor) BackfillCheckpoint(ctx context.Context, name string) (*driver.BackfillCheckpoint, error) {
	var c driver.BackfillCheckpoint
	err := e.db.QueryRow(ctx, sqlBackfillCheckpoint, name).Scan(&c.Name, &c.Cursor, &c.Events, &c.Done, &c.StartedAt, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error reading backfill checkpoint: %w", err))
	}
	return &c, nil
}

func (e *executor) BackfillAdvance(ctx context.Context, p *driver.BackfillAdvanceParams) error {
	_, err := e.db.Exec(ctx, sqlBackfillAdvance, p.Name, p.Cursor, p.Events, p.Done, p.Restart,
		p.Origin, p.Key.Provider, p.Key.Endpoint, p.Key.EventID)
	if err != nil {
		return translate(fmt.Errorf("error storing backfill checkpoint: %w", err))
	}
	return nil
}

func (e *executor) InboxOrigin(ctx context.Context, key hookinboxtype.Key) (string, error) {
	var origin string
	err := e.db.QueryRow(ctx, sqlInboxOrigin, key.Provider, key.Endpoint, key.EventID).Scan(&origin)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", translate(fmt.Errorf("error reading receipt origin: %w", err))
	}
	return origin, nil
}
