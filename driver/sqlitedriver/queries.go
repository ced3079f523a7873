package sqlitedriver

// All of the SQLite driver's SQL. Values are always bound parameters; the only
// concatenation is of the constants below, and of a version table's quoted name (a
// constant of the code, never input).
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

	// The version tables' statements take the table's quoted name (a constant of the
	// code, never input) for %s.
	sqlMigrationTable = `
CREATE TABLE IF NOT EXISTS %s (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL DEFAULT ` + now + `
) STRICT`

	sqlMigrationRecord = `INSERT INTO %s (version, name) VALUES (?1, ?2)`

	sqlTableExists = `
SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE`

	sqlReceiptColumns = `provider, endpoint, event_id, event_type, payload, received_at, available_at,
       attempts, coalesce(max_attempts, 0), coalesce(last_error, ''), processed_at,
       coalesce(outcome, ''), state, body_sha256, conflicts, coalesce(trace_parent, '')`

	// DO NOTHING turns a second copy into a duplicate. Copies never race inside
	// SQLite: the transaction that runs this took the database's write lock at BEGIN
	// IMMEDIATE (or, on its own, the statement takes it as it starts), so a concurrent
	// copy waits for that transaction to end, then inserts if it rolled back or finds
	// the row if it committed: PostgreSQL's wait on the unique index, for the whole
	// file.
	sqlInboxInsert = `
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        received_at, processed_at, outcome, attempts, last_error, available_at, max_attempts, state, body_sha256,
        trace_parent, request)
VALUES (?1, ?2, ?3, ?4, ?5,
        ` + now + `, CASE WHEN ?6 THEN ` + now + ` END, ?7, ?8, ?9, ` + now + ` + ?10, ?11,
        CASE WHEN ?6 THEN 'processed'
             WHEN ?8 >= ?11 THEN 'needs_review'
             ELSE 'pending' END, ?12, nullif(?13, ''), ?14)
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING 1`

	// sqlInboxInsert for a pending receipt leased at once (InboxInsertParams.Lease,
	// ?10 in microseconds): its first attempt counted and available when the lease
	// ends, as a claim leaves it; or parked at ?9 (driver.ParkedAt), no attempt
	// counted, when its endpoint is paused, as a claim parks it. (WHERE true: SQLite's
	// parser needs it between a SELECT and ON CONFLICT.)
	sqlInboxInsertLeased = `
INSERT INTO hookinbox_inbox
       (provider, endpoint, event_id, event_type, payload,
        received_at, attempts, available_at, max_attempts, state, body_sha256, trace_parent, request)
SELECT ?1, ?2, ?3, ?4, ?5,
       ` + now + `, CASE WHEN p.paused THEN 0 ELSE 1 END,
       CASE WHEN p.paused THEN ?9 ELSE ` + now + ` + ?10 END, ?6, 'pending', ?7, nullif(?8, ''), ?11
  FROM (SELECT ?2 IN (SELECT endpoint FROM hookinbox_endpoint WHERE paused) AS paused) AS p
 WHERE true
ON CONFLICT (provider, endpoint, event_id) DO NOTHING
RETURNING 1`

	// No FOR UPDATE in SQLite, and none needed: the processing transaction began
	// IMMEDIATE and holds the write lock of the whole database until it ends, so no
	// other worker can process or change this row meanwhile. The re-check of the
	// pending state is what turns a worker whose lease ran out (and whose receipt
	// another worker completed) into a no-op.
	sqlInboxLockUnprocessed = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3
   AND state = 'pending'`

	sqlInboxMarkProcessed = `
UPDATE hookinbox_inbox
   SET state = 'processed', processed_at = ` + now + `, outcome = ?4, last_error = NULL, error_fingerprint = NULL
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3`

	// The attempt history row of an attempt whose end was just recorded on the receipt
	// (processed, or failed with its retry time), in the same transaction; ?4 is how
	// many microseconds ago it started.
	sqlAttemptRecord = `
