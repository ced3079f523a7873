package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The operator console's SQL (driver.ConsoleExecutor). Lists read one index range a
// page: the inbox's received_at b-tree with a key-set cursor, the outbox's primary
// key, the unprocessed partial indexes for review groups and the overview's counts.
const (
	// Where the roll-up's minutes end, and when and how large the backlog it last
	// counted was.
	sqlConsoleRolled = `
SELECT (SELECT through FROM hookinbox_rollup WHERE name = 'minute'),
       (SELECT max(counted_at) FROM hookinbox_backlog),
       (SELECT coalesce(sum(pending + needs_review + outbox_pending + outbox_needs_review), 0)::bigint FROM hookinbox_backlog)`

	// What waits per endpoint, counted: index-only scans of the unprocessed partial
	// indexes, which carry the endpoint (migration 008).
	sqlConsoleOpenLive = `
open AS (
    SELECT endpoint,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           count(*) FILTER (WHERE state = 'needs_review') AS review,
           min(received_at) FILTER (WHERE state = 'pending') AS oldest
      FROM hookinbox_inbox
     WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL
     GROUP BY endpoint
), outbox AS (
    SELECT source_endpoint AS endpoint,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           count(*) FILTER (WHERE state = 'needs_review') AS review
      FROM hookinbox_outbox
     WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL
     GROUP BY source_endpoint
)`

	// What waits per endpoint as the last roll-up counted it.
	sqlConsoleOpenCounted = `
open AS (
    SELECT endpoint, pending, needs_review AS review, oldest_pending AS oldest FROM hookinbox_backlog
), outbox AS (
    SELECT endpoint, outbox_pending AS pending, outbox_needs_review AS review FROM hookinbox_backlog
)`

	// $1 is the window's start (a minute's), $2 where the roll-up's minutes end and
	// the live counts start, $3 when the backlog was counted (NULL: live).
	sqlConsoleEndpointsHead = `
WITH rolled AS (
    SELECT endpoint, sum(received)::bigint AS received, sum(processed)::bigint AS processed
      FROM hookinbox_minute WHERE minute >= $1 AND minute < $2 GROUP BY endpoint
), recent AS (
    SELECT endpoint, count(*) AS n FROM hookinbox_inbox WHERE received_at >= $2 GROUP BY endpoint
), done AS (
    SELECT endpoint, count(*) AS n FROM hookinbox_inbox WHERE processed_at >= $2 GROUP BY endpoint
), `
	sqlConsoleEndpointsTail = `, names AS (
    SELECT endpoint FROM rolled UNION SELECT endpoint FROM recent UNION SELECT endpoint FROM done
    UNION SELECT endpoint FROM open UNION SELECT endpoint FROM outbox
    UNION SELECT endpoint FROM hookinbox_endpoint
)
SELECT names.endpoint, coalesce(rolled.received, 0) + coalesce(recent.n, 0),
       coalesce(rolled.processed, 0) + coalesce(done.n, 0), coalesce(open.pending, 0),
       coalesce(open.review, 0), coalesce(extract(epoch FROM now() - open.oldest), 0)::float8,
       coalesce(outbox.pending, 0), coalesce(outbox.review, 0), coalesce(e.paused, false), $3::timestamptz
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

	// The roll-up's count of the backlog, replacing the last one.
	sqlConsoleBacklogClear = `DELETE FROM hookinbox_backlog`
	sqlConsoleBacklog      = `
WITH ` + sqlConsoleOpenLive + `
INSERT INTO hookinbox_backlog (endpoint, pending, needs_review, oldest_pending, outbox_pending, outbox_needs_review)
SELECT endpoint, coalesce(open.pending, 0), coalesce(open.review, 0), open.oldest,
       coalesce(outbox.pending, 0), coalesce(outbox.review, 0)
  FROM open FULL JOIN outbox USING (endpoint)`

	// Bucket numbers from $1 in steps of $2 seconds; the roll-up's minutes before $3,
	// live counts from $3.
	sqlConsoleSeries = `
SELECT floor(extract(epoch FROM minute - $1) / $2)::int, sum(received)::bigint, sum(processed)::bigint,
       sum(failed)::bigint, sum(exhausted)::bigint
  FROM hookinbox_minute WHERE minute >= $1 AND minute < $3 GROUP BY 1
UNION ALL
SELECT floor(extract(epoch FROM received_at - $1) / $2)::int, count(*), 0, 0, 0
  FROM hookinbox_inbox WHERE received_at >= $3 GROUP BY 1
UNION ALL
SELECT floor(extract(epoch FROM processed_at - $1) / $2)::int, 0, count(*), 0, 0
  FROM hookinbox_inbox WHERE processed_at >= $3 GROUP BY 1
UNION ALL
SELECT floor(extract(epoch FROM finished_at - $1) / $2)::int, 0, 0,
       count(*) FILTER (WHERE error IS NOT NULL), count(*) FILTER (WHERE error IS NOT NULL AND next_retry_at IS NULL)
  FROM hookinbox_attempt WHERE finished_at >= $3 GROUP BY 1`

	// Only one process rolls up at a time; the others find the lock taken and leave
	// it to it.
	sqlConsoleRollupLock = `SELECT pg_try_advisory_xact_lock(hashtext('hookinbox_rollup'), hashtext(current_schema()))`

	// The minutes of [$1, $2), each counted whole: a minute rolled up again is
	// replaced, not added to. In (minute, endpoint) order, so that two roll-ups that
	// overlap take their row locks in one order.
	sqlConsoleRollup = `
INSERT INTO hookinbox_minute AS m (minute, endpoint, received, processed, failed, exhausted)
SELECT minute, endpoint, sum(r), sum(p), sum(f), sum(x)
  FROM (SELECT date_trunc('minute', received_at) AS minute, endpoint, count(*) AS r, 0 AS p, 0 AS f, 0 AS x
          FROM hookinbox_inbox WHERE received_at >= $1 AND received_at < $2 GROUP BY 1, 2
        UNION ALL
        SELECT date_trunc('minute', processed_at), endpoint, 0, count(*), 0, 0
          FROM hookinbox_inbox WHERE processed_at >= $1 AND processed_at < $2 GROUP BY 1, 2
        UNION ALL
        SELECT date_trunc('minute', finished_at), endpoint, 0, 0, count(*) FILTER (WHERE error IS NOT NULL),
               count(*) FILTER (WHERE error IS NOT NULL AND next_retry_at IS NULL)
          FROM hookinbox_attempt WHERE finished_at >= $1 AND finished_at < $2 GROUP BY 1, 2) AS c
 GROUP BY 1, 2
 ORDER BY 1, 2
ON CONFLICT (minute, endpoint) DO UPDATE
   SET received = EXCLUDED.received, processed = EXCLUDED.processed,
       failed = EXCLUDED.failed, exhausted = EXCLUDED.exhausted`

	sqlConsoleRolledThrough = `SELECT through FROM hookinbox_rollup WHERE name = 'minute'`

	sqlConsoleRollupMark = `
INSERT INTO hookinbox_rollup (name, through) VALUES ('minute', $1)
ON CONFLICT (name) DO UPDATE SET through = greatest(hookinbox_rollup.through, EXCLUDED.through)`

	sqlConsoleRollupTrim = `DELETE FROM hookinbox_minute WHERE minute < $1`

	// The groups first, from the unprocessed partial index; then each group's newest
	// member, for its error and payload, by the received_at b-tree.
	sqlConsoleReviewGroups = `
SELECT g.endpoint, g.fp, e.last_error, e.payload, g.n, g.oldest, g.newest
  FROM (SELECT endpoint, coalesce(error_fingerprint, last_error, '') AS fp, count(*) AS n,
               min(received_at) AS oldest, max(received_at) AS newest
          FROM hookinbox_inbox
         WHERE state = 'needs_review' AND available_at IS NOT NULL
         GROUP BY 1, 2
         ORDER BY 3 DESC, 1, 2
         LIMIT $1) AS g,
       LATERAL (SELECT coalesce(i.last_error, '') AS last_error, i.payload
                  FROM hookinbox_inbox AS i
                 WHERE i.received_at = g.newest AND i.endpoint = g.endpoint AND i.state = 'needs_review'
                   AND coalesce(i.error_fingerprint, i.last_error, '') = g.fp
                 LIMIT 1) AS e
 ORDER BY g.n DESC, g.endpoint, g.fp`

	sqlConsoleOutboxReviewGroups = `
SELECT g.endpoint, g.destination, g.fp, coalesce(e.last_error, ''), e.payload, g.n, g.oldest, g.newest
  FROM (SELECT '' AS endpoint, coalesce(destination, '') AS destination,
               coalesce(error_fingerprint, last_error, '') AS fp, count(*) AS n,
               min(created_at) AS oldest, max(created_at) AS newest, max(id) AS example
          FROM hookinbox_outbox
         WHERE state = 'needs_review' AND available_at IS NOT NULL
         GROUP BY 2, 3
         ORDER BY 4 DESC, 2, 3
         LIMIT $1) AS g
  JOIN hookinbox_outbox AS e ON e.id = g.example
 ORDER BY g.n DESC, g.destination, g.fp`

	// The filter of the list, the counts and the bulk actions, on $1..$12. The time
	// range and the cursor are always given (open ends as far-away times), so that they
	// are conditions on the received_at index in every plan.
	sqlConsoleFilter = `
       received_at >= $6 AND received_at < $7
   AND ($1 = '' OR endpoint = $1)
   AND ($2 = '' OR provider = $2)
   AND ($3 = '' OR event_type = $3)
   AND ($4 = '' OR state = $4)
   AND ($5 = '' OR coalesce(error_fingerprint, last_error, '') = $5)
   AND ($12 = '' OR strpos(lower(payload::text), lower($12)) > 0)`

	// The cursor: older than the previous page's last row, or newer than the shown
	// page's first.
	sqlConsoleOlder = `
   AND (received_at, provider, endpoint, event_id) < ($8, $9, $10, $11)`
	sqlConsoleNewer = `
   AND (received_at, provider, endpoint, event_id) > ($8, $9, $10, $11)`

	// What a filter on the pending or needs-review state adds, so that the statement
	// reads the small partial index of unprocessed receipts (whose predicate this
	// repeats) instead of walking the history by time.
	sqlConsoleUnprocessed = ` AND state IN ('pending', 'needs_review') AND available_at IS NOT NULL`

	sqlConsoleNewestFirst = `
 ORDER BY received_at DESC, provider DESC, endpoint DESC, event_id DESC
 LIMIT $13`
	sqlConsoleOldestFirst = `
 ORDER BY received_at, provider, endpoint, event_id
 LIMIT $13`

	sqlConsoleReceipts = `SELECT ` + sqlReceiptColumns + ` FROM hookinbox_inbox WHERE ` +
		sqlConsoleFilter + sqlConsoleOlder + sqlConsoleNewestFirst
	sqlConsoleReceiptsNewer = `SELECT ` + sqlReceiptColumns + ` FROM hookinbox_inbox WHERE ` +
		sqlConsoleFilter + sqlConsoleNewer + sqlConsoleOldestFirst
	sqlConsoleReceiptsUnprocessed = `SELECT ` + sqlReceiptColumns + ` FROM hookinbox_inbox WHERE ` +
		sqlConsoleFilter + sqlConsoleOlder + sqlConsoleUnprocessed + sqlConsoleNewestFirst
	sqlConsoleReceiptsUnprocessedNewer = `SELECT ` + sqlReceiptColumns + ` FROM hookinbox_inbox WHERE ` +
		sqlConsoleFilter + sqlConsoleNewer + sqlConsoleUnprocessed + sqlConsoleOldestFirst

	sqlConsoleCount = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_inbox WHERE ` + sqlConsoleFilter + sqlConsoleOlder + ` LIMIT $13) AS capped`
	sqlConsoleCountUnprocessed = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_inbox WHERE ` + sqlConsoleFilter + sqlConsoleOlder +
		sqlConsoleUnprocessed + ` LIMIT $13) AS capped`

	// An exact event id under each configured (provider, endpoint): primary key lookups.
	sqlConsoleReceiptsByID = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE (provider, endpoint, event_id) IN (SELECT k.p, k.e, $3::text FROM unnest($1::text[], $2::text[]) AS k(p, e))
 ORDER BY received_at DESC
 LIMIT $4`

	sqlConsoleReceiptDetail = `
SELECT request, conflict_sha256, conflict_at, coalesce(origin, '')
  FROM hookinbox_inbox
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3`

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

	// The outbox's filter on $1..$7; $8 is the page's id bound.
	sqlConsoleOutboxFilter = `
       ($1 = '' OR state = $1)
   AND ($2::text IS NULL OR coalesce(destination, '') = $2)
   AND ($3 = '' OR source_endpoint = $3)
   AND ($4 = '' OR event_type = $4)
   AND ($5 = '' OR coalesce(error_fingerprint, last_error, '') = $5)
   AND created_at >= $6 AND created_at < $7`
	sqlConsoleUnpublished = ` AND state IN ('pending', 'needs_review') AND available_at IS NOT NULL`

	sqlConsoleOutbox = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter + `
   AND id < $8 ORDER BY id DESC LIMIT $9`
	sqlConsoleOutboxNewer = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter + `
   AND id > $8 ORDER BY id LIMIT $9`
	sqlConsoleOutboxUnpublished = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter +
		sqlConsoleUnpublished + ` AND id < $8 ORDER BY id DESC LIMIT $9`
	sqlConsoleOutboxUnpublishedNewer = `SELECT ` + sqlOutboxColumns + ` FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter +
		sqlConsoleUnpublished + ` AND id > $8 ORDER BY id LIMIT $9`

	sqlConsoleOutboxCount = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter + ` AND id < $8 LIMIT $9) AS capped`
	sqlConsoleOutboxCountUnpublished = `
