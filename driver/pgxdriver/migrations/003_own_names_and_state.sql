-- Version 3: hookinbox owns only hookinbox_* objects, and every receipt and outbox
-- message records its own state.

-- A database created before this version has the old, unprefixed names (webhook_inbox,
-- outbox, effects, outbox_claim_token_seq) and the billing tables beside them. Rename
-- hookinbox's objects in place, with their rows; the billing tables (invoices,
-- ledger_entries, billing_anomalies) are left where they are: they belong to the
-- billing package, whose own migrations adopt them. On a database created at this
-- version hookinbox_inbox already exists and nothing is renamed, so an application's
-- own table named webhook_inbox or outbox is never touched.
DO $$
BEGIN
    IF to_regclass('hookinbox_inbox') IS NULL AND to_regclass('webhook_inbox') IS NOT NULL THEN
        ALTER TABLE webhook_inbox RENAME TO hookinbox_inbox;
        ALTER INDEX webhook_inbox_pkey RENAME TO hookinbox_inbox_pkey;
        ALTER INDEX webhook_inbox_received_at RENAME TO hookinbox_inbox_received_at;
        -- Kept until the state is backfilled below: its condition is the backfill's.
        ALTER INDEX webhook_inbox_unprocessed RENAME TO hookinbox_inbox_v2_unprocessed;
        ALTER TABLE outbox RENAME TO hookinbox_outbox;
        ALTER INDEX outbox_pkey RENAME TO hookinbox_outbox_pkey;
        ALTER SEQUENCE outbox_id_seq RENAME TO hookinbox_outbox_id_seq;
        ALTER INDEX outbox_pending RENAME TO hookinbox_outbox_v2_pending;
        ALTER SEQUENCE outbox_claim_token_seq RENAME TO hookinbox_claim_token_seq;
        ALTER TABLE effects RENAME TO hookinbox_effect;
        ALTER INDEX effects_pkey RENAME TO hookinbox_effect_pkey;
        ALTER TABLE hookinbox_effect RENAME CONSTRAINT effects_state_check TO hookinbox_effect_state_check;
    END IF;
END
$$;

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
-- Added with the default 'processed', which needs no rewrite of the table however much
-- history it holds; only the unprocessed rows (few, and found through the old partial
-- index's condition) are then updated. Rows that had used 10 attempts (the default
-- limit) are put to review; the first claim after this migration puts those of any
-- lower limit there too.
ALTER TABLE hookinbox_inbox
    ADD COLUMN state text NOT NULL DEFAULT 'processed'
        CONSTRAINT hookinbox_inbox_state_check CHECK (state IN ('pending', 'processed', 'needs_review', 'discarded')),
    ADD COLUMN max_attempts integer;
UPDATE hookinbox_inbox
   SET state = CASE WHEN attempts >= 10 THEN 'needs_review' ELSE 'pending' END
 WHERE processed_at IS NULL;
ALTER TABLE hookinbox_inbox ALTER COLUMN state SET DEFAULT 'pending';

-- body_sha256 is the SHA-256 of the verified body as received (NULL for receipts from
-- before this version). A later delivery with the same key but another body is still
-- a duplicate (the first body won), yet it is counted in conflicts, with the last such
-- body's hash in conflict_sha256: a provider's bug, a replay with a changed body under
-- a leaked secret, or two senders sharing one id space.
ALTER TABLE hookinbox_inbox
    ADD COLUMN body_sha256     bytea,
    ADD COLUMN conflicts       integer NOT NULL DEFAULT 0,
    ADD COLUMN conflict_sha256 bytea;
DROP INDEX IF EXISTS hookinbox_inbox_v2_unprocessed;

-- What workers claim from and operators count: only unprocessed rows, so the index stays
-- small however much history is kept.
--
-- "available_at IS NOT NULL" is always true (the column is NOT NULL); it is in the
-- predicate so that only queries that say so, or that bound available_at (the claim),
-- can use this index. A lookup by key that also says state = 'pending' must use the
-- primary key: with statistics taken while few rows were pending (an ANALYZE before a
-- backlog built up, or no autovacuum), a generic plan judged this index nearly empty
-- and scanned every pending row for each batch of keys, which made draining a backlog
-- slower the larger it was.
CREATE INDEX hookinbox_inbox_unprocessed
    ON hookinbox_inbox (state, available_at)
 WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL;

ALTER TABLE hookinbox_outbox
    ADD COLUMN state text NOT NULL DEFAULT 'published'
        CONSTRAINT hookinbox_outbox_state_check CHECK (state IN ('pending', 'published', 'needs_review', 'discarded')),
    ADD COLUMN max_attempts integer;
UPDATE hookinbox_outbox
   SET state = CASE WHEN attempts >= 20 THEN 'needs_review' ELSE 'pending' END
 WHERE published_at IS NULL;
ALTER TABLE hookinbox_outbox ALTER COLUMN state SET DEFAULT 'pending';
DROP INDEX IF EXISTS hookinbox_outbox_v2_pending;

-- The same predicate as the inbox's, for the same reason.
CREATE INDEX hookinbox_outbox_unpublished
    ON hookinbox_outbox (state, available_at)
 WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL;