INSERT INTO hookinbox_attempt (provider, endpoint, event_id, attempt, started_at, worker, error, next_retry_at)
SELECT provider, endpoint, event_id, attempts, ` + now + ` - ?4, ?5, ?6,
       CASE WHEN state = 'pending' THEN available_at END
  FROM hookinbox_inbox
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3`

	// The claim commits on its own, before processing starts, so an attempt is counted
	// even when the worker dies mid-event; a row that kills every worker therefore stops
	// at max attempts instead of being taken forever. Such a row is found pending with
	// its attempts used once its last lease ran out: it is put to review here, and the
	// caller claims again. No SKIP LOCKED: a writing statement holds the database's
	// only write lock from its start, so there is never a row locked by another claim
	// to skip, and the pick and the update see the same state. SET reads the row as it
	// was before the update. The pick repeats the condition of the partial index
	// hookinbox_inbox_unprocessed, without which SQLite would not use it.
	//
	// A picked row of a paused endpoint (hookinbox_endpoint) is parked instead: its
	// available_at becomes ?5 (driver.ParkedAt), out of every later claim's way, and it
	// is returned with the pseudo-state 'paused', which the caller drops. A resume
	// makes the endpoint's parked rows available now.
	sqlInboxClaim = `
UPDATE hookinbox_inbox
   SET attempts     = CASE WHEN picked.park OR attempts >= ?3 THEN attempts ELSE attempts + 1 END,
       state        = CASE WHEN picked.park THEN state WHEN attempts >= ?3 THEN 'needs_review' ELSE 'pending' END,
       max_attempts = CASE WHEN picked.park THEN max_attempts ELSE ?3 END,
       available_at = CASE WHEN picked.park THEN ?5 ELSE ` + now + ` + ?2 END
  FROM (SELECT rowid AS rid, endpoint IN (SELECT endpoint FROM hookinbox_endpoint WHERE paused) AS park
          FROM hookinbox_inbox
         WHERE state IN ('pending', 'needs_review')
           AND state = 'pending'
           AND available_at <= ` + now + `
           AND endpoint IN (SELECT value FROM json_each(?1))
         ORDER BY available_at
         LIMIT ?4) AS picked
 WHERE hookinbox_inbox.rowid = picked.rid
RETURNING ` + sqlClaimedReceiptColumns

	// sqlReceiptColumns, with a parked row's state read as 'paused' and no payload
	// (NULL, scanned as none): the processing transaction's lock reads it.
	sqlClaimedReceiptColumns = `provider, endpoint, event_id, event_type, NULL, received_at, available_at,
       attempts, coalesce(max_attempts, 0), coalesce(last_error, ''), processed_at,
       coalesce(outcome, ''), CASE WHEN available_at = ?5 THEN 'paused' ELSE state END, body_sha256, conflicts,
       coalesce(trace_parent, '')`

	sqlInboxExtendLease = `
UPDATE hookinbox_inbox
   SET available_at = ` + now + ` + ?4
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3 AND state = 'pending' AND available_at <> ?5`

	// Only while pending: a row another worker completed after our lease ran out must
	// keep its processed state. The limit is the row's own, stored by its claim (a NULL
	// limit compares as unknown: the row stays pending).
	sqlInboxRecordFailure = `
UPDATE hookinbox_inbox
   SET last_error   = ?4,
       error_fingerprint = ?6,
       available_at = ` + now + ` + ?5,
       state        = CASE WHEN attempts >= max_attempts THEN 'needs_review' ELSE 'pending' END
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3
   AND state = 'pending'`

	// Counts a conflict only when both hashes are known and differ.
	sqlInboxNoteDuplicate = `
UPDATE hookinbox_inbox
   SET conflicts = conflicts + 1, conflict_sha256 = ?4, conflict_at = ` + now + `
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3
   AND body_sha256 IS NOT NULL AND body_sha256 <> ?4
