package pgxdriver

// All of the PostgreSQL driver's SQL. Values are always bound parameters.

const (
	// Two-key advisory lock: the line's key, and the schema, so that schemas (one per
	// test, or per tenant) migrate independently.
	sqlMigrationLock = `SELECT pg_advisory_xact_lock($1::int4, hashtext(current_schema()))`

	// The version tables' statements take the table's quoted name (a constant of the
	// code, never input) for %s.
	sqlMigrationTable = `
CREATE TABLE IF NOT EXISTS %s (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

	sqlMigrationTableExists = `SELECT (to_regclass($1) IS NOT NULL)::int`

	sqlMigrationRecord = `INSERT INTO %s (version, name) VALUES ($1, $2)`

	// ConfigurePool's statement: the server process allocates a 1 MiB text and frees
	// it with the statement, which raises glibc's malloc trim threshold in that process.
	sqlReadyBackend = `SELECT length(repeat('x', 1048576))`

	// Statements that should read the unprocessed rows through the partial index
	// hookinbox_inbox_unprocessed repeat its "available_at IS NOT NULL"; lookups by key
	// do not, so that they always use the primary key (see migration 003).
	sqlReceiptColumns = `provider, endpoint, event_id, event_type, payload, received_at, available_at,
       attempts, coalesce(max_attempts, 0), coalesce(last_error, ''), processed_at,
       coalesce(outcome, ''), state, body_sha256, conflicts, coalesce(trace_parent, '')`

	// ON CONFLICT DO NOTHING waits for an uncommitted insert of the same key: it
	// reports a conflict if that transaction commits and inserts if it rolls back. That
	// wait is what serializes concurrent copies of one event without application locks.
	sqlInboxInsert = `
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        processed_at, outcome, attempts, last_error, available_at, max_attempts, state, body_sha256, trace_parent,
        request)
VALUES ($1, $2, $3, $4, $5,
        CASE WHEN $6::boolean THEN now() END, $7, $8::integer, $9,
        now() + make_interval(secs => $10::float8), $11::integer,
        CASE WHEN $6::boolean THEN 'processed'
             WHEN $8::integer >= $11::integer THEN 'needs_review'
             ELSE 'pending' END, $12::bytea, nullif($13::text, ''), $14::jsonb)
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING true`

	// The accept path's group commit: one statement inserts a whole batch of receipts,
	// each new key once, and RETURNING names the keys it inserted (in no defined
	// order); a key it does not name was a duplicate. Rows arrive sorted by key, so two
	// batches holding the same keys wait for each other in one order and never deadlock.
	sqlInboxInsertMany = `
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        processed_at, outcome, attempts, last_error, available_at, max_attempts, state, body_sha256, trace_parent,
        request)
SELECT b.provider, b.endpoint, b.event_id, b.event_type, b.payload::jsonb,
       CASE WHEN b.processed THEN now() END, nullif(b.outcome, ''), b.attempts, nullif(b.last_error, ''),
       now() + make_interval(secs => b.delay), nullif(b.max_attempts, 0),
       CASE WHEN b.processed THEN 'processed'
            WHEN b.max_attempts > 0 AND b.attempts >= b.max_attempts THEN 'needs_review'
            ELSE 'pending' END,
       b.body_sha256, nullif(b.trace_parent, ''), b.request::jsonb
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::text[],
              $8::integer[], $9::text[], $10::float8[], $11::integer[], $12::bytea[], $13::text[], $14::text[])
       AS b(provider, endpoint, event_id, event_type, payload, processed, outcome,
            attempts, last_error, delay, max_attempts, body_sha256, trace_parent, request)
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING provider, endpoint, event_id`

	// sqlInboxInsertMany with receipts leased at once (InboxInsertParams.Lease, the
	// 15th array): a leased row counts its first attempt and is available when its
	// lease ends, as a claim leaves it; one of a paused endpoint is parked, as a claim
	// parks it, and the paused endpoints are read as the claim reads them.
	sqlInboxInsertManyLeased = `
