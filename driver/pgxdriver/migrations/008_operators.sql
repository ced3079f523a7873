-- Version 8: what operators need at 2 a.m.: endpoints paused in the database, outbox
-- failures grouped by cause, the overview's per-minute counts, and what a delivery
-- carried besides its body.

-- One row per endpoint that was ever paused, resumed or given a configured default.
-- A paused endpoint still verifies and stores every delivery; its receipts and the
-- outbox messages its processing wrote wait, because every worker's and dispatcher's
-- claim reads this table in its own statement: no process has to be told. Rows are
-- kept after a resume (the database's state wins over a configured default from then
-- on).
CREATE TABLE hookinbox_endpoint (
    endpoint   text        PRIMARY KEY,
    paused     boolean     NOT NULL DEFAULT false,
    changed_at timestamptz NOT NULL DEFAULT now(),
    changed_by text        NOT NULL
);

-- The failed delivery's error with ids and numbers masked, as the inbox has it, so
-- that outbox messages needing review group by cause. NULL for failures before this
-- version.
ALTER TABLE hookinbox_outbox ADD COLUMN error_fingerprint text;

-- Redelivery by a filter of published messages bounds them by time; rows arrive in
-- time order, which is what BRIN needs.
CREATE INDEX hookinbox_outbox_created_at ON hookinbox_outbox USING brin (created_at);

-- conflict_at is when the last delivery with another body came (the first body's time
-- is received_at). request is what the request carried besides its body: method,
-- path, remote address and headers (credentials left out), as the receiver recorded
-- it; NULL when it recorded none. Both nullable: adding them rewrites no row.
ALTER TABLE hookinbox_inbox
    ADD COLUMN conflict_at timestamptz,
    ADD COLUMN request     jsonb;

-- Counts per minute and endpoint, rolled up from the inbox and the attempt history for
-- minutes that ended a few minutes ago, so that the console's overview reads a day of
-- them without counting a day of receipts: received, processed, failed attempts, and
-- attempts that put a receipt to review. hookinbox_rollup holds how far the roll-up
-- got; what came after is counted live.
CREATE TABLE hookinbox_minute (
    minute    timestamptz NOT NULL,
    endpoint  text        NOT NULL,
    received  bigint      NOT NULL DEFAULT 0,
    processed bigint      NOT NULL DEFAULT 0,
    failed    bigint      NOT NULL DEFAULT 0,
    exhausted bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, endpoint)
);
CREATE TABLE hookinbox_rollup (
    name    text        PRIMARY KEY,
    through timestamptz NOT NULL
);

-- What waits per endpoint, as the last roll-up counted it (receipts pending or needing
-- review, the oldest pending one's arrival, undelivered outbox messages): the overview
-- shows it, with its time, rather than count a large backlog live at every view.
CREATE TABLE hookinbox_backlog (
    endpoint            text        PRIMARY KEY,
    pending             bigint      NOT NULL,
    needs_review        bigint      NOT NULL,
    oldest_pending      timestamptz,
    outbox_pending      bigint      NOT NULL,
    outbox_needs_review bigint      NOT NULL,
    counted_at          timestamptz NOT NULL DEFAULT now()
);

-- The unprocessed partial indexes also carry what the overview counts per endpoint,
-- so that its counts are index-only scans of them. The claim still reads them in
-- (state, available_at) order. Rebuilding reads the inbox once, holding writes back
-- while it runs.
DROP INDEX hookinbox_inbox_unprocessed;
CREATE INDEX hookinbox_inbox_unprocessed
    ON hookinbox_inbox (state, available_at) INCLUDE (endpoint, received_at)
 WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL;
DROP INDEX hookinbox_outbox_unpublished;
CREATE INDEX hookinbox_outbox_unpublished
    ON hookinbox_outbox (state, available_at) INCLUDE (source_endpoint)
 WHERE state IN ('pending', 'needs_review') AND available_at IS NOT NULL;