RETURNING body_sha256`

	sqlInboxGet = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3`

	// rowid breaks ties between receipts of the same millisecond in arrival order.
	sqlInboxList = `
SELECT ` + sqlReceiptColumns + `
  FROM hookinbox_inbox
 WHERE (?1 = '' OR endpoint = ?1)
   AND (NOT ?2 OR state = 'needs_review')
   AND (NOT ?3 OR state IN ('pending', 'needs_review'))
   AND (NOT ?5 OR conflicts > 0)
 ORDER BY received_at DESC, rowid DESC
 LIMIT ?4`

	sqlInboxStats = `
SELECT count(*),
       coalesce(` + now + ` - min(received_at), 0),
       count(*) FILTER (WHERE state = 'needs_review'),
       coalesce(` + now + ` - min(received_at) FILTER (WHERE state = 'pending'), 0)
  FROM hookinbox_inbox
 WHERE state IN ('pending', 'needs_review')`

	sqlInboxReceivedByType = `
SELECT event_type, count(*)
  FROM hookinbox_inbox
 WHERE received_at > ` + now + ` - ?1
 GROUP BY event_type
 ORDER BY 2 DESC, 1`

	sqlInboxRetryOne = `
UPDATE hookinbox_inbox
   SET attempts = 0, available_at = ` + now + `, state = 'pending'
 WHERE provider = ?1 AND endpoint = ?2 AND event_id = ?3
   AND state IN ('pending', 'needs_review')`

	sqlInboxRetryNeedsReview = `
UPDATE hookinbox_inbox
   SET attempts = 0, available_at = ` + now + `, state = 'pending'
 WHERE state IN ('pending', 'needs_review') AND state = 'needs_review'`

	// received_at bounds processed_at from below, so its condition lets the index on
	// received_at narrow the scan without changing the result.
	sqlInboxDeleteProcessed = `
DELETE FROM hookinbox_inbox
 WHERE rowid IN (
        SELECT rowid
          FROM hookinbox_inbox
         WHERE received_at < ` + now + ` - ?1
           AND state = 'processed'
           AND processed_at < ` + now + ` - ?1
         LIMIT ?2)`

	// Purged payloads read as JSON null; the key and body_sha256 stay.
	sqlInboxPurgePayloads = `
UPDATE hookinbox_inbox SET payload = 'null'
 WHERE rowid IN (
        SELECT rowid
          FROM hookinbox_inbox
         WHERE state = 'processed'
           AND processed_at < ` + now + ` - ?1
           AND payload <> 'null'
         LIMIT ?2)`

	sqlInboxCountPurgeable = `
SELECT count(*)
  FROM hookinbox_inbox
 WHERE state = 'processed'
   AND processed_at < ` + now + ` - ?1
   AND payload <> 'null'`

	sqlInboxCountProcessed = `
SELECT count(*)
  FROM hookinbox_inbox
 WHERE received_at < ` + now + ` - ?1
   AND state = 'processed'
   AND processed_at < ` + now + ` - ?1`

	// Published messages and recorded effects older than the retention. Ids never come
	// back (AUTOINCREMENT), so deleting a published message cannot make a later one's
	// idempotency key collide with it.
	sqlOutboxDeletePublished = `
DELETE FROM hookinbox_outbox
 WHERE rowid IN (SELECT rowid FROM hookinbox_outbox
                  WHERE state = 'published' AND published_at < ` + now + ` - ?1
                  LIMIT ?2)`

	sqlOutboxCountPublished = `
SELECT count(*) FROM hookinbox_outbox
 WHERE state = 'published' AND published_at < ` + now + ` - ?1`

	sqlAttemptDeleteOld = `
DELETE FROM hookinbox_attempt
 WHERE id IN (SELECT id FROM hookinbox_attempt
               WHERE finished_at < ` + now + ` - ?1
               LIMIT ?2)`

	sqlAttemptCountOld = `
SELECT count(*) FROM hookinbox_attempt
 WHERE finished_at < ` + now + ` - ?1`

	sqlEffectDeleteDone = `
DELETE FROM hookinbox_effect
 WHERE rowid IN (SELECT rowid FROM hookinbox_effect
                  WHERE state = 'done' AND completed_at < ` + now + ` - ?1
                  LIMIT ?2)`

	sqlEffectCountDone = `
SELECT count(*) FROM hookinbox_effect
 WHERE state = 'done' AND completed_at < ` + now + ` - ?1`

	sqlOutboxInsert = `
INSERT INTO hookinbox_outbox (aggregate_type, aggregate_id, event_type, payload,
                              source_provider, source_endpoint, source_event_id, destination, trace_parent)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, nullif(?9, ''))
RETURNING id`

	sqlOutboxColumns = `id, aggregate_type, aggregate_id, event_type, payload,
       source_provider, source_endpoint, source_event_id, coalesce(destination, ''),
       created_at, attempts, coalesce(max_attempts, 0), coalesce(claim_token, 0),
       coalesce(last_error, ''), published_at, state, coalesce(trace_parent, '')`

	// Each claimed row gets its own token: the counter's value plus the row's rank in
	// the claim. sqlSequenceAdvance then moves the counter past the largest of them in
	// the same write transaction, so tokens only grow: a later claim of the same row
	// always holds a larger one. A row whose attempts are used (its dispatcher died
	// during the last one) is put to review instead. The pick repeats the condition of
	// the partial index hookinbox_outbox_unpublished, without which SQLite would not
	// use it. A message whose source endpoint is paused is parked at ?6
	// (driver.ParkedAt), as sqlInboxClaim parks receipts, and returned as 'paused'.
	sqlOutboxClaim = `
UPDATE hookinbox_outbox
   SET attempts     = CASE WHEN picked.park OR hookinbox_outbox.attempts >= ?3 THEN hookinbox_outbox.attempts
                           ELSE hookinbox_outbox.attempts + 1 END,
       state        = CASE WHEN picked.park THEN hookinbox_outbox.state
                           WHEN hookinbox_outbox.attempts >= ?3 THEN 'needs_review' ELSE 'pending' END,
       max_attempts = CASE WHEN picked.park THEN hookinbox_outbox.max_attempts ELSE ?3 END,
       available_at = CASE WHEN picked.park THEN ?6 ELSE ` + now + ` + ?2 END,
       claim_token  = CASE WHEN picked.park THEN hookinbox_outbox.claim_token
                           ELSE (SELECT value FROM hookinbox_sequence WHERE name = 'claim_token') + picked.rank END
  FROM (SELECT c.id, row_number() OVER (ORDER BY c.available_at, c.id) AS rank,
               c.source_endpoint IN (SELECT endpoint FROM hookinbox_endpoint WHERE paused) AS park
          FROM hookinbox_outbox AS c
         WHERE c.state IN ('pending', 'needs_review')
           AND c.state = 'pending'
           AND c.available_at <= ` + now + `
           AND coalesce(c.destination, '') = ?4
           AND (NOT ?5 OR NOT EXISTS (
                SELECT 1
                  FROM hookinbox_outbox AS e
                 WHERE e.aggregate_type = c.aggregate_type
                   AND e.aggregate_id = c.aggregate_id
                   AND e.state IN ('pending', 'needs_review')
                   AND e.id < c.id
                   AND coalesce(e.destination, '') = ?4))
         ORDER BY c.available_at, c.id
         LIMIT ?1) AS picked
 WHERE hookinbox_outbox.id = picked.id
RETURNING id, aggregate_type, aggregate_id, event_type, payload,
       source_provider, source_endpoint, source_event_id, coalesce(destination, ''),
       created_at, attempts, coalesce(max_attempts, 0), coalesce(claim_token, 0),
       coalesce(last_error, ''), published_at, CASE WHEN available_at = ?6 THEN 'paused' ELSE state END,
       coalesce(trace_parent, '')`

	sqlSequenceAdvance = `
UPDATE hookinbox_sequence SET value = max(value, ?1) WHERE name = 'claim_token'`

	sqlSequenceNext = `
UPDATE hookinbox_sequence SET value = value + 1 WHERE name = 'claim_token' RETURNING value`

	// The fence: a dispatcher whose lease ran out holds an older token and changes
	// nothing.
	sqlOutboxMarkPublished = `
UPDATE hookinbox_outbox
   SET state = 'published', published_at = ` + now + `, last_error = NULL
 WHERE id = ?1 AND claim_token = ?2 AND state = 'pending'`

	sqlOutboxRecordFailure = `
UPDATE hookinbox_outbox
   SET last_error        = ?3,
       error_fingerprint = ?5,
       available_at      = ` + now + ` + ?4,
       state        = CASE WHEN attempts >= max_attempts THEN 'needs_review' ELSE 'pending' END
 WHERE id = ?1 AND claim_token = ?2 AND state = 'pending'`

	// The delivery history row of a result just recorded on message ?1, in the same
	// transaction; ?2 is the error (NULL: published).
	sqlDeliveryRecord = `
INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token, error, next_retry_at)
SELECT id, attempts, claim_token, ?2, CASE WHEN state = 'pending' THEN available_at END
  FROM hookinbox_outbox WHERE id = ?1`

	sqlDeliveryDeleteOld = `
DELETE FROM hookinbox_delivery
 WHERE id IN (SELECT id FROM hookinbox_delivery
               WHERE finished_at < ` + now + ` - ?1
               LIMIT ?2)`

	sqlDeliveryCountOld = `
SELECT count(*) FROM hookinbox_delivery
 WHERE finished_at < ` + now + ` - ?1`

	sqlOutboxList = `
SELECT ` + sqlOutboxColumns + `
  FROM hookinbox_outbox
 WHERE (NOT ?1 OR state = 'needs_review')
   AND (NOT ?2 OR state IN ('pending', 'needs_review'))
 ORDER BY id DESC
 LIMIT ?3`

	sqlOutboxStats = `
SELECT count(*),
       coalesce(` + now + ` - min(created_at), 0),
       count(*) FILTER (WHERE state = 'needs_review')
  FROM hookinbox_outbox
 WHERE state IN ('pending', 'needs_review')`

	sqlOutboxRetryOne = `
UPDATE hookinbox_outbox SET attempts = 0, available_at = ` + now + `, state = 'pending'
 WHERE id = ?1 AND state IN ('pending', 'needs_review')`

	sqlOutboxRetryNeedsReview = `
UPDATE hookinbox_outbox SET attempts = 0, available_at = ` + now + `, state = 'pending'
 WHERE state IN ('pending', 'needs_review') AND state = 'needs_review'`

	// The effect's state and whether its lease still runs, read first so that a
	// caller polling a key another holds writes nothing.
	sqlEffectGet = `
SELECT state = 'done', result, lease_until, lease_until >= ` + now + `
  FROM hookinbox_effect
 WHERE key = ?1`

	// Takes the key when it is new, or when its holder's lease ran out; a done key is
	// never taken. The guard repeats the read's decision, so the statement is right
	// even outside a write transaction.
	sqlEffectClaim = `
INSERT INTO hookinbox_effect (key, state, token, lease_until)
VALUES (?1, 'pending', ?2, ` + now + ` + ?3)
ON CONFLICT (key) DO UPDATE
   SET token       = excluded.token,
       lease_until = excluded.lease_until
 WHERE hookinbox_effect.state = 'pending' AND hookinbox_effect.lease_until < ` + now + `
RETURNING token`

	sqlEffectComplete = `
UPDATE hookinbox_effect
   SET state = 'done', result = ?3, completed_at = ` + now + `
 WHERE key = ?1 AND token = ?2 AND state = 'pending'`

	sqlEffectRelease = `DELETE FROM hookinbox_effect WHERE key = ?1 AND token = ?2 AND state = 'pending'`

	// One name for every delivery's mark in a shared transaction; each is released
	// before the next is taken. ROLLBACK TO keeps the transaction open.
	sqlSavepoint           = `SAVEPOINT hookinbox_delivery`
	sqlRollbackToSavepoint = `ROLLBACK TO SAVEPOINT hookinbox_delivery`
	sqlReleaseSavepoint    = `RELEASE SAVEPOINT hookinbox_delivery`
)

// sqlLegacyRename moves a database created before schema version 3 to hookinbox's own
// names (see legacyRename). ALTER TABLE ... RENAME TO keeps the names of a table's
// indexes, and SQLite cannot rename an index: the old ones are dropped, and the one
// that stays is made again under its new name. The partial indexes are replaced by
// migration 003's. Renaming keeps each table's rows and rowids, and sqlite_sequence
// follows hookinbox_outbox's AUTOINCREMENT, so no id is reused.
var sqlLegacyRename = []string{
	`DROP INDEX IF EXISTS webhook_inbox_unprocessed`,
	`DROP INDEX IF EXISTS webhook_inbox_received_at`,
	`DROP INDEX IF EXISTS outbox_pending`,
	`ALTER TABLE webhook_inbox RENAME TO hookinbox_inbox`,
	`ALTER TABLE outbox RENAME TO hookinbox_outbox`,
	`ALTER TABLE effects RENAME TO hookinbox_effect`,
	`CREATE INDEX hookinbox_inbox_received_at ON hookinbox_inbox (received_at)`,
}