SELECT count(*) FROM (SELECT 1 FROM hookinbox_outbox WHERE ` + sqlConsoleOutboxFilter + sqlConsoleUnpublished +
		` AND id < $8 LIMIT $9) AS capped`

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

	sqlConsoleAuditNewer = `
SELECT id, at, actor, action, target, rows, coalesce(note, '')
  FROM hookinbox_audit
 WHERE id > $1
 ORDER BY id
 LIMIT $2`

	sqlConsoleEndpointStates = `
SELECT endpoint, paused, changed_at, changed_by FROM hookinbox_endpoint ORDER BY endpoint`

	// Stores the defaults of endpoints that have no state yet, and audits those stored
	// paused, in one statement.
	sqlConsoleSeedEndpoints = `
WITH seeded AS (
INSERT INTO hookinbox_endpoint (endpoint, paused, changed_by)
SELECT s.endpoint, s.paused, $3 FROM unnest($1::text[], $2::bool[]) AS s(endpoint, paused)
ON CONFLICT (endpoint) DO NOTHING
RETURNING endpoint, paused),
audit AS (
INSERT INTO hookinbox_audit (actor, action, target, rows, note)
SELECT $3, 'pause', 'endpoint ' || endpoint, 1, 'the configured default (the endpoint had no stored state)'
  FROM seeded WHERE paused)
