package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The operator console's SQL (driver.ConsoleExecutor), PostgreSQL's statements in
// SQLite's dialect: times in unix microseconds, lists as JSON arrays, and an action's
// change and its audit entry as two statements in one transaction.
const (
	sqlConsoleRolledThrough = `SELECT through FROM hookinbox_rollup WHERE name = 'minute'`

	// Where the roll-up's minutes end, and when and how large the backlog it last
	// counted was.
	sqlConsoleRolled = `
SELECT (SELECT through FROM hookinbox_rollup WHERE name = 'minute'),
       (SELECT max(counted_at) FROM hookinbox_backlog),
       (SELECT coalesce(sum(pending + needs_review + outbox_pending + outbox_needs_review), 0) FROM hookinbox_backlog)`

	// What waits per endpoint, counted from the unprocessed partial indexes alone (they
	// carry the endpoint since migration 008).
	sqlConsoleOpenLive = `
open AS (
    SELECT endpoint,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           count(*) FILTER (WHERE state = 'needs_review') AS review,
           min(received_at) FILTER (WHERE state = 'pending') AS oldest
      FROM hookinbox_inbox
     WHERE state IN ('pending', 'needs_review')
     GROUP BY endpoint
), outbox AS (
    SELECT source_endpoint AS endpoint,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           count(*) FILTER (WHERE state = 'needs_review') AS review
      FROM hookinbox_outbox
     WHERE state IN ('pending', 'needs_review')
     GROUP BY source_endpoint
)`

	// What waits per endpoint as the last roll-up counted it.
	sqlConsoleOpenCounted = `
open AS (
    SELECT endpoint, pending, needs_review AS review, oldest_pending AS oldest FROM hookinbox_backlog
), outbox AS (
    SELECT endpoint, outbox_pending AS pending, outbox_needs_review AS review FROM hookinbox_backlog
)`

	// ?1 is the window's start, ?2 where the roll-up's minutes end and the live counts
	// start, ?3 when the backlog was counted (NULL: live).
	sqlConsoleEndpointsHead = `
WITH rolled AS (
    SELECT endpoint, sum(received) AS received, sum(processed) AS processed
      FROM hookinbox_minute WHERE minute >= ?1 AND minute < ?2 GROUP BY endpoint
), recent AS (
    SELECT endpoint, count(*) AS n FROM hookinbox_inbox WHERE received_at >= ?2 GROUP BY endpoint
), done AS (
    SELECT endpoint, count(*) AS n FROM hookinbox_inbox WHERE processed_at >= ?2 GROUP BY endpoint
), `
	sqlConsoleEndpointsTail = `, names AS (
    SELECT endpoint FROM rolled UNION SELECT endpoint FROM recent UNION SELECT endpoint FROM done
    UNION SELECT endpoint FROM open UNION SELECT endpoint FROM outbox
    UNION SELECT endpoint FROM hookinbox_endpoint
)
SELECT names.endpoint, coalesce(rolled.received, 0) + coalesce(recent.n, 0),
       coalesce(rolled.processed, 0) + coalesce(done.n, 0), coalesce(open.pending, 0),
       coalesce(open.review, 0), coalesce(` + now + ` - open.oldest, 0), coalesce(outbox.pending, 0),
       coalesce(outbox.review, 0), coalesce(e.paused, 0), ?3
  FROM names
  LEFT JOIN rolled USING (endpoint)
  LEFT JOIN recent USING (endpoint)
  LEFT JOIN done USING (endpoint)
  LEFT JOIN open USING (endpoint)
  LEFT JOIN outbox USING (endpoint)
  LEFT JOIN hookinbox_endpoint AS e USING (endpoint)
 ORDER BY names.endpoint`

	sqlConsoleEndpoints        = sqlConsoleEndpointsHead + sqlConsoleOpenLive + sqlConsoleEndpointsTail
	sqlConsoleEndpointsCounted = sqlConsoleEndpointsHead + sqlConsoleOpenCounted + sqlConsoleEndpointsTail

	// The roll-up's count of the backlog, replacing the last one. SQLite has no FULL
	// JOIN before 3.39's; the endpoints of either side, then both counts.
	sqlConsoleBacklogClear = `DELETE FROM hookinbox_backlog`
	sqlConsoleBacklog      = `
WITH ` + sqlConsoleOpenLive + `, names AS (SELECT endpoint FROM open UNION SELECT endpoint FROM outbox)
INSERT INTO hookinbox_backlog (endpoint, pending, needs_review, oldest_pending, outbox_pending, outbox_needs_review)
SELECT names.endpoint, coalesce(open.pending, 0), coalesce(open.review, 0), open.oldest,
       coalesce(outbox.pending, 0), coalesce(outbox.review, 0)
  FROM names LEFT JOIN open USING (endpoint) LEFT JOIN outbox USING (endpoint)`

	// Buckets of ?2 microseconds from ?1; the roll-up's minutes before ?3, live counts
	// from ?3.
	sqlConsoleSeries = `
SELECT (minute - ?1) / ?2, sum(received), sum(processed), sum(failed), sum(exhausted)
  FROM hookinbox_minute WHERE minute >= ?1 AND minute < ?3 GROUP BY 1
UNION ALL
SELECT (received_at - ?1) / ?2, count(*), 0, 0, 0 FROM hookinbox_inbox WHERE received_at >= ?3 GROUP BY 1
UNION ALL
SELECT (processed_at - ?1) / ?2, 0, count(*), 0, 0 FROM hookinbox_inbox WHERE processed_at >= ?3 GROUP BY 1
UNION ALL
SELECT (finished_at - ?1) / ?2, 0, 0, count(*) FILTER (WHERE error IS NOT NULL),
       count(*) FILTER (WHERE error IS NOT NULL AND next_retry_at IS NULL)
  FROM hookinbox_attempt WHERE finished_at >= ?3 GROUP BY 1`

	// The minutes of [?1, ?2), each counted whole. The WHERE true keeps SQLite from
	// reading ON CONFLICT as a join's condition.
	sqlConsoleRollup = `
INSERT INTO hookinbox_minute (minute, endpoint, received, processed, failed, exhausted)
SELECT minute, endpoint, r, p, f, x
  FROM (SELECT minute, endpoint, sum(r) AS r, sum(p) AS p, sum(f) AS f, sum(x) AS x
          FROM (SELECT received_at / 60000000 * 60000000 AS minute, endpoint, count(*) AS r, 0 AS p, 0 AS f, 0 AS x
                  FROM hookinbox_inbox WHERE received_at >= ?1 AND received_at < ?2 GROUP BY 1, 2
                UNION ALL
                SELECT processed_at / 60000000 * 60000000, endpoint, 0, count(*), 0, 0
                  FROM hookinbox_inbox WHERE processed_at >= ?1 AND processed_at < ?2 GROUP BY 1, 2
                UNION ALL
                SELECT finished_at / 60000000 * 60000000, endpoint, 0, 0, count(*) FILTER (WHERE error IS NOT NULL),
                       count(*) FILTER (WHERE error IS NOT NULL AND next_retry_at IS NULL)
                  FROM hookinbox_attempt WHERE finished_at >= ?1 AND finished_at < ?2 GROUP BY 1, 2)
         GROUP BY 1, 2)
 WHERE true
ON CONFLICT (minute, endpoint) DO UPDATE
   SET received = excluded.received, processed = excluded.processed,
       failed = excluded.failed, exhausted = excluded.exhausted`

	sqlConsoleRollupMark = `
INSERT INTO hookinbox_rollup (name, through) VALUES ('minute', ?1)
ON CONFLICT (name) DO UPDATE SET through = max(through, excluded.through)`

	sqlConsoleRollupTrim = `DELETE FROM hookinbox_minute WHERE minute < ?1`

	// Each group's newest member, for its error and payload, by rowid.
	sqlConsoleReviewGroups = `
SELECT g.endpoint, g.fp, coalesce(e.last_error, ''), e.payload, g.n, g.oldest, g.newest
  FROM (SELECT endpoint, coalesce(error_fingerprint, last_error, '') AS fp, count(*) AS n,
               min(received_at) AS oldest, max(received_at) AS newest
          FROM hookinbox_inbox
         WHERE state IN ('pending', 'needs_review') AND state = 'needs_review'
         GROUP BY 1, 2
         ORDER BY 3 DESC, 1, 2
         LIMIT ?1) AS g
  JOIN hookinbox_inbox AS e
    ON e.rowid = (SELECT i.rowid FROM hookinbox_inbox AS i
                   WHERE i.received_at = g.newest AND i.endpoint = g.endpoint AND i.state = 'needs_review'
                     AND coalesce(i.error_fingerprint, i.last_error, '') = g.fp
                   LIMIT 1)
 ORDER BY g.n DESC, g.endpoint, g.fp`

	sqlConsoleOutboxReviewGroups = `
SELECT '', g.destination, g.fp, coalesce(e.last_error, ''), e.payload, g.n, g.oldest, g.newest
  FROM (SELECT coalesce(destination, '') AS destination, coalesce(error_fingerprint, last_error, '') AS fp,
               count(*) AS n, min(created_at) AS oldest, max(created_at) AS newest, max(id) AS example
          FROM hookinbox_outbox
         WHERE state IN ('pending', 'needs_review') AND state = 'needs_review'
         GROUP BY 1, 2
         ORDER BY 3 DESC, 1, 2
         LIMIT ?1) AS g
  JOIN hookinbox_outbox AS e ON e.id = g.example
 ORDER BY g.n DESC, g.destination, g.fp`

	sqlConsoleFilter = `
       received_at >= ?6 AND received_at < ?7
   AND (?1 = '' OR endpoint = ?1)
   AND (?2 = '' OR provider = ?2)
   AND (?3 = '' OR event_type = ?3)
   AND (?4 = '' OR state = ?4)
   AND (?5 = '' OR coalesce(error_fingerprint, last_error, '') = ?5)
   AND (?12 = '' OR instr(lower(payload), lower(?12)) > 0)`

	sqlConsoleOlder = `
   AND (received_at, provider, endpoint, event_id) < (?8, ?9, ?10, ?11)`
	sqlConsoleNewer = `
   AND (received_at, provider, endpoint, event_id) > (?8, ?9, ?10, ?11)`

	// What a filter on the pending or needs-review state adds, so that the statement
	// reads the small partial index of unprocessed receipts (whose predicate this
	// repeats) instead of walking the history by time.
	sqlConsoleUnprocessed = ` AND state IN ('pending', 'needs_review') AND available_at IS NOT NULL`

	sqlConsoleNewestFirst = `
 ORDER BY received_at DESC, provider DESC, endpoint DESC, event_id DESC
 LIMIT ?13`
	sqlConsoleOldestFirst = `
 ORDER BY received_at, provider, endpoint, event_id
 LIMIT ?13`

	sqlConsoleReceipts = `SELECT ` + sqlReceiptColumns + ` FROM hookinbox_inbox WHERE ` +
		sqlConsoleFilter + sqlConsoleOlder + sqlConsoleNewestFirst
	sqlConsoleReceiptsNewer = `SELECT ` + sqlReceiptColumns + ` FROM hookinbox_inbox WHERE ` +
		sqlConsoleFilter + sqlConsoleNewer + sqlConsoleOldestFirst
	sqlConsoleReceiptsUnprocessed = `SELECT ` + sqlReceiptColumns + ` FROM hookinbox_inbox WHERE ` +
		sqlConsoleFilter + sqlConsoleOlder + sqlConsoleUnprocessed + sqlConsoleNewestFirst
	sqlConsoleReceiptsUnprocessedNewer = `SELECT ` + sqlReceiptColumns + ` FROM hookinbox_inbox WHERE ` +
		sqlConsoleFilter + sqlConsoleNewer + sqlConsoleUnprocessed + sqlConsoleOldestFirst

	sqlConsoleCount = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_inbox WHERE ` + sqlConsoleFilter + sqlConsoleOlder + ` LIMIT ?13)`
	sqlConsoleCountUnprocessed = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_inbox WHERE ` + sqlConsoleFilter + sqlConsoleOlder +
		sqlConsoleUnprocessed + ` LIMIT ?13)`

	sqlConsoleReceiptsByID = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE (provider, endpoint, event_id) IN (
        SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?2 FROM json_each(?1))
 ORDER BY received_at DESC
 LIMIT ?3`

	sqlConsoleReceiptDetail = `
