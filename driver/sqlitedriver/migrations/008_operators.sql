-- Version 8: what operators need at 2 a.m. (PostgreSQL's migration 008, in SQLite's
-- dialect): endpoints paused in the database, outbox failures grouped by cause, the
-- overview's per-minute counts, and what a delivery carried besides its body.

-- One row per endpoint that was ever paused, resumed or given a configured default;
-- every claim reads it, so every process obeys a pause.
CREATE TABLE hookinbox_endpoint (
    endpoint   TEXT    NOT NULL PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    changed_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    changed_by TEXT    NOT NULL
) STRICT;

ALTER TABLE hookinbox_outbox ADD COLUMN error_fingerprint TEXT;

CREATE INDEX hookinbox_outbox_created_at ON hookinbox_outbox (created_at);

-- conflict_at: when the last delivery with another body came. request: what the
-- request carried besides its body (JSON), NULL when none was recorded.
ALTER TABLE hookinbox_inbox ADD COLUMN conflict_at INTEGER;
ALTER TABLE hookinbox_inbox ADD COLUMN request TEXT;

-- Counts per minute (unix microseconds of the minute's start) and endpoint, rolled up
-- for minutes that ended a few minutes ago; what came after is counted live.
CREATE TABLE hookinbox_minute (
    minute    INTEGER NOT NULL,
    endpoint  TEXT    NOT NULL,
    received  INTEGER NOT NULL DEFAULT 0,
    processed INTEGER NOT NULL DEFAULT 0,
    failed    INTEGER NOT NULL DEFAULT 0,
    exhausted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, endpoint)
) STRICT;
CREATE TABLE hookinbox_rollup (
    name    TEXT    NOT NULL PRIMARY KEY,
    through INTEGER NOT NULL
) STRICT;

-- What waits per endpoint, as the last roll-up counted it: the overview shows it, with
-- its time, rather than count a large backlog live at every view.
CREATE TABLE hookinbox_backlog (
    endpoint            TEXT    NOT NULL PRIMARY KEY,
    pending             INTEGER NOT NULL,
    needs_review        INTEGER NOT NULL,
    oldest_pending      INTEGER,
    outbox_pending      INTEGER NOT NULL,
    outbox_needs_review INTEGER NOT NULL,
    counted_at          INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000)
) STRICT;

-- The unprocessed partial indexes also hold what the overview counts per endpoint, so
-- that its counts read the index alone; the claim still reads them in (state,
-- available_at) order.
DROP INDEX hookinbox_inbox_unprocessed;
CREATE INDEX hookinbox_inbox_unprocessed
    ON hookinbox_inbox (state, available_at, endpoint, received_at) WHERE state IN ('pending', 'needs_review');
DROP INDEX hookinbox_outbox_unpublished;
CREATE INDEX hookinbox_outbox_unpublished
    ON hookinbox_outbox (state, available_at, source_endpoint) WHERE state IN ('pending', 'needs_review');