SELECT count(*) FROM seeded`

	sqlConsoleSetRetry   = `attempts = 0, available_at = now(), state = 'pending'`
	sqlConsoleSetResolve = `state = 'discarded'`
	// A redelivered message keeps its id, so its idempotency key: the sink sees the
	// key it already had.
	sqlConsoleSetRedeliver = `attempts = 0, available_at = now(), state = 'pending', published_at = NULL,
       last_error = NULL, error_fingerprint = NULL`

	sqlConsoleByKey = `provider = $1 AND endpoint = $2 AND event_id = $3 AND state = ANY($4)`

	// Oldest first, so repeating a capped action works through a large group. Locked,
	// so that a worker's concurrent update waits or is waited for.
	sqlConsoleByFilter = `(provider, endpoint, event_id) IN (
        SELECT provider, endpoint, event_id FROM hookinbox_inbox
         WHERE ` + sqlConsoleFilter + sqlConsoleOlder + sqlConsoleUnprocessed + ` AND state = ANY($14)
         ORDER BY received_at
         LIMIT $13
           FOR UPDATE)`

	sqlConsoleOutboxByID = `id = $1 AND state = ANY($2)`

	sqlConsoleOutboxByFilter = `id IN (
        SELECT id FROM hookinbox_outbox
         WHERE ` + sqlConsoleOutboxFilter + ` AND id < $8 AND state = ANY($10)
         ORDER BY id
         LIMIT $9
           FOR UPDATE)`

	// Pausing stores the state, then parks what its endpoint has waiting now (later
	// arrivals are parked by the claims that meet them).
	sqlConsolePause = `
