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

// The operator console's SQL (driver.ConsoleExecutor), PostgreSQL's statements in
// SQLite's dialect: times in unix microseconds, lists as JSON arrays, and an action's
// change and its audit entry as two statements in one transaction.
const (
	sqlConsoleEndpoints = `
WITH recent AS (
    SELECT endpoint, count(*) AS n FROM hookinbox_inbox WHERE received_at >= ?1 GROUP BY endpoint
), done AS (
    SELECT endpoint, count(*) AS n FROM hookinbox_inbox WHERE processed_at >= ?1 GROUP BY endpoint
), open AS (
    SELECT endpoint,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           count(*) FILTER (WHERE state = 'needs_review') AS review,
           min(received_at) FILTER (WHERE state = 'pending') AS oldest
      FROM hookinbox_inbox
     WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL
     GROUP BY endpoint
), outbox AS (
    SELECT source_endpoint AS endpoint, count(*) AS n
      FROM hookinbox_outbox
     WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL
     GROUP BY source_endpoint
), names AS (
    SELECT endpoint FROM recent UNION SELECT endpoint FROM done
    UNION SELECT endpoint FROM open UNION SELECT endpoint FROM outbox
)
SELECT names.endpoint, coalesce(recent.n, 0), coalesce(done.n, 0), coalesce(open.pending, 0),
       coalesce(open.review, 0), coalesce(` + now + ` - open.oldest, 0), coalesce(outbox.n, 0)
  FROM names
  LEFT JOIN recent USING (endpoint)
  LEFT JOIN done USING (endpoint)
  LEFT JOIN open USING (endpoint)
  LEFT JOIN outbox USING (endpoint)
 ORDER BY names.endpoint`

	sqlConsoleSeries = `
SELECT 'r', (received_at - ?1) / ?2, count(*) FROM hookinbox_inbox WHERE received_at >= ?1 GROUP BY 2
UNION ALL
SELECT 'p', (processed_at - ?1) / ?2, count(*) FROM hookinbox_inbox WHERE processed_at >= ?1 GROUP BY 2`

	sqlConsoleReviewGroups = `
SELECT endpoint, coalesce(error_fingerprint, last_error, ''), min(coalesce(last_error, '')),
       count(*), min(received_at), max(received_at)
  FROM hookinbox_inbox
 WHERE state = 'needs_review' AND available_at IS NOT NULL
 GROUP BY 1, 2
 ORDER BY 4 DESC, 1, 2
 LIMIT ?1`

	sqlConsoleFilter = `
       received_at >= ?6 AND received_at < ?7
   AND (received_at, provider, endpoint, event_id) < (?8, ?9, ?10, ?11)
   AND (?1 = '' OR endpoint = ?1)
   AND (?2 = '' OR provider = ?2)
   AND (?3 = '' OR event_type = ?3)
   AND (?4 = '' OR state = ?4)
   AND (?5 = '' OR coalesce(error_fingerprint, last_error, '') = ?5)`

	// What a filter on the pending or needs-review state adds, so that the statement
	// reads the small partial index of unprocessed receipts (whose predicate this
	// repeats) instead of walking the history by time.
	sqlConsoleUnprocessed = ` AND state IN ('pending', 'needs_review') AND available_at IS NOT NULL`

	sqlConsoleReceiptsUnprocessed = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE ` + sqlConsoleFilter + sqlConsoleUnprocessed + `
 ORDER BY received_at DESC, provider DESC, endpoint DESC, event_id DESC
 LIMIT ?12`

	sqlConsoleCountUnprocessed = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_inbox WHERE ` + sqlConsoleFilter + sqlConsoleUnprocessed + ` LIMIT ?12)`

	sqlConsoleReceipts = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE ` + sqlConsoleFilter + `
 ORDER BY received_at DESC, provider DESC, endpoint DESC, event_id DESC
 LIMIT ?12`

	sqlConsoleReceiptsByID = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE (provider, endpoint, event_id) IN (
        SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?2 FROM json_each(?1))
 ORDER BY received_at DESC
 LIMIT ?3`

	sqlConsoleCount = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_inbox WHERE ` + sqlConsoleFilter + ` LIMIT ?12)`

	sqlConsoleAttempts = `