WITH b AS MATERIALIZED (
    SELECT *
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::text[],
                  $8::integer[], $9::text[], $10::float8[], $11::integer[], $12::bytea[], $13::text[], $14::text[],
                  $15::float8[])
           WITH ORDINALITY AS b(provider, endpoint, event_id, event_type, payload, processed, outcome,
                                attempts, last_error, delay, max_attempts, body_sha256, trace_parent, request, lease, n)
), paused AS MATERIALIZED (
    SELECT endpoint FROM hookinbox_endpoint
     WHERE paused AND endpoint IN (SELECT endpoint FROM b WHERE lease > 0)
       FOR SHARE
)
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        processed_at, outcome, attempts, last_error, available_at, max_attempts, state, body_sha256, trace_parent,
        request)
SELECT b.provider, b.endpoint, b.event_id, b.event_type, b.payload::jsonb,
       CASE WHEN b.processed THEN now() END, nullif(b.outcome, ''),
       CASE WHEN b.lease <= 0 THEN b.attempts
            WHEN b.endpoint IN (SELECT endpoint FROM paused) THEN 0
            ELSE 1 END,
       nullif(b.last_error, ''),
       CASE WHEN b.lease <= 0 THEN now() + make_interval(secs => b.delay)
            WHEN b.endpoint IN (SELECT endpoint FROM paused) THEN '9999-01-01 00:00:00+00'
            ELSE now() + make_interval(secs => b.lease) END,
       nullif(b.max_attempts, 0),
       CASE WHEN b.processed THEN 'processed'
            WHEN b.lease <= 0 AND b.max_attempts > 0 AND b.attempts >= b.max_attempts THEN 'needs_review'
            ELSE 'pending' END,
       b.body_sha256, nullif(b.trace_parent, ''), b.request::jsonb
  FROM b
 ORDER BY b.n
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING provider, endpoint, event_id`

	// Not SKIP LOCKED: a competing worker's claim can lock a row for an instant as a
	// candidate, and skipping it would leave the row unprocessed until its lease ends.
	// The wait is bounded by the transaction's statement timeout. Locked in key order,
	// so two workers holding overlapping batches (after a lease ran out) never deadlock.
	sqlInboxLockUnprocessed = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE (provider, endpoint, event_id) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
   AND state = 'pending'
 ORDER BY provider, endpoint, event_id
   FOR UPDATE`

	sqlInboxMarkProcessed = `
UPDATE hookinbox_inbox
   SET state = 'processed', processed_at = now(), outcome = $4, last_error = NULL, error_fingerprint = NULL
 WHERE (provider, endpoint, event_id) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`

	// The same, with the batch's attempts added to the history in the same statement:
	// history costs no round trip.
	sqlInboxMarkProcessedAttempt = `
WITH done AS (
UPDATE hookinbox_inbox
   SET state = 'processed', processed_at = now(), outcome = $4, last_error = NULL, error_fingerprint = NULL
 WHERE (provider, endpoint, event_id) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
RETURNING provider, endpoint, event_id, attempts)
INSERT INTO hookinbox_attempt (provider, endpoint, event_id, attempt, started_at, worker)
SELECT provider, endpoint, event_id, attempts, now() - make_interval(secs => $5::float8), $6 FROM done`

	// The claim commits on its own, before processing starts, so an attempt is counted
	// even when the worker dies mid-event; a row that kills every worker therefore stops
	// at max attempts instead of being taken forever. Such a row is found pending with
	// its attempts used once its last lease ran out: it is put to review here, and the
	// caller claims again.
	//
	// A picked row of a paused endpoint (hookinbox_endpoint) is parked instead: its
	// available_at becomes 9999-01-01, out of every later claim's way, and it comes back
	// with the pseudo-state 'paused', which the caller drops (claiming again if nothing
	// else came). A resume makes the endpoint's parked rows available now. The paused
	// endpoints are read FOR SHARE: a resume's update of their row waits for this
	// statement to commit, so the resume's release sees what it parked.
	//
	// The endpoints are matched with array_position, not "endpoint = ANY($1)": on a
	// table never analyzed (autovacuum off) the planner guesses the latter keeps one
	// row in a hundred, so the LIMIT stops nothing in its estimate and it sorts every
	// pending row (29 ms a claim with 105,000 pending) instead of reading the index in
	// order (0.04 ms). An expression's IS NOT NULL is guessed to keep nearly all rows.
	sqlInboxClaim = `
WITH paused AS MATERIALIZED (
    SELECT endpoint FROM hookinbox_endpoint WHERE paused AND endpoint = ANY($1) FOR SHARE
), picked AS MATERIALIZED (
    SELECT provider, endpoint, event_id, endpoint IN (SELECT endpoint FROM paused) AS park
      FROM hookinbox_inbox
     WHERE state = 'pending'
       AND available_at <= now()
       AND array_position($1::text[], endpoint) IS NOT NULL
     ORDER BY available_at
     LIMIT $4
       FOR UPDATE SKIP LOCKED
), parked AS (
    UPDATE hookinbox_inbox AS w
       SET available_at = '9999-01-01 00:00:00+00'
      FROM picked
     WHERE picked.park
       AND (w.provider, w.endpoint, w.event_id) = (picked.provider, picked.endpoint, picked.event_id)
    RETURNING ` + sqlClaimedReceipt + `, 'paused' AS state, ` + sqlClaimedReceiptEnd + `
), claimed AS (
    UPDATE hookinbox_inbox AS w
       SET attempts     = CASE WHEN w.attempts >= $3 THEN w.attempts ELSE w.attempts + 1 END,
           state        = CASE WHEN w.attempts >= $3 THEN 'needs_review' ELSE 'pending' END,
           max_attempts = $3,
           available_at = now() + make_interval(secs => $2::float8)
      FROM picked
     WHERE NOT picked.park
       AND (w.provider, w.endpoint, w.event_id) = (picked.provider, picked.endpoint, picked.event_id)
    RETURNING ` + sqlClaimedReceipt + `, w.state, ` + sqlClaimedReceiptEnd + `
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM parked`

	// A claimed receipt's columns before and after its state, as scanReceipt reads
	// them. The payload is NULL (scanned as none): the processing transaction's lock
	// reads it, and turning each jsonb into its text here too cost about a tenth of
	// the async path's CPU.
	sqlClaimedReceipt = `w.provider, w.endpoint, w.event_id, w.event_type, NULL::jsonb, w.received_at,
          w.available_at, w.attempts, coalesce(w.max_attempts, 0), coalesce(w.last_error, ''),
          w.processed_at, coalesce(w.outcome, '')`
	sqlClaimedReceiptEnd = `w.body_sha256, w.conflicts, coalesce(w.trace_parent, '')`

	sqlInboxExtendLease = `
UPDATE hookinbox_inbox
   SET available_at = now() + make_interval(secs => $4::float8)
 WHERE (provider, endpoint, event_id) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
   AND state = 'pending'
   AND available_at <> '9999-01-01 00:00:00+00'`

	// Only while pending: a row another worker completed after our lease ran out must
	// keep its processed state. The limit is the row's own, stored by its claim (a NULL
	// limit compares as unknown: the row stays pending).
	// The attempt joins the history in the same statement (when $7, how long ago it
	// started, is given), with the retry time the update chose; a data-modifying CTE
	// runs whether or not its rows are used. Starts are the database's clock minus the
	// attempt's elapsed time, so durations never mix two machines' clocks.
	sqlInboxRecordFailure = `
WITH failed AS (
UPDATE hookinbox_inbox
   SET last_error        = $4,
       error_fingerprint = $6,
       available_at      = now() + make_interval(secs => $5::float8),
       state             = CASE WHEN attempts >= max_attempts THEN 'needs_review' ELSE 'pending' END
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3
   AND state = 'pending'
RETURNING provider, endpoint, event_id, attempts, state, available_at)
INSERT INTO hookinbox_attempt (provider, endpoint, event_id, attempt, started_at, worker, error, next_retry_at)
SELECT provider, endpoint, event_id, attempts, now() - make_interval(secs => $7::float8), $8, $4,
       CASE WHEN state = 'pending' THEN available_at END
  FROM failed
 WHERE $7::float8 IS NOT NULL`

	// Counts a conflict only when both hashes are known and differ; a matching or
	// unknown (pre-version-3) hash leaves the row untouched.
	sqlInboxNoteDuplicate = `
UPDATE hookinbox_inbox
   SET conflicts = conflicts + 1, conflict_sha256 = $4, conflict_at = now()
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3
   AND body_sha256 IS NOT NULL AND body_sha256 <> $4
RETURNING body_sha256`

	sqlInboxGet = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3`

	sqlInboxList = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE ($1 = '' OR endpoint = $1)
   AND (NOT $2 OR state = 'needs_review')
   AND (NOT $3 OR state IN ('pending', 'needs_review'))
   AND (NOT $5 OR conflicts > 0)
 ORDER BY received_at DESC
 LIMIT $4`

	sqlInboxStats = `
SELECT count(*),
       coalesce(extract(epoch FROM now() - min(received_at)), 0)::float8,
       count(*) FILTER (WHERE state = 'needs_review'),
       coalesce(extract(epoch FROM now() - min(received_at) FILTER (WHERE state = 'pending')), 0)::float8
  FROM hookinbox_inbox
 WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL`

	sqlInboxReceivedByType = `
SELECT event_type, count(*)
  FROM hookinbox_inbox
 WHERE received_at > now() - make_interval(secs => $1::float8)
 GROUP BY event_type
 ORDER BY 2 DESC, 1`

	sqlInboxRetryOne = `
UPDATE hookinbox_inbox
   SET attempts = 0, available_at = now(), state = 'pending'
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3
   AND state IN ('pending', 'needs_review')`

	sqlInboxRetryNeedsReview = `
UPDATE hookinbox_inbox
   SET attempts = 0, available_at = now(), state = 'pending'
 WHERE state = 'needs_review' AND available_at IS NOT NULL`

	// received_at bounds processed_at from below, so its condition lets the BRIN
	// index narrow the scan without changing the result.
	sqlInboxDeleteProcessed = `
DELETE FROM hookinbox_inbox
 WHERE (provider, endpoint, event_id) IN (
        SELECT provider, endpoint, event_id
          FROM hookinbox_inbox
         WHERE received_at < now() - make_interval(secs => $1::float8)
           AND state = 'processed'
           AND processed_at < now() - make_interval(secs => $1::float8)
         LIMIT $2)`

	// Purged payloads read as JSON null; the key and body_sha256 stay.
	sqlInboxPurgePayloads = `
UPDATE hookinbox_inbox SET payload = 'null'::jsonb
 WHERE (provider, endpoint, event_id) IN (
        SELECT provider, endpoint, event_id
          FROM hookinbox_inbox
         WHERE state = 'processed'
           AND processed_at < now() - make_interval(secs => $1::float8)
           AND payload <> 'null'::jsonb
         LIMIT $2)`

	sqlInboxCountPurgeable = `
SELECT count(*)
  FROM hookinbox_inbox
 WHERE state = 'processed'
   AND processed_at < now() - make_interval(secs => $1::float8)
   AND payload <> 'null'::jsonb`

	// The planner's estimate of rows (-1 before the first VACUUM or ANALYZE), not a
	// count: counting a large table at every scrape would cost a scan of it.
	sqlTableSizes = `
SELECT t.name, coalesce(c.reltuples::bigint, -1), coalesce(pg_total_relation_size(c.oid), -1)
  FROM unnest(ARRAY['hookinbox_inbox', 'hookinbox_outbox', 'hookinbox_effect']) WITH ORDINALITY AS t(name, n)
  LEFT JOIN pg_class c ON c.oid = to_regclass(t.name)
 ORDER BY t.n`

	sqlInboxCountProcessed = `
SELECT count(*)
  FROM hookinbox_inbox
 WHERE received_at < now() - make_interval(secs => $1::float8)
   AND state = 'processed'
   AND processed_at < now() - make_interval(secs => $1::float8)`

	// Published messages and recorded effects older than the retention. Ids never come
	// back (an identity), so deleting a published message cannot make a later one's
	// idempotency key collide with it.
	sqlOutboxDeletePublished = `
DELETE FROM hookinbox_outbox
 WHERE id IN (SELECT id FROM hookinbox_outbox
               WHERE state = 'published' AND published_at < now() - make_interval(secs => $1::float8)
               LIMIT $2)`

	sqlOutboxCountPublished = `
SELECT count(*) FROM hookinbox_outbox
 WHERE state = 'published' AND published_at < now() - make_interval(secs => $1::float8)`

	sqlAttemptDeleteOld = `
DELETE FROM hookinbox_attempt
 WHERE id IN (SELECT id FROM hookinbox_attempt
               WHERE finished_at < now() - make_interval(secs => $1::float8)
               LIMIT $2)`

	sqlAttemptCountOld = `
SELECT count(*) FROM hookinbox_attempt
 WHERE finished_at < now() - make_interval(secs => $1::float8)`

	sqlDeliveryDeleteOld = `
DELETE FROM hookinbox_delivery
 WHERE id IN (SELECT id FROM hookinbox_delivery
               WHERE finished_at < now() - make_interval(secs => $1::float8)
               LIMIT $2)`

	sqlDeliveryCountOld = `
SELECT count(*) FROM hookinbox_delivery
 WHERE finished_at < now() - make_interval(secs => $1::float8)`

	sqlEffectDeleteDone = `
DELETE FROM hookinbox_effect
 WHERE key IN (SELECT key FROM hookinbox_effect
                WHERE state = 'done' AND completed_at < now() - make_interval(secs => $1::float8)
                LIMIT $2)`

	sqlEffectCountDone = `
SELECT count(*) FROM hookinbox_effect
 WHERE state = 'done' AND completed_at < now() - make_interval(secs => $1::float8)`

	sqlOutboxInsert = `
INSERT INTO hookinbox_outbox (aggregate_type, aggregate_id, event_type, payload,
                    source_provider, source_endpoint, source_event_id, destination, trace_parent)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, nullif($9::text, ''))
RETURNING id`

	// The messages are inserted in the order given (WITH ORDINALITY), so that their ids
	// follow it, as a loop of sqlOutboxInsert's would.
	sqlOutboxInsertMany = `
INSERT INTO hookinbox_outbox (aggregate_type, aggregate_id, event_type, payload,
                    source_provider, source_endpoint, source_event_id, destination, trace_parent)
SELECT m.aggregate_type, m.aggregate_id, m.event_type, m.payload::jsonb,
       m.source_provider, m.source_endpoint, m.source_event_id, nullif(m.destination, ''),
       nullif(m.trace_parent, '')
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
              $9::text[])
       WITH ORDINALITY AS m(aggregate_type, aggregate_id, event_type, payload,
                            source_provider, source_endpoint, source_event_id, destination, trace_parent, n)
 ORDER BY m.n`

	sqlOutboxColumns = `id, aggregate_type, aggregate_id, event_type, payload,
       source_provider, source_endpoint, source_event_id, coalesce(destination, ''),
       created_at, attempts, coalesce(max_attempts, 0), coalesce(claim_token, 0),
       coalesce(last_error, ''), published_at, state, coalesce(trace_parent, '')`

	// Each claimed row gets its own token from the sequence, so tokens only grow: a
	// later claim of the same row always holds a larger one. A row whose attempts are
	// used (its dispatcher died during the last one) is put to review instead.
	// Each destination is claimed up to its own limit, in a LATERAL subquery of its
	// own, so a destination whose deliveries are all in flight (or that is paused)
	// takes no slot from the others. An ordered destination's message is taken only
	// when no earlier message of its key (aggregate type and id) is still pending or
	// needs review: one message of a key in flight, oldest first
	// (hookinbox_outbox_claim_order gives each destination's claimable rows in
	// order, hookinbox_outbox_key_order answers the check). $1 is the limit per
	// destination of $4, $5 whether it is ordered.
	//
	// A picked message whose source endpoint is paused is parked, as sqlInboxClaim
	// parks receipts, and comes back with the pseudo-state 'paused'.
	sqlOutboxClaim = `
WITH paused AS MATERIALIZED (
    SELECT endpoint FROM hookinbox_endpoint WHERE paused FOR SHARE
), picked AS MATERIALIZED (
    SELECT p.id, p.source_endpoint IN (SELECT endpoint FROM paused) AS park
      FROM unnest($4::text[], $1::int[], $5::bool[]) AS d(destination, lim, ordered),
           LATERAL (SELECT c.id, c.source_endpoint
                      FROM hookinbox_outbox AS c
                     WHERE c.state = 'pending'
                       AND c.available_at <= now()
                       AND coalesce(c.destination, '') = d.destination
                       AND (NOT d.ordered OR NOT EXISTS (
                            SELECT 1
                              FROM hookinbox_outbox AS e
                             WHERE e.aggregate_type = c.aggregate_type
                               AND e.aggregate_id = c.aggregate_id
                               AND e.state IN ('pending', 'needs_review')
                               AND e.id < c.id
                               AND coalesce(e.destination, '') = d.destination))
                     ORDER BY c.available_at, c.id
                     LIMIT d.lim
                       FOR UPDATE SKIP LOCKED) AS p
), parked AS (
    UPDATE hookinbox_outbox AS o
       SET available_at = '9999-01-01 00:00:00+00'
      FROM picked
     WHERE picked.park AND o.id = picked.id
    RETURNING ` + sqlClaimedMessage + `, 'paused' AS state, coalesce(o.trace_parent, '')
), claimed AS (
    UPDATE hookinbox_outbox AS o
       SET attempts     = CASE WHEN o.attempts >= $3 THEN o.attempts ELSE o.attempts + 1 END,
           state        = CASE WHEN o.attempts >= $3 THEN 'needs_review' ELSE 'pending' END,
           max_attempts = $3,
           available_at = now() + make_interval(secs => $2::float8),
           claim_token  = nextval('hookinbox_claim_token_seq')
      FROM picked
     WHERE NOT picked.park AND o.id = picked.id
    RETURNING ` + sqlClaimedMessage + `, o.state, coalesce(o.trace_parent, '')
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM parked`

	// A claimed message's columns before its state, as scanOutboxMessage reads them.
	sqlClaimedMessage = `o.id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload,
              o.source_provider, o.source_endpoint, o.source_event_id, coalesce(o.destination, ''),
              o.created_at, o.attempts, coalesce(o.max_attempts, 0), coalesce(o.claim_token, 0), coalesce(o.last_error, ''),
              o.published_at`

	// The batch's marks, fenced each by its own token, in id order so that two
	// dispatchers' marks never wait on each other in opposite orders; the history is
	// written by the same statement, as sqlOutboxMarkPublished's is.
	sqlOutboxMarkPublishedMany = `
WITH done AS (
UPDATE hookinbox_outbox AS o
   SET state = 'published', published_at = now(), last_error = NULL
  FROM (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS m(id, token) ORDER BY id) AS m
 WHERE o.id = m.id AND o.claim_token = m.token AND o.state = 'pending'
RETURNING o.id, o.attempts, o.claim_token),
history AS (
INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token)
SELECT id, attempts, claim_token FROM done)
SELECT id FROM done`

	// The fence: a dispatcher whose lease ran out holds an older token and changes
	// nothing.
	// Both add the delivery to the message's history in the same statement, so the
	// history is written exactly when the fenced result is; the INSERT's count is the
	// UPDATE's.
	sqlOutboxMarkPublished = `
WITH done AS (
UPDATE hookinbox_outbox
   SET state = 'published', published_at = now(), last_error = NULL
 WHERE id = $1 AND claim_token = $2 AND state = 'pending'
RETURNING id, attempts, claim_token)
INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token)
SELECT id, attempts, claim_token FROM done`

	sqlOutboxRecordFailure = `
WITH failed AS (
UPDATE hookinbox_outbox
   SET last_error        = $3,
       error_fingerprint = $5,
       available_at      = now() + make_interval(secs => $4::float8),
       state        = CASE WHEN attempts >= max_attempts THEN 'needs_review' ELSE 'pending' END
 WHERE id = $1 AND claim_token = $2 AND state = 'pending'
RETURNING id, attempts, claim_token, state, available_at)
INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token, error, next_retry_at)
SELECT id, attempts, claim_token, $3, CASE WHEN state = 'pending' THEN available_at END FROM failed`

	sqlOutboxList = `
SELECT ` + sqlOutboxColumns + `
  FROM hookinbox_outbox
 WHERE (NOT $1 OR state = 'needs_review')
   AND (NOT $2 OR state IN ('pending', 'needs_review'))
 ORDER BY id DESC
 LIMIT $3`

	sqlOutboxStats = `
SELECT count(*),
       coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8,
       count(*) FILTER (WHERE state = 'needs_review')
  FROM hookinbox_outbox
 WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL`

	sqlOutboxRetryOne = `
UPDATE hookinbox_outbox SET attempts = 0, available_at = now(), state = 'pending'
 WHERE id = $1 AND state IN ('pending', 'needs_review')`

	sqlOutboxRetryNeedsReview = `
UPDATE hookinbox_outbox SET attempts = 0, available_at = now(), state = 'pending'
 WHERE state = 'needs_review' AND available_at IS NOT NULL`

	// Takes the key when it is new, or when its holder's lease ran out; a done key is
	// never taken. The token comes from the outbox's sequence: only its growth matters.
	sqlEffectClaim = `
INSERT INTO hookinbox_effect (key, state, token, lease_until)
VALUES ($1, 'pending', nextval('hookinbox_claim_token_seq'), now() + make_interval(secs => $2::float8))
ON CONFLICT (key) DO UPDATE
   SET token       = EXCLUDED.token,
       lease_until = EXCLUDED.lease_until
 WHERE hookinbox_effect.state = 'pending' AND hookinbox_effect.lease_until < now()
RETURNING token`

	sqlEffectGet = `SELECT state = 'done', result, lease_until FROM hookinbox_effect WHERE key = $1`

	sqlEffectComplete = `
UPDATE hookinbox_effect
   SET state = 'done', result = $3, completed_at = now()
 WHERE key = $1 AND token = $2 AND state = 'pending'`

	sqlEffectRelease = `DELETE FROM hookinbox_effect WHERE key = $1 AND token = $2 AND state = 'pending'`

	sqlSetStatementTimeout = `SELECT set_config('statement_timeout', $1, true)`

	// A worker's lookups by key (the lock, the mark) run between these two, with
	// sequential scans off: a prepared statement settles on a generic plan after its
	// fifth execution, and on a table still nearly empty then (a new deployment, a
	// bench run's first second) that plan is a sequential scan joined to the keys,
	// which stays cached for the connection's life while the table grows (measured:
	// 65 buffers a row instead of 5, docs/BENCHMARKS.md). Off, every plan takes the
	// primary key; the session's setting is restored after the statement.
	sqlSeqScanOff = `SELECT set_config('hookinbox.enable_seqscan', current_setting('enable_seqscan'), true),
       set_config('enable_seqscan', 'off', true)`
	sqlSeqScanRestore = `SELECT set_config('enable_seqscan', current_setting('hookinbox.enable_seqscan'), true)`

	// Notification channels carry the schema, so that schemas (tenants, tests) on one
	// server do not wake each other; NOTIFY's channel is an expression, LISTEN's a name.
	// A name would be cut at 63 bytes: a long one is replaced by its digest.
	sqlChannel = `CASE WHEN length($1::text || ':' || current_schema()) <= 63
            THEN $1::text || ':' || current_schema()
            ELSE 'hookinbox:' || md5($1::text || ':' || current_schema()) END`
	sqlNotifyChannel = `SELECT ` + sqlChannel
	sqlNotify        = `SELECT pg_notify(` + sqlChannel + `, '')`

	// One name for every delivery's mark in a shared transaction; each is released
	// before the next is taken, so there is only ever one.
	// Sent in a batch after queued statements (executorTx.sendCommit); pgx's Commit
	// sends its own.
	sqlCommit = `COMMIT`

	sqlSavepoint           = `SAVEPOINT hookinbox_delivery`
	sqlRollbackToSavepoint = `ROLLBACK TO SAVEPOINT hookinbox_delivery`
	sqlReleaseSavepoint    = `RELEASE SAVEPOINT hookinbox_delivery`
)
