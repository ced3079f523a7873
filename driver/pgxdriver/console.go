package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The operator console's SQL (driver.ConsoleExecutor). Lists read one index range a
// page: the inbox's received_at b-tree with a key-set cursor, the outbox's primary
// key, the unprocessed partial index for review groups.
const (
	sqlConsoleEndpoints = `
WITH recent AS (
    SELECT endpoint, count(*) AS n FROM hookinbox_inbox WHERE received_at >= $1 GROUP BY endpoint
), done AS (
    SELECT endpoint, count(*) AS n FROM hookinbox_inbox WHERE processed_at >= $1 GROUP BY endpoint
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
       coalesce(open.review, 0), coalesce(extract(epoch FROM now() - open.oldest), 0)::float8,
       coalesce(outbox.n, 0)
  FROM names
  LEFT JOIN recent USING (endpoint)
  LEFT JOIN done USING (endpoint)
  LEFT JOIN open USING (endpoint)
  LEFT JOIN outbox USING (endpoint)
 ORDER BY names.endpoint`

	// Bucket numbers from $1 in steps of $2 seconds.
	sqlConsoleSeries = `
SELECT 'r', floor(extract(epoch FROM received_at - $1) / $2)::int, count(*)
  FROM hookinbox_inbox WHERE received_at >= $1 GROUP BY 2
UNION ALL
SELECT 'p', floor(extract(epoch FROM processed_at - $1) / $2)::int, count(*)
  FROM hookinbox_inbox WHERE processed_at >= $1 GROUP BY 2`

	sqlConsoleReviewGroups = `
SELECT endpoint, coalesce(error_fingerprint, last_error, ''), min(coalesce(last_error, '')),
       count(*), min(received_at), max(received_at)
  FROM hookinbox_inbox
 WHERE state = 'needs_review' AND available_at IS NOT NULL
 GROUP BY 1, 2
 ORDER BY 4 DESC, 1, 2
 LIMIT $1`

	// The filter of the list, the counts and the bulk actions, on $1..$11. The time
	// range and the cursor are always given (open ends as far-away times), so that they
	// are conditions on the received_at index in every plan.
	sqlConsoleFilter = `
       received_at >= $6 AND received_at < $7
   AND (received_at, provider, endpoint, event_id) < ($8, $9, $10, $11)
   AND ($1 = '' OR endpoint = $1)
   AND ($2 = '' OR provider = $2)
   AND ($3 = '' OR event_type = $3)
   AND ($4 = '' OR state = $4)
   AND ($5 = '' OR coalesce(error_fingerprint, last_error, '') = $5)`

	// What a filter on the pending or needs-review state adds, so that the statement
	// reads the small partial index of unprocessed receipts (whose predicate this
	// repeats) instead of walking the history by time.
	sqlConsoleUnprocessed = ` AND state IN ('pending', 'needs_review') AND available_at IS NOT NULL`

	sqlConsoleReceiptsUnprocessed = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE ` + sqlConsoleFilter + sqlConsoleUnprocessed + `
 ORDER BY received_at DESC, provider DESC, endpoint DESC, event_id DESC
 LIMIT $12`

	sqlConsoleCountUnprocessed = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_inbox WHERE ` + sqlConsoleFilter + sqlConsoleUnprocessed + ` LIMIT $12) AS capped`

	sqlConsoleReceipts = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE ` + sqlConsoleFilter + `
 ORDER BY received_at DESC, provider DESC, endpoint DESC, event_id DESC
 LIMIT $12`

	// An exact event id under each configured (provider, endpoint): primary key lookups.
	sqlConsoleReceiptsByID = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE (provider, endpoint, event_id) IN (SELECT k.p, k.e, $3::text FROM unnest($1::text[], $2::text[]) AS k(p, e))
 ORDER BY received_at DESC
 LIMIT $4`

	sqlConsoleCount = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_inbox WHERE ` + sqlConsoleFilter + ` LIMIT $12) AS capped`

	sqlConsoleAttempts = `
SELECT attempt, started_at, finished_at, worker, coalesce(error, ''), next_retry_at
  FROM hookinbox_attempt
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3
 ORDER BY id DESC
 LIMIT $4`

	sqlConsoleOutboxBySource = `
SELECT ` + sqlOutboxColumns + `
  FROM hookinbox_outbox
 WHERE source_provider = $1 AND source_endpoint = $2 AND source_event_id = $3
 ORDER BY id DESC
 LIMIT $4`

	sqlConsoleOutbox = `