SELECT attempt, started_at, finished_at, worker, coalesce(error, ''), next_retry_at
  FROM hookinbox_attempt
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3
 ORDER BY id DESC
 LIMIT ?4`

	sqlConsoleOutboxBySource = `
SELECT ` + sqlOutboxColumns + `
  FROM hookinbox_outbox
 WHERE source_provider = ?1 AND source_endpoint = ?2 AND source_event_id = ?3
 ORDER BY id DESC
 LIMIT ?4`

	sqlConsoleOutbox = `
SELECT ` + sqlOutboxColumns + `
  FROM hookinbox_outbox
 WHERE id < ?1 AND (?2 = '' OR state = ?2)
 ORDER BY id DESC
 LIMIT ?3`

	sqlConsoleOutboxGet = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE id = ?1`

	sqlConsoleDeliveries = `
SELECT attempt, claim_token, finished_at, coalesce(error, ''), next_retry_at
  FROM hookinbox_delivery
 WHERE outbox_id = ?1
 ORDER BY id DESC
 LIMIT ?2`

	sqlConsoleAudit = `
SELECT id, at, actor, action, target, rows, coalesce(note, '')
  FROM hookinbox_audit
 WHERE id < ?1
 ORDER BY id DESC
 LIMIT ?2`

	sqlConsoleAuditInsert = `
INSERT INTO hookinbox_audit (actor, action, target, rows, note) VALUES (?1, ?2, ?3, ?4, nullif(?5, ''))`

	sqlConsoleSetRetry   = `attempts = 0, available_at = ` + now + `, state = 'pending'`
	sqlConsoleSetResolve = `state = 'discarded'`

	sqlConsoleByKey = `provider = ?1 AND endpoint = ?2 AND event_id = ?3 AND state IN (SELECT value FROM json_each(?4))`

	// Oldest first, so repeating a capped action works through a large group.
	sqlConsoleByFilter = `rowid IN (
        SELECT rowid FROM hookinbox_inbox
         WHERE ` + sqlConsoleFilter + sqlConsoleUnprocessed + ` AND state IN (SELECT value FROM json_each(?13))
         ORDER BY received_at
         LIMIT ?12)`

	sqlConsoleRetryKey      = `UPDATE hookinbox_inbox SET ` + sqlConsoleSetRetry + ` WHERE ` + sqlConsoleByKey
	sqlConsoleResolveKey    = `UPDATE hookinbox_inbox SET ` + sqlConsoleSetResolve + ` WHERE ` + sqlConsoleByKey
	sqlConsoleRetryFilter   = `UPDATE hookinbox_inbox SET ` + sqlConsoleSetRetry + ` WHERE ` + sqlConsoleByFilter
	sqlConsoleResolveFilter = `UPDATE hookinbox_inbox SET ` + sqlConsoleSetResolve + ` WHERE ` + sqlConsoleByFilter

	sqlConsoleRetryOutbox = `UPDATE hookinbox_outbox SET attempts = 0, available_at = ` + now + `, state = 'pending'
 WHERE id = ?1 AND state IN ('pending', 'needs_review')`
)

func filterArgs(f *driver.ReceiptFilter) []any {
	since, until, after := f.Range()
	return []any{f.Endpoint, f.Provider, f.EventType, f.State, f.Fingerprint, since.UnixMicro(), until.UnixMicro(),
		after.ReceivedAt.UnixMicro(), after.Provider, after.Endpoint, after.EventID}
}