SELECT request, conflict_sha256, conflict_at, coalesce(origin, '')
  FROM hookinbox_inbox
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3`

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

	sqlConsoleOutboxFilter = `
       (?1 = '' OR state = ?1)
   AND (?2 IS NULL OR coalesce(destination, '') = ?2)
   AND (?3 = '' OR source_endpoint = ?3)
   AND (?4 = '' OR event_type = ?4)
   AND (?5 = '' OR coalesce(error_fingerprint, last_error, '') = ?5)
   AND created_at >= ?6 AND created_at < ?7`
	sqlConsoleUnpublished = ` AND state IN ('pending', 'needs_review')`

	sqlConsoleOutbox = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter + `
   AND id < ?8 ORDER BY id DESC LIMIT ?9`
	sqlConsoleOutboxNewer = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter + `
   AND id > ?8 ORDER BY id LIMIT ?9`
	sqlConsoleOutboxUnpublished = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter +
		sqlConsoleUnpublished + ` AND id < ?8 ORDER BY id DESC LIMIT ?9`
	sqlConsoleOutboxUnpublishedNewer = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter +
		sqlConsoleUnpublished + ` AND id > ?8 ORDER BY id LIMIT ?9`

	sqlConsoleOutboxCount = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter + ` AND id < ?8 LIMIT ?9)`
	sqlConsoleOutboxCountUnpublished = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter + sqlConsoleUnpublished +
		` AND id < ?8 LIMIT ?9)`

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

	sqlConsoleAuditNewer = `