INSERT INTO hookinbox_endpoint (endpoint, paused, changed_by) VALUES ($1, true, $2)
ON CONFLICT (endpoint) DO UPDATE SET paused = true, changed_at = now(), changed_by = EXCLUDED.changed_by
 WHERE NOT hookinbox_endpoint.paused
RETURNING 1`
	sqlConsoleParkInbox = `
UPDATE hookinbox_inbox SET available_at = '9999-01-01 00:00:00+00'
 WHERE state = 'pending' AND available_at <= now() AND available_at IS NOT NULL AND endpoint = $1`
	sqlConsoleParkOutbox = `
UPDATE hookinbox_outbox SET available_at = '9999-01-01 00:00:00+00'
 WHERE state = 'pending' AND available_at <= now() AND available_at IS NOT NULL AND source_endpoint = $1`

	// Resuming changes the state first and releases the parked rows in a second
	// statement of the transaction. A claim that read the endpoint as paused holds its
	// row FOR SHARE until it commits, so the state's update waits for it, and the
	// release (a new snapshot) then sees the rows that claim parked.
	sqlConsoleResume = `
UPDATE hookinbox_endpoint SET paused = false, changed_at = now(), changed_by = $2
 WHERE endpoint = $1 AND paused
RETURNING 1`
	sqlConsoleUnparkInbox = `