func (e *executor) ConsoleEndpoints(ctx context.Context, since time.Time) ([]*driver.EndpointSummary, error) {
	rows, err := e.db.QueryContext(ctx, sqlConsoleEndpoints, since.UnixMicro())
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	list, err := collect(rows, func(row scanner) (*driver.EndpointSummary, error) {
		var s driver.EndpointSummary
		var oldest int64
		err := row.Scan(&s.Endpoint, &s.Received, &s.Processed, &s.Pending, &s.NeedsReview, &oldest, &s.OutboxPending)
		s.OldestPendingAge = max(time.Duration(oldest)*time.Microsecond, 0)
		return &s, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleSeries(ctx context.Context, since time.Time, bucket time.Duration) ([]*driver.SeriesPoint, error) {
	points := driver.SeriesBuckets(since, time.Now(), bucket)
	rows, err := e.db.QueryContext(ctx, sqlConsoleSeries, since.UnixMicro(), bucket.Microseconds())
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	type cell struct {
		kind  string
		n     int
		count int64
	}
	cells, err := collect(rows, func(row scanner) (cell, error) {
		var c cell
		err := row.Scan(&c.kind, &c.n, &c.count)
		return c, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	for _, c := range cells {
		driver.AddToSeries(points, c.kind, c.n, c.count)
	}
	return points, nil
}

func (e *executor) ConsoleReviewGroups(ctx context.Context, limit int) ([]*driver.ReviewGroup, error) {
	rows, err := e.db.QueryContext(ctx, sqlConsoleReviewGroups, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error grouping receipts for review: %w", err))
	}
	list, err := collect(rows, func(row scanner) (*driver.ReviewGroup, error) {
		var g driver.ReviewGroup
		var oldest, newest int64
		err := row.Scan(&g.Endpoint, &g.Fingerprint, &g.Example, &g.Count, &oldest, &newest)
		g.Oldest, g.Newest = fromMicros(oldest), fromMicros(newest)
		return &g, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error grouping receipts for review: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleReceipts(ctx context.Context, f *driver.ReceiptFilter, limit int) ([]*hookinboxtype.Receipt, error) {
	var rows *sql.Rows
	var err error
	if f.EventID != "" {
		pairs := make([][2]string, len(f.Keys))
		for i, k := range f.Keys {
			pairs[i] = [2]string{k.Provider, k.Endpoint}
		}
		var list string
		if list, err = jsonValue(pairs); err != nil {
			return nil, err
		}
		rows, err = e.db.QueryContext(ctx, sqlConsoleReceiptsByID, list, f.EventID, limit)
	} else {
		query := sqlConsoleReceipts
		if f.Unprocessed() {
			query = sqlConsoleReceiptsUnprocessed
		}
		rows, err = e.db.QueryContext(ctx, query, append(filterArgs(f), limit)...)
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error listing receipts: %w", err))
	}
	list, err := collect(rows, scanReceipt)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing receipts: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleCountReceipts(ctx context.Context, f *driver.ReceiptFilter, limit int) (int, error) {
	var n int
	query := sqlConsoleCount
	if f.Unprocessed() {
		query = sqlConsoleCountUnprocessed
	}
	if err := e.db.QueryRowContext(ctx, query, append(filterArgs(f), limit)...).Scan(&n); err != nil {
		return 0, translate(fmt.Errorf("error counting receipts: %w", err))
	}
	return n, nil
}

func (e *executor) ConsoleAttempts(ctx context.Context, k hookinboxtype.Key, limit int) ([]*driver.Attempt, error) {
	rows, err := e.db.QueryContext(ctx, sqlConsoleAttempts, k.Provider, k.Endpoint, k.EventID, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading attempts: %w", err))
	}
	list, err := collect(rows, func(row scanner) (*driver.Attempt, error) {
		var a driver.Attempt
		var started, finished int64
		var next sql.NullInt64
		err := row.Scan(&a.Attempt, &started, &finished, &a.Worker, &a.Error, &next)
		a.StartedAt, a.FinishedAt, a.NextRetryAt = fromMicros(started), fromMicros(finished), fromNullMicros(next)
		return &a, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading attempts: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleOutbox(ctx context.Context, f *driver.OutboxFilter, limit int) ([]*hookinboxtype.OutboxMessage, error) {
	var rows *sql.Rows
	var err error
	if f.Source != nil {
		rows, err = e.db.QueryContext(ctx, sqlConsoleOutboxBySource, f.Source.Provider, f.Source.Endpoint, f.Source.EventID, limit)
	} else {
		before := f.BeforeID
		if before <= 0 {
			before = 1<<63 - 1
		}
		rows, err = e.db.QueryContext(ctx, sqlConsoleOutbox, before, f.State, limit)
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	list, err := collect(rows, scanOutboxMessage)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleOutboxGet(ctx context.Context, id int64) (*hookinboxtype.OutboxMessage, error) {
	rows, err := e.db.QueryContext(ctx, sqlConsoleOutboxGet, id)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading outbox message: %w", err))
	}
	list, err := collect(rows, scanOutboxMessage)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading outbox message: %w", err))
	}
	if len(list) == 0 {
		return nil, nil
	}
	return list[0], nil
}

func (e *executor) ConsoleDeliveries(ctx context.Context, id int64, limit int) ([]*driver.Delivery, error) {
	rows, err := e.db.QueryContext(ctx, sqlConsoleDeliveries, id, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading deliveries: %w", err))
	}
	list, err := collect(rows, func(row scanner) (*driver.Delivery, error) {
		var d driver.Delivery
		var finished int64
		var next sql.NullInt64
		err := row.Scan(&d.Attempt, &d.ClaimToken, &finished, &d.Error, &next)
		d.FinishedAt, d.NextRetryAt = fromMicros(finished), fromNullMicros(next)
		return &d, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading deliveries: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleAudit(ctx context.Context, beforeID int64, limit int) ([]*driver.AuditEntry, error) {
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	rows, err := e.db.QueryContext(ctx, sqlConsoleAudit, beforeID, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the audit log: %w", err))
	}
	list, err := collect(rows, func(row scanner) (*driver.AuditEntry, error) {
		var a driver.AuditEntry
		var at int64
		err := row.Scan(&a.ID, &at, &a.Actor, &a.Action, &a.Target, &a.Rows, &a.Note)
		a.At = fromMicros(at)
		return &a, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the audit log: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleApply(ctx context.Context, a *driver.ConsoleAction) (int, error) {
	if a.Action != driver.ActionRetry && a.Action != driver.ActionResolve && a.Action != driver.ActionRetryOutbox {
		return 0, fmt.Errorf("unknown console action %q", a.Action)
	}
	states := a.FromStates
	if a.Key != nil && len(states) == 0 {
		states = []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview}
	}
	list, err := jsonList(states)
	if err != nil {
		return 0, err
	}
	var query string
	var args []any
	switch {
	case a.Action == driver.ActionRetryOutbox:
		query, args = sqlConsoleRetryOutbox, []any{a.OutboxID}
	case a.Key != nil:
		query, args = sqlConsoleRetryKey, []any{a.Key.Provider, a.Key.Endpoint, a.Key.EventID, list}
		if a.Action == driver.ActionResolve {
			query = sqlConsoleResolveKey
		}
	case a.Filter != nil && len(a.FromStates) > 0 && a.Limit > 0:
		query, args = sqlConsoleRetryFilter, append(filterArgs(a.Filter), a.Limit, list)
		if a.Action == driver.ActionResolve {
			query = sqlConsoleResolveFilter
		}
	default:
		return 0, errors.New("console action needs a key, an outbox id, or a filter with states and a limit")
	}
	var changed int
	err = e.inTx(ctx, func(q dbtx) error {
		n, err := rowsAffected(q.ExecContext(ctx, query, args...))
		if err != nil {
			return err
		}
		changed = n
		_, err = q.ExecContext(ctx, sqlConsoleAuditInsert, a.Actor, a.Action, a.Target, n, a.Note)
		return err
	})
	if err != nil {
		return 0, translate(fmt.Errorf("error applying %s: %w", a.Action, err))
	}
	return changed, nil
}

// jsonValue binds v as one JSON value, read in SQL with json_each.
func jsonValue(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("error encoding list: %w", err)
	}
	return string(b), nil
}
