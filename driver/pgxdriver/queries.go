package pgxdriver

// All of the PostgreSQL driver's SQL. Values are always bound parameters.

const (
	// Two-key advisory lock: a constant for hookinbox and the schema, so that schemas
	// (one per test, or per tenant) migrate independently.
	sqlMigrationLock = `SELECT pg_advisory_xact_lock(1751150, hashtext(current_schema()))`

	sqlMigrationTable = `
CREATE TABLE IF NOT EXISTS hookinbox_migration (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

	sqlMigrationTableExists = `SELECT to_regclass('hookinbox_migration') IS NOT NULL`

	sqlMigrationApplied = `SELECT coalesce(max(version), 0) FROM hookinbox_migration`

	sqlMigrationRecord = `INSERT INTO hookinbox_migration (version, name) VALUES ($1, $2)`

	// ON CONFLICT DO NOTHING waits for an uncommitted insert of the same key: it
	// reports a conflict if that transaction commits and inserts if it rolls back. That
	// wait is what serializes concurrent copies of one event without application locks.
	sqlInboxInsert = `
INSERT INTO webhook_inbox
       (provider, endpoint, event_id, event_type, payload,
        processed_at, outcome, attempts, last_error, available_at)
VALUES ($1, $2, $3, $4, $5,
        CASE WHEN $6::boolean THEN now() END, $7, $8, $9,
        now() + make_interval(secs => $10::float8))
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING true`

	// Not SKIP LOCKED: a competing worker's claim can lock this row for an instant as a
	// candidate, and skipping it would leave the row unprocessed until its lease ends.
	// The wait is bounded by the transaction's statement timeout.
	sqlInboxLockUnprocessed = `
SELECT provider, endpoint, event_id, event_type, payload, received_at, available_at,
       attempts, coalesce(last_error, ''), processed_at, coalesce(outcome, '')
  FROM webhook_inbox
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3
   AND processed_at IS NULL
   FOR UPDATE`

	sqlInboxMarkProcessed = `
UPDATE webhook_inbox
   SET processed_at = now(), outcome = $4, last_error = NULL
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3`

	// The claim commits on its own, before processing starts, so an attempt is counted
	// even when the worker dies mid-event; a row that kills every worker therefore stops
	// at max attempts instead of being taken forever.
	sqlInboxClaim = `
UPDATE webhook_inbox AS w
   SET attempts     = w.attempts + 1,
       available_at = now() + make_interval(secs => $2::float8)
  FROM (SELECT provider, endpoint, event_id
          FROM webhook_inbox
         WHERE processed_at IS NULL
           AND available_at <= now()
           AND attempts < $3
           AND endpoint = ANY($1)
         ORDER BY available_at
         LIMIT 1
           FOR UPDATE SKIP LOCKED) AS picked
 WHERE (w.provider, w.endpoint, w.event_id) = (picked.provider, picked.endpoint, picked.event_id)
RETURNING w.provider, w.endpoint, w.event_id, w.event_type, w.payload, w.received_at,
          w.available_at, w.attempts, coalesce(w.last_error, ''), w.processed_at,
          coalesce(w.outcome, '')`

	// Only while unprocessed: a row another worker completed after our lease ran out
	// must keep its processed state.
	sqlInboxRecordFailure = `
UPDATE webhook_inbox
   SET last_error   = $4,
       available_at = now() + make_interval(secs => $5::float8)
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3
   AND processed_at IS NULL`

	sqlInboxGet = `
SELECT provider, endpoint, event_id, event_type, payload, received_at, available_at,
       attempts, coalesce(last_error, ''), processed_at, coalesce(outcome, '')
  FROM webhook_inbox
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3`

	sqlInboxList = `
SELECT provider, endpoint, event_id, event_type, payload, received_at, available_at,
       attempts, coalesce(last_error, ''), processed_at, coalesce(outcome, '')
  FROM webhook_inbox
 WHERE ($1 = '' OR endpoint = $1)
   AND (NOT $2 OR (processed_at IS NULL AND attempts >= $4))
   AND (NOT $3 OR processed_at IS NULL)
 ORDER BY received_at DESC
 LIMIT $5`

	sqlInboxStats = `
SELECT count(*),
       coalesce(extract(epoch FROM now() - min(received_at)), 0)::float8,
       count(*) FILTER (WHERE attempts >= $1)
  FROM webhook_inbox
 WHERE processed_at IS NULL`

	sqlInboxReceivedByType = `
SELECT event_type, count(*)
  FROM webhook_inbox
 WHERE received_at > now() - make_interval(secs => $1::float8)
 GROUP BY event_type
 ORDER BY 2 DESC, 1`

	sqlInboxRetryOne = `
UPDATE webhook_inbox
   SET attempts = 0, available_at = now()
 WHERE provider = $1 AND endpoint = $2 AND event_id = $3
   AND processed_at IS NULL`

	sqlInboxRetryNeedsReview = `
UPDATE webhook_inbox
   SET attempts = 0, available_at = now()
 WHERE processed_at IS NULL AND attempts >= $1`

	// received_at bounds processed_at from below, so its condition lets the BRIN
	// index narrow the scan without changing the result.
	sqlInboxDeleteProcessed = `
DELETE FROM webhook_inbox
 WHERE (provider, endpoint, event_id) IN (
        SELECT provider, endpoint, event_id
          FROM webhook_inbox
         WHERE received_at < now() - make_interval(secs => $1::float8)
           AND processed_at < now() - make_interval(secs => $1::float8)
         LIMIT $2)`

	sqlInboxCountProcessed = `
SELECT count(*)
  FROM webhook_inbox
 WHERE received_at < now() - make_interval(secs => $1::float8)
   AND processed_at < now() - make_interval(secs => $1::float8)`

	sqlOutboxInsert = `
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload,
                    source_provider, source_endpoint, source_event_id, destination)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id`

	sqlOutboxColumns = `id, aggregate_type, aggregate_id, event_type, payload,
       source_provider, source_endpoint, source_event_id, coalesce(destination, ''),
       created_at, attempts, coalesce(claim_token, 0), coalesce(last_error, ''), published_at`

	// Each claimed row gets its own token from the sequence, so tokens only grow: a
	// later claim of the same row always holds a larger one.
	sqlOutboxClaim = `
