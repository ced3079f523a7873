package pgxdriver

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// byKey sends query, a worker's lookup of receipts by key, between sqlSeqScanOff and
// sqlSeqScanRestore, in one round trip with whatever the transaction has pending, and
// reads its result with read.
func (e *executorTx) byKey(ctx context.Context, what, query string, args []any, read func(pgx.BatchResults) error) error {
	b := &pgx.Batch{}
	b.Queue(sqlSeqScanOff)
	b.Queue(query, args...)
	b.Queue(sqlSeqScanRestore)
	br, err := e.sendBatch(ctx, b)
	if err != nil {
		return err
	}
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return translate(fmt.Errorf("error %s: %w", what, err))
	}
	if err := read(br); err != nil {
		return translate(fmt.Errorf("error %s: %w", what, err))
	}
	if _, err := br.Exec(); err != nil {
		return translate(fmt.Errorf("error %s: %w", what, err))
	}
	if err := br.Close(); err != nil {
		return translate(fmt.Errorf("error %s: %w", what, err))
	}
	return nil
}

// InboxLockUnprocessed locks by key with sequential scans off (byKey).
func (e *executorTx) InboxLockUnprocessed(ctx context.Context, keys []hookinboxtype.Key) ([]*hookinboxtype.Receipt, error) {
	providers, endpoints, ids := keyColumns(keys)
	var list []*hookinboxtype.Receipt
	err := e.byKey(ctx, "locking receipts", sqlInboxLockUnprocessed, []any{providers, endpoints, ids}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		list, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*hookinboxtype.Receipt, error) { return scanReceipt(row) })
		return err
	})
	return list, err
}

// InboxMarkProcessed queues the mark, with sequential scans off as byKey sends them:
// it travels with the transaction's next statement, or with COMMIT, and its error is
// theirs (see executorTx).
func (e *executorTx) InboxMarkProcessed(_ context.Context, keys []hookinboxtype.Key, outcome string, by *driver.AttemptBy) error {
	query, args := markProcessedArgs(keys, outcome, by)
	e.queue("error marking receipts processed", sqlSeqScanOff)
	e.queue("error marking receipts processed", query, args...)
	e.queue("error marking receipts processed", sqlSeqScanRestore)
	return nil
}
