-- Version 5: where a receipt came from, and where a backfill stopped.

-- origin is NULL for a webhook delivery (every receipt from before this version was
-- one), 'backfill' for an event fetched from the provider's API by hookinbox backfill,
-- and 'reconcile' for an object's state fed by hookinbox reconcile --repair. It is set
-- only on a receipt that the backfill or reconcile itself inserted, never on one that
-- a delivery had inserted first.
ALTER TABLE hookinbox_inbox ADD COLUMN origin TEXT;

-- One row per backfill source (provider, endpoint and filter): the cursor after the
-- last event fed, so that a run that was stopped resumes there. done is set when a run
-- reached the end of the provider's list; the next run starts over. Times are Unix
-- microseconds, like the other tables'.
CREATE TABLE hookinbox_backfill_checkpoint (
    name       TEXT    PRIMARY KEY,
    cursor     TEXT    NOT NULL DEFAULT '',
    events     INTEGER NOT NULL DEFAULT 0,
    done       INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    updated_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000)
) STRICT;