SELECT id, at, actor, action, target, rows, coalesce(note, '')
  FROM hookinbox_audit
 WHERE id > ?1
 ORDER BY id
 LIMIT ?2`

	sqlConsoleAuditInsert = `
INSERT INTO hookinbox_audit (actor, action, target, rows, note) VALUES (?1, ?2, ?3, ?4, nullif(?5, ''))`

	sqlConsoleEndpointStates = `
SELECT endpoint, paused, changed_at, changed_by FROM hookinbox_endpoint ORDER BY endpoint`

	sqlConsoleSeedEndpoint = `
INSERT INTO hookinbox_endpoint (endpoint, paused, changed_by) VALUES (?1, ?2, ?3)
ON CONFLICT (endpoint) DO NOTHING`

	sqlConsoleSetRetry   = `attempts = 0, available_at = ` + now + `, state = 'pending'`
	sqlConsoleSetResolve = `state = 'discarded'`
	// A redelivered message keeps its id, so its idempotency key.
	sqlConsoleSetRedeliver = `attempts = 0, available_at = ` + now + `, state = 'pending', published_at = NULL,
       last_error = NULL, error_fingerprint = NULL`

	sqlConsoleByKey = `provider = ?1 AND endpoint = ?2 AND event_id = ?3 AND state IN (SELECT value FROM json_each(?4))`

	// Oldest first, so repeating a capped action works through a large group.
	sqlConsoleByFilter = `rowid IN (
        SELECT rowid FROM hookinbox_inbox
         WHERE ` + sqlConsoleFilter + sqlConsoleOlder + sqlConsoleUnprocessed + ` AND state IN (SELECT value FROM json_each(?14))
         ORDER BY received_at
         LIMIT ?13)`

	sqlConsoleOutboxByID = `id = ?1 AND state IN (SELECT value FROM json_each(?2))`

	sqlConsoleOutboxByFilter = `id IN (
        SELECT id FROM hookinbox_outbox
         WHERE ` + sqlConsoleOutboxFilter + ` AND id < ?8 AND state IN (SELECT value FROM json_each(?10))
         ORDER BY id
         LIMIT ?9)`

	sqlConsolePause = `