UPDATE outbox AS o
   SET attempts     = o.attempts + 1,
       available_at = now() + make_interval(secs => $2::float8),
       claim_token  = nextval('outbox_claim_token_seq')
  FROM (SELECT id
          FROM outbox
         WHERE published_at IS NULL
           AND available_at <= now()
           AND attempts < $3
           AND coalesce(destination, '') = ANY($4)
         ORDER BY available_at, id
         LIMIT $1
           FOR UPDATE SKIP LOCKED) AS picked
 WHERE o.id = picked.id
RETURNING o.id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload,
          o.source_provider, o.source_endpoint, o.source_event_id, coalesce(o.destination, ''),
          o.created_at, o.attempts, o.claim_token, coalesce(o.last_error, ''), o.published_at`

	// The fence: a dispatcher whose lease ran out holds an older token and changes
	// nothing.
	sqlOutboxMarkPublished = `
UPDATE outbox
   SET published_at = now(), last_error = NULL
 WHERE id = $1 AND claim_token = $2 AND published_at IS NULL`

	sqlOutboxRecordFailure = `
UPDATE outbox
   SET last_error   = $3,
       available_at = now() + make_interval(secs => $4::float8)
 WHERE id = $1 AND claim_token = $2 AND published_at IS NULL`

	sqlOutboxList = `
SELECT ` + sqlOutboxColumns + `
  FROM outbox
 WHERE (NOT $1 OR (published_at IS NULL AND attempts >= $3))
   AND (NOT $2 OR published_at IS NULL)
 ORDER BY id DESC
 LIMIT $4`

	sqlOutboxStats = `
SELECT count(*),
       coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8,
       count(*) FILTER (WHERE attempts >= $1)
  FROM outbox
 WHERE published_at IS NULL`

	sqlOutboxRetryOne = `
UPDATE outbox SET attempts = 0, available_at = now()
 WHERE id = $1 AND published_at IS NULL`

	sqlOutboxRetryNeedsReview = `
UPDATE outbox SET attempts = 0, available_at = now()
 WHERE published_at IS NULL AND attempts >= $1`

	// Takes the key when it is new, or when its holder's lease ran out; a done key is
	// never taken. The token comes from the outbox's sequence: only its growth matters.
	sqlEffectClaim = `
INSERT INTO effects (key, state, token, lease_until)
VALUES ($1, 'pending', nextval('outbox_claim_token_seq'), now() + make_interval(secs => $2::float8))
ON CONFLICT (key) DO UPDATE
   SET token       = EXCLUDED.token,
       lease_until = EXCLUDED.lease_until
 WHERE effects.state = 'pending' AND effects.lease_until < now()
RETURNING token`

	sqlEffectGet = `SELECT state = 'done', result, lease_until FROM effects WHERE key = $1`

	sqlEffectComplete = `
UPDATE effects
   SET state = 'done', result = $3, completed_at = now()
 WHERE key = $1 AND token = $2 AND state = 'pending'`

	sqlEffectRelease = `DELETE FROM effects WHERE key = $1 AND token = $2 AND state = 'pending'`

	sqlSetStatementTimeout = `SELECT set_config('statement_timeout', $1, true)`
)
