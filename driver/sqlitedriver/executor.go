package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// executor runs the queries of queries.go on the database or on a transaction.
// The executor is the whole query contract, checked here rather than at run time.
var _ driver.Executor = (*executor)(nil)

type executor struct {
	db dbtx
	// pool is the database when the executor is not bound to a transaction: the
	// claims that take two statements then run in a transaction of their own.
	pool *sql.DB
}

// inTx runs fn in the executor's transaction or, on the database, in a new one
// (BEGIN IMMEDIATE, so its reads and writes see one state) that it commits.
func (e *executor) inTx(ctx context.Context, fn func(q dbtx) error) error {
	if e.pool == nil {
		return fn(e.db)
	}
	tx, err := e.pool.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("error beginning transaction: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("error committing: %w", err)
	}
	return nil
}

func (e *executor) InboxInsert(ctx context.Context, p *driver.InboxInsertParams) (bool, error) {
	var row *sql.Row
	if p.Lease > 0 {
		row = e.db.QueryRowContext(ctx, sqlInboxInsertLeased,
			p.Provider, p.Endpoint, p.EventID, p.EventType, string(p.Payload),
			driver.AttemptLimit(p.MaxAttempts), p.BodySHA256, p.TraceParent,
			driver.ParkedAt.UnixMicro(), p.Lease.Microseconds(), nullBytes(p.Request))
	} else {
		row = e.db.QueryRowContext(ctx, sqlInboxInsert,
			p.Provider, p.Endpoint, p.EventID, p.EventType, string(p.Payload),
			p.Processed, nullString(p.Outcome), p.Attempts, nullString(p.LastError), p.Delay.Microseconds(),
			driver.AttemptLimit(p.MaxAttempts), p.BodySHA256, p.TraceParent, nullBytes(p.Request))
	}
	var one int
	err := row.Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(fmt.Errorf("error inserting receipt: %w", err))
	}
	return true, nil
}