UPDATE hookinbox_inbox SET available_at = now()
 WHERE state = 'pending' AND available_at = '9999-01-01 00:00:00+00' AND endpoint = $1`
	sqlConsoleUnparkOutbox = `
UPDATE hookinbox_outbox SET available_at = now()
 WHERE state = 'pending' AND available_at = '9999-01-01 00:00:00+00' AND source_endpoint = $1`

	sqlConsoleAuditInsert = `
INSERT INTO hookinbox_audit (actor, action, target, rows, note) VALUES ($1, $2, $3, $4, nullif($5, ''))`
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

// consoleUpdate is an action's statement: the change of its rows and its audit entry.
type consoleUpdate struct {
	byKey, byFilter string
}

// The actions on rows, built once from the constants above: each by one row's key
// (or id) and by a filter.
var (
	consoleUpdates = map[string]consoleUpdate{
		driver.ActionRetry: {
			byKey:    audited(`UPDATE hookinbox_inbox SET `+sqlConsoleSetRetry+` WHERE `+sqlConsoleByKey, 4),
			byFilter: audited(`UPDATE hookinbox_inbox SET `+sqlConsoleSetRetry+` WHERE `+sqlConsoleByFilter, 14),
		},
		driver.ActionResolve: {
			byKey:    audited(`UPDATE hookinbox_inbox SET `+sqlConsoleSetResolve+` WHERE `+sqlConsoleByKey, 4),
			byFilter: audited(`UPDATE hookinbox_inbox SET `+sqlConsoleSetResolve+` WHERE `+sqlConsoleByFilter, 14),
		},
		driver.ActionRetryOutbox: {
			byKey:    audited(`UPDATE hookinbox_outbox SET `+sqlConsoleSetRetry+` WHERE `+sqlConsoleOutboxByID, 2),
			byFilter: audited(`UPDATE hookinbox_outbox SET `+sqlConsoleSetRetry+` WHERE `+sqlConsoleOutboxByFilter, 10),
		},
		driver.ActionResolveOutbox: {
			byKey:    audited(`UPDATE hookinbox_outbox SET `+sqlConsoleSetResolve+` WHERE `+sqlConsoleOutboxByID, 2),
			byFilter: audited(`UPDATE hookinbox_outbox SET `+sqlConsoleSetResolve+` WHERE `+sqlConsoleOutboxByFilter, 10),
		},
		driver.ActionRedeliver: {
			byKey:    audited(`UPDATE hookinbox_outbox SET `+sqlConsoleSetRedeliver+` WHERE `+sqlConsoleOutboxByID, 2),
			byFilter: audited(`UPDATE hookinbox_outbox SET `+sqlConsoleSetRedeliver+` WHERE `+sqlConsoleOutboxByFilter, 10),
		},
	}

	_ driver.ConsoleExecutor = (*executor)(nil)
)

func filterArgs(f *driver.ReceiptFilter) []any {
	since, until, cursor, _ := f.Range()
	return []any{f.Endpoint, f.Provider, f.EventType, f.State, f.Fingerprint, since, until,
		cursor.ReceivedAt, cursor.Provider, cursor.Endpoint, cursor.EventID, f.Search}
}

func outboxFilterArgs(f *driver.OutboxFilter) []any {
	since, until := f.Range()
	bound := f.BeforeID
	if f.AfterID > 0 {
		bound = f.AfterID
	} else if bound <= 0 {
		bound = 1<<63 - 1
	}
	return []any{f.State, f.Destination, f.Endpoint, f.EventType, f.Fingerprint, since, until, bound}
}

// rolled is where the roll-up's minutes end (zero when there are none), and when the
// backlog it last counted was counted (zero: never) and how large it was.
type rolled struct {
	through, countedAt time.Time
	backlog            int64
}

func (e *executor) rolled(ctx context.Context) (rolled, error) {
	var r rolled
	var through, counted *time.Time
	if err := e.consoleQueryRow(ctx, sqlConsoleRolled).Scan(&through, &counted, &r.backlog); err != nil {
		return r, err
	}
	if through != nil {
		r.through = *through
	}
	if counted != nil {
		r.countedAt = *counted
	}
	return r, nil
}

func (e *executor) ConsoleEndpoints(ctx context.Context, since time.Time) ([]*driver.EndpointSummary, error) {
	r, err := e.rolled(ctx)
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	query, counted := sqlConsoleEndpoints, (*time.Time)(nil)
	if driver.CountedBacklog(r.countedAt, r.backlog, time.Now()) {
		query, counted = sqlConsoleEndpointsCounted, &r.countedAt
	}
	rows, err := e.consoleQuery(ctx, query, since, driver.LiveFrom(since, r.through), counted)
	if err != nil {
		return nil, translate(fmt.Errorf("error summarising endpoints: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*driver.EndpointSummary, error) {
		var s driver.EndpointSummary
		var oldest float64
		var at *time.Time
		err := row.Scan(&s.Endpoint, &s.Received, &s.Processed, &s.Pending, &s.NeedsReview, &oldest,
			&s.OutboxPending, &s.OutboxNeedsReview, &s.Paused, &at)
		s.OldestPendingAge = time.Duration(oldest * float64(time.Second))
		if at != nil {
			s.CountedAt = *at
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
	rows, err := e.consoleQuery(ctx, sqlConsoleSeries, since, bucket.Seconds(), driver.LiveFrom(since, ru.through))
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	var n int
	var r, p, f, x int64
	_, err = pgx.ForEachRow(rows, []any{&n, &r, &p, &f, &x}, func() error {
		driver.AddToSeries(points, n, r, p, f, x)
		return nil
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the chart: %w", err))
	}
	return points, nil
}

func (e *executor) ConsoleRollup(ctx context.Context, through time.Time) (int, error) {
	through = through.Truncate(time.Minute)
	var written int
	err := e.inTx(ctx, func(db dbtx) error {
		var locked bool
		if err := db.QueryRow(ctx, sqlConsoleRollupLock).Scan(&locked); err != nil || !locked {
			return err
		}
		var last time.Time
		err := db.QueryRow(ctx, sqlConsoleRolledThrough).Scan(&last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		from := driver.RollupFrom(last, through)
		if !from.Before(through) {
			return e.countBacklog(ctx, db)
		}
		// Planned with the values: the ranges are a few minutes of the tables.
		tag, err := db.Exec(ctx, sqlConsoleRollup, consolePlan, from, through)
		if err != nil {
			return err
		}
		written = int(tag.RowsAffected())
		if _, err := db.Exec(ctx, sqlConsoleRollupMark, through); err != nil {
			return err
		}
		if _, err := db.Exec(ctx, sqlConsoleRollupTrim, through.Add(-driver.RollupKeep)); err != nil {
			return err
		}
		return e.countBacklog(ctx, db)
	})
	if err != nil {
		return 0, translate(fmt.Errorf("error rolling up the overview's counts: %w", err))
	}
	return written, nil
}

// countBacklog replaces the roll-up's count of what waits per endpoint.
func (e *executor) countBacklog(ctx context.Context, db dbtx) error {
	if _, err := db.Exec(ctx, sqlConsoleBacklogClear); err != nil {
		return err
	}
	_, err := db.Exec(ctx, sqlConsoleBacklog)
	return err
}

// inTx runs fn in a transaction of its own: one begun on the pool, a savepoint in the
// caller's transaction, or, in a transaction of the core's, its statements as they
// come (they commit or roll back with it).
func (e *executor) inTx(ctx context.Context, fn func(db dbtx) error) error {
	b, ok := e.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return fn(e.db)
	}
	return pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error { return fn(tx) })
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
	rows, err := e.consoleQuery(ctx, query, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error grouping %s for review: %w", what, err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*driver.ReviewGroup, error) {
		var g driver.ReviewGroup
		dest := []any{&g.Endpoint, &g.Fingerprint, &g.Example, rawJSON(&g.ExamplePayload), &g.Count, &g.Oldest, &g.Newest}
		if query == sqlConsoleOutboxReviewGroups {
			dest = slices.Insert(dest, 1, any(&g.Destination))
		}
		err := row.Scan(dest...)
		return &g, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error grouping %s for review: %w", what, err))
	}
	return list, nil
}

func (e *executor) ConsoleReceipts(ctx context.Context, f *driver.ReceiptFilter, limit int) ([]*hookinboxtype.Receipt, error) {
	var rows pgx.Rows
	var err error
	_, _, _, newer := f.Range()
	if f.EventID != "" {
		providers, endpoints, _ := keyColumns(f.Keys)
		rows, err = e.consoleQuery(ctx, sqlConsoleReceiptsByID, providers, endpoints, f.EventID, limit)
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
		rows, err = e.consoleQuery(ctx, query, append(filterArgs(f), limit)...)
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error listing receipts: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*hookinboxtype.Receipt, error) { return scanReceipt(row) })
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
	if err := e.consoleQueryRow(ctx, query, append(filterArgs(f), limit)...).Scan(&n); err != nil {
		return 0, translate(fmt.Errorf("error counting receipts: %w", err))
	}
	return n, nil
}

func (e *executor) ConsoleReceiptDetail(ctx context.Context, k hookinboxtype.Key) (*driver.ReceiptDetail, error) {
	var d driver.ReceiptDetail
	err := e.consoleQueryRow(ctx, sqlConsoleReceiptDetail, k.Provider, k.Endpoint, k.EventID).
		Scan(rawJSON(&d.Request), &d.ConflictSHA256, &d.ConflictAt, &d.Origin)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the receipt's detail: %w", err))
	}
	return &d, nil
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
	newer := f.AfterID > 0 && f.Source == nil
	if f.Source != nil {
		rows, err = e.consoleQuery(ctx, sqlConsoleOutboxBySource, f.Source.Provider, f.Source.Endpoint, f.Source.EventID, limit)
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
		rows, err = e.consoleQuery(ctx, query, append(outboxFilterArgs(f), limit)...)
	}
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	list, err := pgx.CollectRows(rows, scanOutboxMessage)
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
	if err := e.consoleQueryRow(ctx, query, append(outboxFilterArgs(&g), limit)...).Scan(&n); err != nil {
		return 0, translate(fmt.Errorf("error counting outbox messages: %w", err))
	}
	return n, nil
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

func (e *executor) ConsoleAudit(ctx context.Context, page driver.IDPage, limit int) ([]*driver.AuditEntry, error) {
	query, bound := sqlConsoleAudit, page.BeforeID
	if page.AfterID > 0 {
		query, bound = sqlConsoleAuditNewer, page.AfterID
	} else if bound <= 0 {
		bound = 1<<63 - 1
	}
	rows, err := e.consoleQuery(ctx, query, bound, limit)
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
	if page.AfterID > 0 {
		slices.Reverse(list)
	}
	return list, nil
}

func (e *executor) ConsoleEndpointStates(ctx context.Context) ([]*driver.EndpointState, error) {
	rows, err := e.consoleQuery(ctx, sqlConsoleEndpointStates)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the endpoints' states: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*driver.EndpointState, error) {
		var s driver.EndpointState
		err := row.Scan(&s.Endpoint, &s.Paused, &s.ChangedAt, &s.ChangedBy)
		return &s, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error reading the endpoints' states: %w", err))
	}
	return list, nil
}

func (e *executor) ConsoleSeedEndpoints(ctx context.Context, seeds []driver.EndpointSeed, actor string) (int, error) {
	names, paused := make([]string, len(seeds)), make([]bool, len(seeds))
	for i, s := range seeds {
		names[i], paused[i] = s.Endpoint, s.Paused
	}
	var n int
	if err := e.consoleQueryRow(ctx, sqlConsoleSeedEndpoints, names, paused, actor).Scan(&n); err != nil {
		return 0, translate(fmt.Errorf("error storing the endpoints' configured states: %w", err))
	}
	return n, nil
}

func (e *executor) ConsoleApply(ctx context.Context, a *driver.ConsoleAction) (int, error) {
	if a.Action == driver.ActionPause || a.Action == driver.ActionResume {
		return e.consolePause(ctx, a)
	}
	u, ok := consoleUpdates[a.Action]
	if !ok {
		return 0, fmt.Errorf("unknown console action %q", a.Action)
	}
	states := stateNames(a.FromStates)
	receipts := a.Action == driver.ActionRetry || a.Action == driver.ActionResolve
	var query string
	var args []any
	switch {
	case a.Key != nil && receipts:
		if len(states) == 0 {
			states = []string{string(hookinboxtype.StatePending), string(hookinboxtype.StateNeedsReview)}
		}
		query, args = u.byKey, []any{a.Key.Provider, a.Key.Endpoint, a.Key.EventID, states}
	case a.Filter != nil && len(states) > 0 && a.Limit > 0 && receipts:
		query, args = u.byFilter, append(filterArgs(a.Filter), a.Limit, states)
	case a.OutboxID > 0 && !receipts:
		if len(states) == 0 {
			states = stateNames(driver.OutboxActionStates(a.Action))
		}
		query, args = u.byKey, []any{a.OutboxID, states}
	case a.OutboxFilter != nil && a.OutboxFilter.Source == nil && len(states) > 0 && a.Limit > 0 && !receipts:
		f := *a.OutboxFilter
		f.AfterID = 0
		query, args = u.byFilter, append(outboxFilterArgs(&f), a.Limit, states)
	default:
		return 0, errors.New("console action needs a key, an outbox id, or a filter with states and a limit")
	}
	args = append(args, a.Actor, a.Action, a.Target, a.Note)
	var n int
	if err := e.consoleQueryRow(ctx, query, args...).Scan(&n); err != nil {
		return 0, translate(fmt.Errorf("error applying %s: %w", a.Action, err))
	}
	return n, nil
}

// consolePause pauses or resumes an endpoint: its state, what it parks or releases,
// and the audit entry, in one transaction.
func (e *executor) consolePause(ctx context.Context, a *driver.ConsoleAction) (int, error) {
	if a.Endpoint == "" {
		return 0, errors.New("console action needs an endpoint to pause or resume")
	}
	state, inbox, outbox := sqlConsolePause, sqlConsoleParkInbox, sqlConsoleParkOutbox
	if a.Action == driver.ActionResume {
		state, inbox, outbox = sqlConsoleResume, sqlConsoleUnparkInbox, sqlConsoleUnparkOutbox
	}
	var changed int
	err := e.inTx(ctx, func(db dbtx) error {
		tag, err := db.Exec(ctx, state, a.Endpoint, a.Actor)
		if err != nil {
			return err
		}
		changed = int(tag.RowsAffected())
		if changed > 0 {
			for _, q := range []string{inbox, outbox} {
				if _, err := db.Exec(ctx, q, a.Endpoint); err != nil {
					return err
				}
			}
		}
		_, err = db.Exec(ctx, sqlConsoleAuditInsert, a.Actor, a.Action, a.Target, changed, a.Note)
		return err
	})
	if err != nil {
		return 0, translate(fmt.Errorf("error applying %s: %w", a.Action, err))
	}
	return changed, nil
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
