package sqlitedriver

// All of the SQLite driver's SQL. Values are always bound parameters; the only
// concatenation is of the constants below.
//
// Times are INTEGER unix microseconds and durations are bound as microseconds. Lists
// (the endpoints or destinations a worker serves) are bound as one JSON array and read
// with json_each, so each statement keeps a fixed text.

const (
	// now is the database's clock in unix microseconds, the SQLite form of now(): every
	// process on the file shares its meaning. SQLite's clock has millisecond resolution,
	// and 'now' is the same for the whole statement. round() undoes the binary fraction
	// of the division inside unixepoch, so a millisecond is never read as 999 µs.
	now = `(CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000)`

	sqlMigrationTable = `
CREATE TABLE IF NOT EXISTS hookinbox_migration (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL DEFAULT ` + now + `
) STRICT`

	sqlMigrationTableExists = `
SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'hookinbox_migration'`

	sqlMigrationApplied = `SELECT coalesce(max(version), 0) FROM hookinbox_migration`

	sqlMigrationRecord = `INSERT INTO hookinbox_migration (version, name) VALUES (?1, ?2)`

	sqlReceiptColumns = `provider, endpoint, event_id, event_type, payload, received_at, available_at,
       attempts, coalesce(last_error, ''), processed_at, coalesce(outcome, '')`

	// DO NOTHING turns a second copy into a duplicate. Copies never race inside
	// SQLite: the transaction that runs this took the database's write lock at BEGIN
	// IMMEDIATE (or, on its own, the statement takes it as it starts), so a concurrent
	// copy waits for that transaction to end, then inserts if it rolled back or finds
	// the row if it committed: PostgreSQL's wait on the unique index, for the whole
	// file.
	sqlInboxInsert = `
INSERT INTO webhook_inbox
       (provider, endpoint, event_id, event_type, payload,
        received_at, processed_at, outcome, attempts, last_error, available_at)
VALUES (?1, ?2, ?3, ?4, ?5,
        ` + now + `, CASE WHEN ?6 THEN ` + now + ` END, ?7, ?8, ?9, ` + now + ` + ?10)
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING 1`

	// No FOR UPDATE in SQLite, and none needed: the processing transaction began
	// IMMEDIATE and holds the write lock of the whole database until it ends, so no
	// other worker can process or change this row meanwhile. The re-check of
	// processed_at IS NULL is what turns a worker whose lease ran out (and whose
	// receipt another worker completed) into a no-op.
	sqlInboxLockUnprocessed = `
SELECT ` + sqlReceiptColumns + `
  FROM webhook_inbox
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3
   AND processed_at IS NULL`

	sqlInboxMarkProcessed = `
UPDATE webhook_inbox
   SET processed_at = ` + now + `, outcome = ?4, last_error = NULL
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3`

	// The claim commits on its own, before processing starts, so an attempt is counted
	// even when the worker dies mid-event. No SKIP LOCKED: a writing statement holds
	// the database's only write lock from its start, so there is never a row locked by
	// another claim to skip, and the pick and the update see the same state.
	sqlInboxClaim = `
UPDATE webhook_inbox
   SET attempts     = attempts + 1,
       available_at = ` + now + ` + ?2
 WHERE rowid = (SELECT rowid
                  FROM webhook_inbox
                 WHERE processed_at IS NULL
                   AND available_at <= ` + now + `
                   AND attempts < ?3
                   AND endpoint IN (SELECT value FROM json_each(?1))
                 ORDER BY available_at
                 LIMIT 1)
RETURNING ` + sqlReceiptColumns

	// Only while unprocessed: a row another worker completed after our lease ran out
	// must keep its processed state.
	sqlInboxRecordFailure = `
UPDATE webhook_inbox
   SET last_error   = ?4,
       available_at = ` + now + ` + ?5
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3
   AND processed_at IS NULL`

	sqlInboxGet = `
SELECT ` + sqlReceiptColumns + `
  FROM webhook_inbox
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3`

	// rowid breaks ties between receipts of the same millisecond in arrival order.
	sqlInboxList = `
SELECT ` + sqlReceiptColumns + `
  FROM webhook_inbox
 WHERE (?1 = '' OR endpoint = ?1)
   AND (NOT ?2 OR (processed_at IS NULL AND attempts >= ?4))
   AND (NOT ?3 OR processed_at IS NULL)
 ORDER BY received_at DESC, rowid DESC
 LIMIT ?5`

	sqlInboxStats = `
SELECT count(*),
       coalesce(` + now + ` - min(received_at), 0),
       count(*) FILTER (WHERE attempts >= ?1)
  FROM webhook_inbox
 WHERE processed_at IS NULL`

	sqlInboxReceivedByType = `
SELECT event_type, count(*)
  FROM webhook_inbox
 WHERE received_at > ` + now + ` - ?1
 GROUP BY event_type
 ORDER BY 2 DESC, 1`

	sqlInboxRetryOne = `
UPDATE webhook_inbox
   SET attempts = 0, available_at = ` + now + `
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3
   AND processed_at IS NULL`

	sqlInboxRetryNeedsReview = `
UPDATE webhook_inbox
   SET attempts = 0, available_at = ` + now + `
 WHERE processed_at IS NULL AND attempts >= ?1`

	// received_at bounds processed_at from below, so its condition lets the index on
	// received_at narrow the scan without changing the result.
	sqlInboxDeleteProcessed = `
DELETE FROM webhook_inbox
 WHERE rowid IN (
        SELECT rowid
          FROM webhook_inbox
         WHERE received_at < ` + now + ` - ?1
           AND processed_at < ` + now + ` - ?1
         LIMIT ?2)`

	sqlInboxCountProcessed = `
SELECT count(*)
  FROM webhook_inbox
 WHERE received_at < ` + now + ` - ?1
   AND processed_at < ` + now + ` - ?1`

	sqlOutboxInsert = `
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload,
                    source_provider, source_endpoint, source_event_id, destination)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
RETURNING id`

	sqlOutboxColumns = `id, aggregate_type, aggregate_id, event_type, payload,
       source_provider, source_endpoint, source_event_id, coalesce(destination, ''),
       created_at, attempts, coalesce(claim_token, 0), coalesce(last_error, ''), published_at`

	// Each claimed row gets its own token: the counter's value plus the row's rank in
	// the claim. sqlSequenceAdvance then moves the counter past the largest of them in
	// the same write transaction, so tokens only grow: a later claim of the same row
	// always holds a larger one.
	sqlOutboxClaim = `
UPDATE outbox
   SET attempts     = outbox.attempts + 1,
       available_at = ` + now + ` + ?2,
       claim_token  = (SELECT value FROM hookinbox_sequence WHERE name = 'claim_token') + picked.rank
  FROM (SELECT id, row_number() OVER (ORDER BY available_at, id) AS rank
          FROM outbox
         WHERE published_at IS NULL
           AND available_at <= ` + now + `
           AND attempts < ?3
           AND coalesce(destination, '') IN (SELECT value FROM json_each(?4))
         ORDER BY available_at, id
         LIMIT ?1) AS picked
 WHERE outbox.id = picked.id
RETURNING ` + sqlOutboxColumns

	sqlSequenceAdvance = `
UPDATE hookinbox_sequence SET value = max(value, ?1) WHERE name = 'claim_token'`

	sqlSequenceNext = `
UPDATE hookinbox_sequence SET value = value + 1 WHERE name = 'claim_token' RETURNING value`

	// The fence: a dispatcher whose lease ran out holds an older token and changes
	// nothing.
	sqlOutboxMarkPublished = `
UPDATE outbox
   SET published_at = ` + now + `, last_error = NULL
 WHERE id = ?1 AND claim_token = ?2 AND published_at IS NULL`

	sqlOutboxRecordFailure = `
UPDATE outbox
   SET last_error   = ?3,
       available_at = ` + now + ` + ?4
 WHERE id = ?1 AND claim_token = ?2 AND published_at IS NULL`

	sqlOutboxList = `
SELECT ` + sqlOutboxColumns + `
  FROM outbox
 WHERE (NOT ?1 OR (published_at IS NULL AND attempts >= ?3))
   AND (NOT ?2 OR published_at IS NULL)
 ORDER BY id DESC
 LIMIT ?4`

	sqlOutboxStats = `
SELECT count(*),
       coalesce(` + now + ` - min(created_at), 0),
       count(*) FILTER (WHERE attempts >= ?1)
  FROM outbox
 WHERE published_at IS NULL`

	sqlOutboxRetryOne = `
UPDATE outbox SET attempts = 0, available_at = ` + now + `
 WHERE id = ?1 AND published_at IS NULL`

	sqlOutboxRetryNeedsReview = `
UPDATE outbox SET attempts = 0, available_at = ` + now + `
 WHERE published_at IS NULL AND attempts >= ?1`

	// The effect's state and whether its lease still runs, read first so that a
	// caller polling a key another holds writes nothing.
	sqlEffectGet = `
SELECT state = 'done', result, lease_until, lease_until >= ` + now + `
  FROM effects
 WHERE key = ?1`

	// Takes the key when it is new, or when its holder's lease ran out; a done key is
	// never taken. The guard repeats the read's decision, so the statement is right
	// even outside a write transaction.
	sqlEffectClaim = `
INSERT INTO effects (key, state, token, lease_until)
VALUES (?1, 'pending', ?2, ` + now + ` + ?3)
ON CONFLICT (key) DO UPDATE
   SET token       = excluded.token,
       lease_until = excluded.lease_until
 WHERE effects.state = 'pending' AND effects.lease_until < ` + now + `
RETURNING token`

	sqlEffectComplete = `
UPDATE effects
   SET state = 'done', result = ?3, completed_at = ` + now + `
 WHERE key = ?1 AND token = ?2 AND state = 'pending'`

	sqlEffectRelease = `DELETE FROM effects WHERE key = ?1 AND token = ?2 AND state = 'pending'`
)