// InboxInsertMany inserts the batch in one write transaction (or the caller's), row by
// row: with one writer at a time, the transaction, and its one sync at commit, is what
// batching buys on SQLite.
func (e *executor) InboxInsertMany(ctx context.Context, ps []*driver.InboxInsertParams) ([]bool, error) {
	inserted := make([]bool, len(ps))
	err := e.inTx(ctx, func(q dbtx) error {
		ex := &executor{db: q}
		for i, p := range ps {
			ok, err := ex.InboxInsert(ctx, p)
			if err != nil {
				return err
			}
			inserted[i] = ok
		}
		return nil
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error inserting receipts: %w", err))
	}
	return inserted, nil
}

func (e *executor) InboxLockUnprocessed(ctx context.Context, keys []hookinboxtype.Key) ([]*hookinboxtype.Receipt, error) {
	var list []*hookinboxtype.Receipt
	for _, key := range keys {
		r, err := scanReceipt(e.db.QueryRowContext(ctx, sqlInboxLockUnprocessed, key.Provider, key.Endpoint, key.EventID))
		if err != nil {
			return nil, translate(fmt.Errorf("error locking receipt: %w", err))
		}
		if r != nil {
			list = append(list, r)
		}
	}
	return list, nil
}

func (e *executor) InboxMarkProcessed(ctx context.Context, keys []hookinboxtype.Key, outcome string, by *driver.AttemptBy) error {
	err := e.inTx(ctx, func(q dbtx) error {
		for _, key := range keys {
			if _, err := q.ExecContext(ctx, sqlInboxMarkProcessed, key.Provider, key.Endpoint, key.EventID, outcome); err != nil {
				return err
			}
			if by != nil {
				if _, err := q.ExecContext(ctx, sqlAttemptRecord, key.Provider, key.Endpoint, key.EventID,
					time.Since(by.StartedAt).Microseconds(), by.Worker, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return translate(fmt.Errorf("error marking receipts processed: %w", err))
	}
	return nil
}

func (e *executor) InboxClaim(ctx context.Context, p *driver.InboxClaimParams) ([]*hookinboxtype.Receipt, error) {
	if p.MaxAttempts < 1 {
		return nil, driver.ErrNoAttemptLimit
	}
	endpoints, err := jsonList(p.Endpoints)
	if err != nil {
		return nil, err
	}
	return driver.ClaimPending(func() ([]*hookinboxtype.Receipt, error) {
		rows, err := e.db.QueryContext(ctx, sqlInboxClaim, endpoints, p.Lease.Microseconds(), p.MaxAttempts, max(p.Limit, 1),
			driver.ParkedAt.UnixMicro())
		if err != nil {
			return nil, translate(fmt.Errorf("error claiming receipts: %w", err))
		}
		list, err := collect(rows, scanReceipt)
		if err != nil {
			return nil, translate(fmt.Errorf("error claiming receipts: %w", err))
		}
		return list, nil
	}, driver.ReceiptState)
}

func (e *executor) InboxExtendLease(ctx context.Context, keys []hookinboxtype.Key, lease time.Duration) (int, error) {
	total := 0
	err := e.inTx(ctx, func(q dbtx) error {
		for _, k := range keys {
			n, err := rowsAffected(q.ExecContext(ctx, sqlInboxExtendLease, k.Provider, k.Endpoint, k.EventID, lease.Microseconds(),
				driver.ParkedAt.UnixMicro()))
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, translate(fmt.Errorf("error extending leases: %w", err))
	}
	return total, nil
}

func (e *executor) InboxRecordFailure(ctx context.Context, p *driver.InboxFailureParams) error {
	err := e.inTx(ctx, func(q dbtx) error {
		n, err := rowsAffected(q.ExecContext(ctx, sqlInboxRecordFailure, p.Provider, p.Endpoint, p.EventID, p.Error,
			p.Delay.Microseconds(), driver.ErrorFingerprint(p.Error)))
		if err != nil || n == 0 || p.By == nil {
			return err
		}
		_, err = q.ExecContext(ctx, sqlAttemptRecord, p.Provider, p.Endpoint, p.EventID,
			time.Since(p.By.StartedAt).Microseconds(), p.By.Worker, p.Error)
		return err
	})
	if err != nil {
		return translate(fmt.Errorf("error recording failure: %w", err))
	}
	return nil
}

func (e *executor) InboxNoteDuplicate(ctx context.Context, key hookinboxtype.Key, sha []byte) ([]byte, bool, error) {
	if len(sha) == 0 {
		return nil, false, nil
	}
	var stored []byte
	err := e.db.QueryRowContext(ctx, sqlInboxNoteDuplicate, key.Provider, key.Endpoint, key.EventID, sha).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, translate(fmt.Errorf("error checking a duplicate's body: %w", err))
	}
	return stored, true, nil
}

func (e *executor) InboxGet(ctx context.Context, key hookinboxtype.Key) (*hookinboxtype.Receipt, error) {
	r, err := scanReceipt(e.db.QueryRowContext(ctx, sqlInboxGet, key.Provider, key.Endpoint, key.EventID))
	if err != nil {
		return nil, translate(fmt.Errorf("error reading receipt: %w", err))
	}
	return r, nil
}

func (e *executor) InboxList(ctx context.Context, p *driver.InboxListParams) ([]*hookinboxtype.Receipt, error) {
	rows, err := e.db.QueryContext(ctx, sqlInboxList, p.Endpoint, p.NeedsReview, p.Unprocessed, p.Limit, p.Conflicts)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing receipts: %w", err))
	}
	list, err := collect(rows, scanReceipt)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing receipts: %w", err))
	}
	return list, nil
}

func (e *executor) InboxStats(ctx context.Context, p *driver.InboxStatsParams) (*driver.InboxStats, error) {
	var s driver.InboxStats
	var oldest, oldestPending int64
	if err := e.db.QueryRowContext(ctx, sqlInboxStats).Scan(&s.Unprocessed, &oldest, &s.NeedsReview, &oldestPending); err != nil {
		return nil, translate(fmt.Errorf("error reading inbox stats: %w", err))
	}
	s.OldestUnprocessedAge = max(time.Duration(oldest)*time.Microsecond, 0)
	s.OldestPendingAge = max(time.Duration(oldestPending)*time.Microsecond, 0)
	rows, err := e.db.QueryContext(ctx, sqlInboxReceivedByType, p.RecentWindow.Microseconds())
	if err != nil {
		return nil, translate(fmt.Errorf("error counting receipts by type: %w", err))
	}
	s.ReceivedByType, err = collect(rows, func(row scanner) (driver.TypeCount, error) {
		var tc driver.TypeCount
		err := row.Scan(&tc.EventType, &tc.Count)
		return tc, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error counting receipts by type: %w", err))
	}
	return &s, nil
}

func (e *executor) InboxRetry(ctx context.Context, p *driver.InboxRetryParams) (int, error) {
	var res sql.Result
	var err error
	switch {
	case p.Key != nil:
		res, err = e.db.ExecContext(ctx, sqlInboxRetryOne, p.Key.Provider, p.Key.Endpoint, p.Key.EventID)
	case p.NeedsReview:
		res, err = e.db.ExecContext(ctx, sqlInboxRetryNeedsReview)
	default:
		return 0, errors.New("retry needs a key or NeedsReview")
	}
	n, err := rowsAffected(res, err)
	if err != nil {
		return 0, translate(fmt.Errorf("error resetting receipts for retry: %w", err))
	}
	return n, nil
}

func (e *executor) InboxDeleteProcessed(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	if p.DryRun {
		var n int
		if err := e.db.QueryRowContext(ctx, sqlInboxCountProcessed, p.OlderThan.Microseconds()).Scan(&n); err != nil {
			return 0, translate(fmt.Errorf("error counting processed receipts: %w", err))
		}
		return n, nil
	}
	n, err := rowsAffected(e.db.ExecContext(ctx, sqlInboxDeleteProcessed, p.OlderThan.Microseconds(), p.Limit))
	if err != nil {
		return 0, translate(fmt.Errorf("error deleting processed receipts: %w", err))
	}
	return n, nil
}

func (e *executor) InboxPurgePayloads(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlInboxCountPurgeable, sqlInboxPurgePayloads, "payloads of processed receipts")
}

// TableSizes counts each table's rows (an SQLite database is small enough to count)
// and, where the library has the dbstat table, their bytes.
func (e *executor) TableSizes(ctx context.Context) ([]driver.TableSize, error) {
	var sizes []driver.TableSize
	for _, table := range []string{"hookinbox_inbox", "hookinbox_outbox", "hookinbox_effect"} {
		t := driver.TableSize{Table: table, Bytes: -1}
		if err := e.db.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&t.Rows); err != nil {
			return nil, translate(fmt.Errorf("error counting %s: %w", table, err))
		}
		var bytes sql.NullInt64
		if e.db.QueryRowContext(ctx, `SELECT sum(pgsize) FROM dbstat WHERE name = ?1 OR name IN (SELECT name FROM sqlite_master WHERE tbl_name = ?1 AND type = 'index')`, table).Scan(&bytes) == nil && bytes.Valid {
			t.Bytes = bytes.Int64
		}
		sizes = append(sizes, t)
	}
	return sizes, nil
}

func (e *executor) OutboxDeletePublished(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlOutboxCountPublished, sqlOutboxDeletePublished, "published outbox messages")
}

func (e *executor) AttemptDeleteOld(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlAttemptCountOld, sqlAttemptDeleteOld, "attempt history")
}

func (e *executor) DeliveryDeleteOld(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlDeliveryCountOld, sqlDeliveryDeleteOld, "delivery history")
}