SELECT ` + sqlOutboxColumns + `
  FROM hookinbox_outbox
 WHERE id < $1 AND ($2 = '' OR state = $2)
 ORDER BY id DESC
 LIMIT $3`

	sqlConsoleOutboxGet = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE id = $1`

	sqlConsoleDeliveries = `
SELECT attempt, claim_token, finished_at, coalesce(error, ''), next_retry_at
  FROM hookinbox_delivery
 WHERE outbox_id = $1
 ORDER BY id DESC
 LIMIT $2`

	sqlConsoleAudit = `
SELECT id, at, actor, action, target, rows, coalesce(note, '')
  FROM hookinbox_audit
 WHERE id < $1
 ORDER BY id DESC
 LIMIT $2`

	sqlConsoleSetRetry   = `attempts = 0, available_at = now(), state = 'pending'`
	sqlConsoleSetResolve = `state = 'discarded'`

	sqlConsoleByKey = `provider = $1 AND endpoint = $2 AND event_id = $3 AND state = ANY($4)`

	// Oldest first, so repeating a capped action works through a large group. Locked,
	// so that a worker's concurrent update waits or is waited for.
	sqlConsoleByFilter = `(provider, endpoint, event_id) IN (
        SELECT provider, endpoint, event_id FROM hookinbox_inbox
         WHERE ` + sqlConsoleFilter + sqlConsoleUnprocessed + ` AND state = ANY($13)
         ORDER BY received_at
         LIMIT $12
           FOR UPDATE)`

	sqlConsoleOutboxRetry = `UPDATE hookinbox_outbox SET attempts = 0, available_at = now(), state = 'pending'
 WHERE id = $1 AND state IN ('pending', 'needs_review')`
)

// consolePlan runs the console's statements as unnamed statements, planned with each
// request's values: a cached generic plan cannot know which of a list's filters are
// empty, and on a million receipts it read the whole received_at index and sorted it
// (1.7 s) where the plan for the actual values reads one page of it (0.1 ms).
const consolePlan = pgx.QueryExecModeExec

func (e *executor) consoleQuery(ctx context.Context, query string, args ...any) (pgx.Rows, error) {
	return e.db.Query(ctx, query, append([]any{consolePlan}, args...)...)
}

func (e *executor) consoleQueryRow(ctx context.Context, query string, args ...any) pgx.Row {
	return e.db.QueryRow(ctx, query, append([]any{consolePlan}, args...)...)
}

// audited makes update (which takes params parameters) an action that writes its
// audit entry in the same statement, with the next four parameters (actor, action,
// target, note): one never commits without the other, and the entry's rows is what
// the change counted.
func audited(update string, params int) string {
	return fmt.Sprintf(`
WITH changed AS (%s
RETURNING 1)
INSERT INTO hookinbox_audit (actor, action, target, rows, note)
SELECT $%d, $%d, $%d, count(*), nullif($%d, '') FROM changed
RETURNING rows`, update, params+1, params+2, params+3, params+4)
}

// The four receipt actions, built once from the constants above.
var (
	sqlConsoleRetryKey      = audited(`UPDATE hookinbox_inbox SET `+sqlConsoleSetRetry+` WHERE `+sqlConsoleByKey, 4)
	sqlConsoleResolveKey    = audited(`UPDATE hookinbox_inbox SET `+sqlConsoleSetResolve+` WHERE `+sqlConsoleByKey, 4)
	sqlConsoleRetryFilter   = audited(`UPDATE hookinbox_inbox SET `+sqlConsoleSetRetry+` WHERE `+sqlConsoleByFilter, 13)
	sqlConsoleResolveFilter = audited(`UPDATE hookinbox_inbox SET `+sqlConsoleSetResolve+` WHERE `+sqlConsoleByFilter, 13)
	sqlConsoleRetryOutbox   = audited(sqlConsoleOutboxRetry, 1)

	_ driver.ConsoleExecutor = (*executor)(nil)
)

func filterArgs(f *driver.ReceiptFilter) []any {
	since, until, after := f.Range()
	return []any{f.Endpoint, f.Provider, f.EventType, f.State, f.Fingerprint, since, until,
		after.ReceivedAt, after.Provider, after.Endpoint, after.EventID}
}

