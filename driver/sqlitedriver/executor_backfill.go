package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The backfill's SQL (schema version 5).
const (
	sqlBackfillCheckpoint = `
SELECT name, cursor, events, done, started_at, updated_at
  FROM hookinbox_backfill_checkpoint
 WHERE name = ?1`

	// Written only where no origin is: a receipt a delivery inserted first keeps its
	// NULL.
	sqlBackfillOrigin = `
UPDATE hookinbox_inbox
   SET origin = ?1
 WHERE provider = ?2 AND endpoint = ?3 AND event_id = ?4 AND origin IS NULL`

	sqlBackfillAdvance = `
INSERT INTO hookinbox_backfill_checkpoint (name, cursor, events, done)
VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (name) DO UPDATE
   SET cursor     = excluded.cursor,
       events     = excluded.events,
       done       = excluded.done,
       started_at = CASE WHEN ?5 THEN ` + now + ` ELSE hookinbox_backfill_checkpoint.started_at END,
       updated_at = ` + now

	sqlInboxOrigin = `
SELECT coalesce(origin, '')
  FROM hookinbox_inbox
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3`
)

func (e *executor) BackfillCheckpoint(ctx context.Context, name string) (*driver.BackfillCheckpoint, error) {
	var (
		c                driver.BackfillCheckpoint
		started, updated int64
	)
	err := e.db.QueryRowContext(ctx, sqlBackfillCheckpoint, name).Scan(&c.Name, &c.Cursor, &c.Events, &c.Done, &started, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error reading backfill checkpoint: %w", err))
	}
	c.StartedAt, c.UpdatedAt = fromMicros(started), fromMicros(updated)
	return &c, nil
}

// BackfillAdvance runs its two statements in one transaction: the checkpoint and the
// receipt's origin commit together.
func (e *executor) BackfillAdvance(ctx context.Context, p *driver.BackfillAdvanceParams) error {
	err := e.inTx(ctx, func(q dbtx) error {
		if p.Origin != "" {
			if _, err := q.ExecContext(ctx, sqlBackfillOrigin, p.Origin, p.Key.Provider, p.Key.Endpoint, p.Key.EventID); err != nil {
				return fmt.Errorf("error recording receipt origin: %w", err)
			}
		}
		if _, err := q.ExecContext(ctx, sqlBackfillAdvance, p.Name, p.Cursor, p.Events, p.Done, p.Restart); err != nil {
			return fmt.Errorf("error storing backfill checkpoint: %w", err)
		}
		return nil
	})
	return translate(err)
}

func (e *executor) InboxOrigin(ctx context.Context, key hookinboxtype.Key) (string, error) {
	var origin string
	err := e.db.QueryRowContext(ctx, sqlInboxOrigin, key.Provider, key.Endpoint, key.EventID).Scan(&origin)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", translate(fmt.Errorf("error reading receipt origin: %w", err))
	}
	return origin, nil
}