func (e *executor) EffectDeleteDone(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlEffectCountDone, sqlEffectDeleteDone, "recorded effects")
}

// deleteOld counts (DryRun) or deletes up to Limit rows older than OlderThan.
func (e *executor) deleteOld(ctx context.Context, p *driver.InboxDeleteParams, countSQL, deleteSQL, what string) (int, error) {
	if p.DryRun {
		var n int
		if err := e.db.QueryRowContext(ctx, countSQL, p.OlderThan.Microseconds()).Scan(&n); err != nil {
			return 0, translate(fmt.Errorf("error counting %s: %w", what, err))
		}
		return n, nil
	}
	n, err := rowsAffected(e.db.ExecContext(ctx, deleteSQL, p.OlderThan.Microseconds(), p.Limit))
	if err != nil {
		return 0, translate(fmt.Errorf("error deleting %s: %w", what, err))
	}
	return n, nil
}

// OutboxInsertMany inserts each message in turn, in one transaction: SQLite runs in
// process, so a statement per row costs no round trip.
func (e *executor) OutboxInsertMany(ctx context.Context, ps []*driver.OutboxInsertParams) error {
	return e.inTx(ctx, func(q dbtx) error {
		ex := &executor{db: q}
		for _, p := range ps {
			if _, err := ex.OutboxInsert(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *executor) OutboxInsert(ctx context.Context, p *driver.OutboxInsertParams) (int64, error) {
	var id int64
	err := e.db.QueryRowContext(ctx, sqlOutboxInsert,
		p.AggregateType, p.AggregateID, p.EventType, string(p.Payload),
		p.Source.Provider, p.Source.Endpoint, p.Source.EventID, nullString(p.Destination), p.TraceParent,
	).Scan(&id)
	if err != nil {
		return 0, translate(fmt.Errorf("error inserting outbox message: %w", err))
	}
	return id, nil
}

// SetStatementTimeout does nothing and returns nil: SQLite has no statement timeout.
// What bounds processing instead is the context the core gives the transaction, which
// ends with the lease: modernc.org/sqlite interrupts a running statement
// (sqlite3_interrupt) and stops a wait for the write lock when the context ends, and
// database/sql then rolls the transaction back. The wait that PostgreSQL's statement
// timeout bounds most often, for a row another worker holds, happens here at BEGIN
// IMMEDIATE, before this is called, and is bounded by the busy timeout.
func (e *executor) SetStatementTimeout(ctx context.Context, timeout time.Duration) error {
	return nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanReceipt scans the column list shared by the receipt queries; no row is nil.
func scanReceipt(row scanner) (*hookinboxtype.Receipt, error) {
	var r hookinboxtype.Receipt
	var received, available int64
	var processed sql.NullInt64
	err := row.Scan(&r.Provider, &r.Endpoint, &r.EventID, &r.EventType, (*[]byte)(&r.Payload), // NULL: none
		&received, &available, &r.Attempts, &r.MaxAttempts, &r.LastError, &processed, &r.Outcome, &r.State,
		&r.BodySHA256, &r.Conflicts, &r.TraceParent)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.ReceivedAt, r.AvailableAt = fromMicros(received), fromMicros(available)
	r.ProcessedAt = fromNullMicros(processed)
	return &r, nil
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var list []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return list, nil
}

func rowsAffected(res sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us) }

func fromNullMicros(us sql.NullInt64) *time.Time {
	if !us.Valid {
		return nil
	}
	t := fromMicros(us.Int64)
	return &t
}

// jsonList binds a list of names as one JSON array, read in SQL with json_each.
func jsonList[S ~string](names []S) (string, error) {
	if names == nil {
		names = []S{}
	}
	b, err := json.Marshal(names)
	if err != nil {
		return "", fmt.Errorf("error encoding list: %w", err)
	}
	return string(b), nil
}

// nullBytes is b as text, or NULL when empty.
func nullBytes(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	return nullString(string(b))
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