func (e *executor) ConsoleEndpoints(ctx context.Context, since time.Time) ([]*driver.EndpointSummary, error) {
	rows, err := e.consoleQuery(ctx, sqlConsoleEndpoints, since)
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*driver.EndpointSummary, error) {
		var s driver.EndpointSummary
		var oldest float64
		err := row.Scan(&s.Endpoint, &s.Received, &s.Processed, &s.Pending, &s.NeedsReview, &oldest, &s.OutboxPending)
		s.OldestPendingAge = time.Duration(oldest * float64(time.Second))
		return &s, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleSeries(ctx context.Context, since time.Time, bucket time.Duration) ([]*driver.SeriesPoint, error) {
	points := driver.SeriesBuckets(since, time.Now(), bucket)
	rows, err := e.consoleQuery(ctx, sqlConsoleSeries, since, bucket.Seconds())
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	var kind string
	var n int
	var count int64
	_, err = pgx.ForEachRow(rows, []any{&kind, &n, &count}, func() error {
		driver.AddToSeries(points, kind, n, count)
		return nil
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	return points, nil
}

func (e *executor) ConsoleReviewGroups(ctx context.Context, limit int) ([]*driver.ReviewGroup, error) {
	rows, err := e.consoleQuery(ctx, sqlConsoleReviewGroups, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error grouping receipts for review: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*driver.ReviewGroup, error) {
		var g driver.ReviewGroup
		err := row.Scan(&g.Endpoint, &g.Fingerprint, &g.Example, &g.Count, &g.Oldest, &g.Newest)
		return &g, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error grouping receipts for review: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleReceipts(ctx context.Context, f *driver.ReceiptFilter, limit int) ([]*hookinboxtype.Receipt, error) {
	var rows pgx.Rows
	var err error
	if f.EventID != "" {
		providers, endpoints, _ := keyColumns(f.Keys)
		rows, err = e.consoleQuery(ctx, sqlConsoleReceiptsByID, providers, endpoints, f.EventID, limit)
	} else {
		query := sqlConsoleReceipts
		if f.Unprocessed() {
			query = sqlConsoleReceiptsUnprocessed
		}
		rows, err = e.consoleQuery(ctx, query, append(filterArgs(f), limit)...)
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error listing receipts: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*hookinboxtype.Receipt, error) { return scanReceipt(row) })
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
	if err := e.consoleQueryRow(ctx, query, append(filterArgs(f), limit)...).Scan(&n); err != nil {
		return 0, translate(fmt.Errorf("error counting receipts: %w", err))
	}
	return n, nil
}

func (e *executor) ConsoleAttempts(ctx context.Context, k hookinboxtype.Key, limit int) ([]*driver.Attempt, error) {
	rows, err := e.consoleQuery(ctx, sqlConsoleAttempts, k.Provider, k.Endpoint, k.EventID, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading attempts: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*driver.Attempt, error) {
		var a driver.Attempt
		err := row.Scan(&a.Attempt, &a.StartedAt, &a.FinishedAt, &a.Worker, &a.Error, &a.NextRetryAt)
		return &a, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading attempts: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleOutbox(ctx context.Context, f *driver.OutboxFilter, limit int) ([]*hookinboxtype.OutboxMessage, error) {
	var rows pgx.Rows
	var err error
	if f.Source != nil {
		rows, err = e.consoleQuery(ctx, sqlConsoleOutboxBySource, f.Source.Provider, f.Source.Endpoint, f.Source.EventID, limit)
	} else {
		before := f.BeforeID
		if before <= 0 {
			before = 1<<63 - 1
		}
		rows, err = e.consoleQuery(ctx, sqlConsoleOutbox, before, f.State, limit)
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	list, err := pgx.CollectRows(rows, scanOutboxMessage)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleOutboxGet(ctx context.Context, id int64) (*hookinboxtype.OutboxMessage, error) {
	rows, err := e.consoleQuery(ctx, sqlConsoleOutboxGet, id)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading outbox message: %w", err))
	}
	list, err := pgx.CollectRows(rows, scanOutboxMessage)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading outbox message: %w", err))
	}
	if len(list) == 0 {
		return nil, nil
	}
	return list[0], nil
}

func (e *executor) ConsoleDeliveries(ctx context.Context, id int64, limit int) ([]*driver.Delivery, error) {
	rows, err := e.consoleQuery(ctx, sqlConsoleDeliveries, id, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading deliveries: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*driver.Delivery, error) {
		var d driver.Delivery
		err := row.Scan(&d.Attempt, &d.ClaimToken, &d.FinishedAt, &d.Error, &d.NextRetryAt)
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
	rows, err := e.consoleQuery(ctx, sqlConsoleAudit, beforeID, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the audit log: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*driver.AuditEntry, error) {
		var a driver.AuditEntry
		err := row.Scan(&a.ID, &a.At, &a.Actor, &a.Action, &a.Target, &a.Rows, &a.Note)
		return &a, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the audit log: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleApply(ctx context.Context, a *driver.ConsoleAction) (int, error) {
	var query string
	var args []any
	switch {
	case a.Action == driver.ActionRetryOutbox:
		query, args = sqlConsoleRetryOutbox, []any{a.OutboxID}
	case a.Key != nil:
		states := a.FromStates
		if len(states) == 0 {
			states = []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview}
		}
		query, args = sqlConsoleRetryKey, []any{a.Key.Provider, a.Key.Endpoint, a.Key.EventID, stateNames(states)}
		if a.Action == driver.ActionResolve {
			query = sqlConsoleResolveKey
		}
	case a.Filter != nil && len(a.FromStates) > 0 && a.Limit > 0:
		query, args = sqlConsoleRetryFilter, append(filterArgs(a.Filter), a.Limit, stateNames(a.FromStates))
		if a.Action == driver.ActionResolve {
			query = sqlConsoleResolveFilter
		}
	default:
		return 0, errors.New("console action needs a key, an outbox id, or a filter with states and a limit")
	}
	if a.Action != driver.ActionRetry && a.Action != driver.ActionResolve && a.Action != driver.ActionRetryOutbox {
		return 0, fmt.Errorf("unknown console action %q", a.Action)
	}
	args = append(args, a.Actor, a.Action, a.Target, a.Note)
	var n int
	if err := e.consoleQueryRow(ctx, query, args...).Scan(&n); err != nil {
		return 0, translate(fmt.Errorf("error applying %s: %w", a.Action, err))
	}
	return n, nil
}

// stateNames is states as a text[] parameter: pgx encodes a slice of a named string
// type only as a slice of string.
func stateNames(states []hookinboxtype.State) []string {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return names
}