INSERT INTO hookinbox_endpoint (endpoint, paused, changed_by) VALUES (?1, 1, ?2)
ON CONFLICT (endpoint) DO UPDATE SET paused = 1, changed_at = ` + now + `, changed_by = excluded.changed_by
 WHERE NOT hookinbox_endpoint.paused`
	sqlConsoleParkInbox = `
UPDATE hookinbox_inbox SET available_at = ?2
 WHERE state IN ('pending', 'needs_review') AND state = 'pending' AND available_at <= ` + now + ` AND endpoint = ?1`
	sqlConsoleParkOutbox = `
UPDATE hookinbox_outbox SET available_at = ?2
 WHERE state IN ('pending', 'needs_review') AND state = 'pending' AND available_at <= ` + now + ` AND source_endpoint = ?1`

	sqlConsoleResume = `
UPDATE hookinbox_endpoint SET paused = 0, changed_at = ` + now + `, changed_by = ?2
 WHERE endpoint = ?1 AND paused`
	sqlConsoleUnparkInbox = `
UPDATE hookinbox_inbox SET available_at = ` + now + `
 WHERE state IN ('pending', 'needs_review') AND state = 'pending' AND available_at = ?2 AND endpoint = ?1`
	sqlConsoleUnparkOutbox = `
UPDATE hookinbox_outbox SET available_at = ` + now + `
 WHERE state IN ('pending', 'needs_review') AND state = 'pending' AND available_at = ?2 AND source_endpoint = ?1`
)

// consoleUpdate is an action's statements: by one row's key (or id) and by a filter.
type consoleUpdate struct {
	byKey, byFilter string
}

var consoleUpdates = map[string]consoleUpdate{
	driver.ActionRetry: {
		byKey:    `UPDATE hookinbox_inbox SET ` + sqlConsoleSetRetry + ` WHERE ` + sqlConsoleByKey,
		byFilter: `UPDATE hookinbox_inbox SET ` + sqlConsoleSetRetry + ` WHERE ` + sqlConsoleByFilter,
	},
	driver.ActionResolve: {
		byKey:    `UPDATE hookinbox_inbox SET ` + sqlConsoleSetResolve + ` WHERE ` + sqlConsoleByKey,
		byFilter: `UPDATE hookinbox_inbox SET ` + sqlConsoleSetResolve + ` WHERE ` + sqlConsoleByFilter,
	},
	driver.ActionRetryOutbox: {
		byKey:    `UPDATE hookinbox_outbox SET ` + sqlConsoleSetRetry + ` WHERE ` + sqlConsoleOutboxByID,
		byFilter: `UPDATE hookinbox_outbox SET ` + sqlConsoleSetRetry + ` WHERE ` + sqlConsoleOutboxByFilter,
	},
	driver.ActionResolveOutbox: {
		byKey:    `UPDATE hookinbox_outbox SET ` + sqlConsoleSetResolve + ` WHERE ` + sqlConsoleOutboxByID,
		byFilter: `UPDATE hookinbox_outbox SET ` + sqlConsoleSetResolve + ` WHERE ` + sqlConsoleOutboxByFilter,
	},
	driver.ActionRedeliver: {
		byKey:    `UPDATE hookinbox_outbox SET ` + sqlConsoleSetRedeliver + ` WHERE ` + sqlConsoleOutboxByID,
		byFilter: `UPDATE hookinbox_outbox SET ` + sqlConsoleSetRedeliver + ` WHERE ` + sqlConsoleOutboxByFilter,
	},
}

func filterArgs(f *driver.ReceiptFilter) []any {
	since, until, cursor, _ := f.Range()
	return []any{f.Endpoint, f.Provider, f.EventType, f.State, f.Fingerprint, since.UnixMicro(), until.UnixMicro(),
		cursor.ReceivedAt.UnixMicro(), cursor.Provider, cursor.Endpoint, cursor.EventID, f.Search}
}

func outboxFilterArgs(f *driver.OutboxFilter) []any {
	since, until := f.Range()
	bound := f.BeforeID
	if f.AfterID > 0 {
		bound = f.AfterID
	} else if bound <= 0 {
		bound = 1<<63 - 1
	}
	return []any{f.State, f.Destination, f.Endpoint, f.EventType, f.Fingerprint, since.UnixMicro(), until.UnixMicro(), bound}
}

// rolledThrough returns where the roll-up's minutes end; zero when there are none.
func rolledThrough(ctx context.Context, q dbtx) (time.Time, error) {
	var us int64
	err := q.QueryRowContext(ctx, sqlConsoleRolledThrough).Scan(&us)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return fromMicros(us), nil
}

// rolled is where the roll-up's minutes end (zero when there are none), and when the
// backlog it last counted was counted (zero: never) and how large it was.
type rolled struct {
	through, countedAt time.Time
	backlog            int64
}

func (e *executor) rolled(ctx context.Context) (rolled, error) {
	var r rolled
	var through, counted sql.NullInt64
	if err := e.db.QueryRowContext(ctx, sqlConsoleRolled).Scan(&through, &counted, &r.backlog); err != nil {
		return r, err
	}
	if through.Valid {
		r.through = fromMicros(through.Int64)
	}
	if counted.Valid {
		r.countedAt = fromMicros(counted.Int64)
	}
	return r, nil
}

func (e *executor) ConsoleEndpoints(ctx context.Context, since time.Time) ([]*driver.EndpointSummary, error) {
	r, err := e.rolled(ctx)
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	query, counted := sqlConsoleEndpoints, (*int64)(nil)
	if driver.CountedBacklog(r.countedAt, r.backlog, time.Now()) {
		at := r.countedAt.UnixMicro()
		query, counted = sqlConsoleEndpointsCounted, &at
	}
	rows, err := e.db.QueryContext(ctx, query, since.UnixMicro(), driver.LiveFrom(since, r.through).UnixMicro(), counted)
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	list, err := collect(rows, func(row scanner) (*driver.EndpointSummary, error) {
		var s driver.EndpointSummary
		var oldest int64
		var at sql.NullInt64
		err := row.Scan(&s.Endpoint, &s.Received, &s.Processed, &s.Pending, &s.NeedsReview, &oldest,
			&s.OutboxPending, &s.OutboxNeedsReview, &s.Paused, &at)
		s.OldestPendingAge = max(time.Duration(oldest)*time.Microsecond, 0)
		if at.Valid {
			s.CountedAt = fromMicros(at.Int64)
		}
		return &s, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleSeries(ctx context.Context, since time.Time, bucket time.Duration) ([]*driver.SeriesPoint, error) {
	points := driver.SeriesBuckets(since, time.Now(), bucket)
	ru, err := e.rolled(ctx)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	rows, err := e.db.QueryContext(ctx, sqlConsoleSeries, since.UnixMicro(), bucket.Microseconds(),
		driver.LiveFrom(since, ru.through).UnixMicro())
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	type cell struct {
		n          int
		r, p, f, x int64
	}
	cells, err := collect(rows, func(row scanner) (cell, error) {
		var c cell
		err := row.Scan(&c.n, &c.r, &c.p, &c.f, &c.x)
		return c, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	for _, c := range cells {
		driver.AddToSeries(points, c.n, c.r, c.p, c.f, c.x)
	}
	return points, nil
}

func (e *executor) ConsoleRollup(ctx context.Context, through time.Time) (int, error) {
	through = through.Truncate(time.Minute)
	var written int
	err := e.inTx(ctx, func(q dbtx) error {
		last, err := rolledThrough(ctx, q)
		if err != nil {
			return err
		}
		from := driver.RollupFrom(last, through)
		if !from.Before(through) {
			return countBacklog(ctx, q)
		}
		if written, err = rowsAffected(q.ExecContext(ctx, sqlConsoleRollup, from.UnixMicro(), through.UnixMicro())); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, sqlConsoleRollupMark, through.UnixMicro()); err != nil {
			return err
		}
		if _, err = q.ExecContext(ctx, sqlConsoleRollupTrim, through.Add(-driver.RollupKeep).UnixMicro()); err != nil {
			return err
		}
		return countBacklog(ctx, q)
	})
	if err != nil {
		return 0, translate(fmt.Errorf("error rolling up the overview's counts: %w", err))
	}
	return written, nil
}

// countBacklog replaces the roll-up's count of what waits per endpoint.
func countBacklog(ctx context.Context, q dbtx) error {
	if _, err := q.ExecContext(ctx, sqlConsoleBacklogClear); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, sqlConsoleBacklog)
	return err
}

func (e *executor) ConsoleReviewGroups(ctx context.Context, limit int) ([]*driver.ReviewGroup, error) {
	return e.reviewGroups(ctx, sqlConsoleReviewGroups, limit, "receipts")
}

func (e *executor) ConsoleOutboxReviewGroups(ctx context.Context, limit int) ([]*driver.ReviewGroup, error) {
	return e.reviewGroups(ctx, sqlConsoleOutboxReviewGroups, limit, "outbox messages")
}

// reviewGroups runs one of the review groups' statements; the outbox's has the
// destination after the endpoint.
func (e *executor) reviewGroups(ctx context.Context, query string, limit int, what string) ([]*driver.ReviewGroup, error) {
	rows, err := e.db.QueryContext(ctx, query, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error grouping %s for review: %w", what, err))
	}
	list, err := collect(rows, func(row scanner) (*driver.ReviewGroup, error) {
		var g driver.ReviewGroup
		var oldest, newest int64
		var payload sql.NullString
		dest := []any{&g.Endpoint, &g.Fingerprint, &g.Example, &payload, &g.Count, &oldest, &newest}
		if query == sqlConsoleOutboxReviewGroups {
			dest = slices.Insert(dest, 1, any(&g.Destination))
		}
		err := row.Scan(dest...)
		g.Oldest, g.Newest = fromMicros(oldest), fromMicros(newest)
		if payload.Valid {
			g.ExamplePayload = json.RawMessage(payload.String)
		}
		return &g, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error grouping %s for review: %w", what, err))
	}
	return list, nil
}

func (e *executor) ConsoleReceipts(ctx context.Context, f *driver.ReceiptFilter, limit int) ([]*hookinboxtype.Receipt, error) {
	var rows *sql.Rows
	var err error
	_, _, _, newer := f.Range()
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
		switch {
		case f.Unprocessed() && newer:
			query = sqlConsoleReceiptsUnprocessedNewer
		case f.Unprocessed():
			query = sqlConsoleReceiptsUnprocessed
		case newer:
			query = sqlConsoleReceiptsNewer
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
	if newer && f.EventID == "" {
		slices.Reverse(list)
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

func (e *executor) ConsoleReceiptDetail(ctx context.Context, k hookinboxtype.Key) (*driver.ReceiptDetail, error) {
	var d driver.ReceiptDetail
	var request sql.NullString
	var conflictAt sql.NullInt64
	err := e.db.QueryRowContext(ctx, sqlConsoleReceiptDetail, k.Provider, k.Endpoint, k.EventID).
		Scan(&request, &d.ConflictSHA256, &conflictAt, &d.Origin)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the receipt's detail: %w", err))
	}
	if request.Valid {
		d.Request = json.RawMessage(request.String)
	}
	d.ConflictAt = fromNullMicros(conflictAt)
	return &d, nil
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
	newer := f.AfterID > 0 && f.Source == nil
	if f.Source != nil {
		rows, err = e.db.QueryContext(ctx, sqlConsoleOutboxBySource, f.Source.Provider, f.Source.Endpoint, f.Source.EventID, limit)
	} else {
		query := sqlConsoleOutbox
		switch {
		case f.Unpublished() && newer:
			query = sqlConsoleOutboxUnpublishedNewer
		case f.Unpublished():
			query = sqlConsoleOutboxUnpublished
		case newer:
			query = sqlConsoleOutboxNewer
		}
		rows, err = e.db.QueryContext(ctx, query, append(outboxFilterArgs(f), limit)...)
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	list, err := collect(rows, scanOutboxMessage)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	if newer {
		slices.Reverse(list)
	}
	return list, nil
}

func (e *executor) ConsoleCountOutbox(ctx context.Context, f *driver.OutboxFilter, limit int) (int, error) {
	var n int
	query := sqlConsoleOutboxCount
	if f.Unpublished() {
		query = sqlConsoleOutboxCountUnpublished
	}
	g := *f
	g.AfterID = 0
	if err := e.db.QueryRowContext(ctx, query, append(outboxFilterArgs(&g), limit)...).Scan(&n); err != nil {
		return 0, translate(fmt.Errorf("error counting outbox messages: %w", err))
	}
	return n, nil
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

func (e *executor) ConsoleAudit(ctx context.Context, page driver.IDPage, limit int) ([]*driver.AuditEntry, error) {
	query, bound := sqlConsoleAudit, page.BeforeID
	if page.AfterID > 0 {
		query, bound = sqlConsoleAuditNewer, page.AfterID
	} else if bound <= 0 {
		bound = 1<<63 - 1
	}
	rows, err := e.db.QueryContext(ctx, query, bound, limit)
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
	if page.AfterID > 0 {
		slices.Reverse(list)
	}
	return list, nil
}

func (e *executor) ConsoleEndpointStates(ctx context.Context) ([]*driver.EndpointState, error) {
	rows, err := e.db.QueryContext(ctx, sqlConsoleEndpointStates)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the endpoints' states: %w", err))
	}
	list, err := collect(rows, func(row scanner) (*driver.EndpointState, error) {
		var s driver.EndpointState
		var at int64
		err := row.Scan(&s.Endpoint, &s.Paused, &at, &s.ChangedBy)
		s.ChangedAt = fromMicros(at)
		return &s, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the endpoints' states: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleSeedEndpoints(ctx context.Context, seeds []driver.EndpointSeed, actor string) (int, error) {
	stored := 0
	err := e.inTx(ctx, func(q dbtx) error {
		for _, s := range seeds {
			n, err := rowsAffected(q.ExecContext(ctx, sqlConsoleSeedEndpoint, s.Endpoint, s.Paused, actor))
			if err != nil {
				return err
			}
			stored += n
			if n > 0 && s.Paused {
				if _, err := q.ExecContext(ctx, sqlConsoleAuditInsert, actor, driver.ActionPause, "endpoint "+s.Endpoint, 1,
					"the configured default (the endpoint had no stored state)"); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, translate(fmt.Errorf("error storing the endpoints' configured states: %w", err))
	}
	return stored, nil
}

func (e *executor) ConsoleApply(ctx context.Context, a *driver.ConsoleAction) (int, error) {
	if a.Action == driver.ActionPause || a.Action == driver.ActionResume {
		return e.consolePause(ctx, a)
	}
	u, ok := consoleUpdates[a.Action]
	if !ok {
		return 0, fmt.Errorf("unknown console action %q", a.Action)
	}
	receipts := a.Action == driver.ActionRetry || a.Action == driver.ActionResolve
	states := a.FromStates
	var query string
	var args []any
	switch {
	case a.Key != nil && receipts:
		if len(states) == 0 {
			states = []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview}
		}
		query, args = u.byKey, []any{a.Key.Provider, a.Key.Endpoint, a.Key.EventID}
	case a.Filter != nil && len(states) > 0 && a.Limit > 0 && receipts:
		query, args = u.byFilter, append(filterArgs(a.Filter), a.Limit)
	case a.OutboxID > 0 && !receipts:
		if len(states) == 0 {
			states = driver.OutboxActionStates(a.Action)
		}
		query, args = u.byKey, []any{a.OutboxID}
	case a.OutboxFilter != nil && a.OutboxFilter.Source == nil && len(states) > 0 && a.Limit > 0 && !receipts:
		f := *a.OutboxFilter
		f.AfterID = 0
		query, args = u.byFilter, append(outboxFilterArgs(&f), a.Limit)
	default:
		return 0, errors.New("console action needs a key, an outbox id, or a filter with states and a limit")
	}
	list, err := jsonList(states)
	if err != nil {
		return 0, err
	}
	args = append(args, list)
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

// consolePause pauses or resumes an endpoint: its state, what it parks or releases,
// and the audit entry, in one write transaction (which no claim runs beside).
func (e *executor) consolePause(ctx context.Context, a *driver.ConsoleAction) (int, error) {
	if a.Endpoint == "" {
		return 0, errors.New("console action needs an endpoint to pause or resume")
	}
	state, inbox, outbox := sqlConsolePause, sqlConsoleParkInbox, sqlConsoleParkOutbox
	if a.Action == driver.ActionResume {
		state, inbox, outbox = sqlConsoleResume, sqlConsoleUnparkInbox, sqlConsoleUnparkOutbox
	}
	var changed int
	err := e.inTx(ctx, func(q dbtx) error {
		var err error
		if changed, err = rowsAffected(q.ExecContext(ctx, state, a.Endpoint, a.Actor)); err != nil {
			return err
		}
		if changed > 0 {
			for _, stmt := range []string{inbox, outbox} {
				if _, err := q.ExecContext(ctx, stmt, a.Endpoint, driver.ParkedAt.UnixMicro()); err != nil {
					return err
				}
			}
		}
		_, err = q.ExecContext(ctx, sqlConsoleAuditInsert, a.Actor, a.Action, a.Target, changed, a.Note)
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
