-- Version 3: hookinbox owns only hookinbox_* objects, and every receipt and outbox
-- message records its own state.

-- A database created before this version has the old, unprefixed names (webhook_inbox,
-- outbox, effects) and the billing tables beside them. SQLite has no procedural blocks
-- to rename conditionally, so Migrate renames hookinbox's tables in place, with their
-- rows, in Go, in this migration's transaction just before this file runs, and only
-- when webhook_inbox exists and hookinbox_inbox does not (see legacyRename in
-- migrate.go). On a database created at this version hookinbox_inbox already exists and
-- nothing is renamed, so an application's own table named webhook_inbox or outbox is
-- never touched. The billing tables (invoices, ledger_entries, billing_anomalies) are
-- left where they are: they belong to the billing package, whose own migrations adopt
-- them. A renamed table keeps its payload check's old name (webhook_inbox_payload_is_json,
-- outbox_payload_is_json): SQLite cannot rename a constraint without rebuilding the
-- table, and the driver recognises either name.

-- state is the row's own record of where it stands, so that every process and the
-- operator commands agree on it without sharing a configuration:
--   pending       waiting for (or held by) a worker
--   processed     its handler's work is committed (or there was nothing to do)
--   needs_review  it used every attempt it was allowed and waits for a person
--   discarded     a person decided it is not to be processed
-- max_attempts is the attempt limit of the process that last took the row (the receiver
-- at insert, each worker at claim), so that the limit a row was failed against is kept
-- with it.
--
-- SQLite cannot change a column's default after adding it, so the column is added with
-- the default of new rows, 'pending' (adding it rewrites nothing), and the processed
-- rows are then updated: one pass over the history kept. Rows that had used 10 attempts
-- (the default limit) are put to review; the first claim after this migration puts
-- those of any lower limit there too.
ALTER TABLE hookinbox_inbox
    ADD COLUMN state TEXT NOT NULL DEFAULT 'pending'
        CONSTRAINT hookinbox_inbox_state_check CHECK (state IN ('pending', 'processed', 'needs_review', 'discarded'));
ALTER TABLE hookinbox_inbox ADD COLUMN max_attempts INTEGER;
UPDATE hookinbox_inbox
   SET state = CASE WHEN processed_at IS NOT NULL THEN 'processed' ELSE 'needs_review' END
 WHERE processed_at IS NOT NULL OR attempts >= 10;

-- What workers claim from and operators count: only unprocessed rows, so the index stays
-- small however much history is kept. SQLite uses a partial index only for a query that
-- repeats its condition, so the queries that use it say state IN ('pending',
-- 'needs_review') as well as the state they want.
CREATE INDEX hookinbox_inbox_unprocessed
    ON hookinbox_inbox (state, available_at) WHERE state IN ('pending', 'needs_review');

ALTER TABLE hookinbox_outbox
    ADD COLUMN state TEXT NOT NULL DEFAULT 'pending'
        CONSTRAINT hookinbox_outbox_state_check CHECK (state IN ('pending', 'published', 'needs_review', 'discarded'));
ALTER TABLE hookinbox_outbox ADD COLUMN max_attempts INTEGER;
UPDATE hookinbox_outbox
   SET state = CASE WHEN published_at IS NOT NULL THEN 'published' ELSE 'needs_review' END
 WHERE published_at IS NOT NULL OR attempts >= 20;

CREATE INDEX hookinbox_outbox_unpublished
    ON hookinbox_outbox (state, available_at) WHERE state IN ('pending', 'needs_review');

-- body_sha256 is the SHA-256 of the verified body as received (NULL for receipts from
-- before this version). A later delivery with the same key but another body is still
-- a duplicate (the first body won), yet it is counted in conflicts, with the last such
-- body's hash in conflict_sha256.
ALTER TABLE hookinbox_inbox ADD COLUMN body_sha256 BLOB;
ALTER TABLE hookinbox_inbox ADD COLUMN conflicts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hookinbox_inbox ADD COLUMN conflict_sha256 BLOB;
