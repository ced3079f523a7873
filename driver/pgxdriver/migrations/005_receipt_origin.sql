-- Version 5: where a receipt came from, and where a backfill stopped.

-- origin is NULL for a webhook delivery (every receipt from before this version was
-- one), 'backfill' for an event fetched from the provider's API by hookinbox backfill,
-- and 'reconcile' for an object's state fed by hookinbox reconcile --repair. It is set
-- only on a receipt that the backfill or reconcile itself inserted, never on one that
-- a delivery had inserted first. Added without a default: no rewrite of the history.
ALTER TABLE hookinbox_inbox ADD COLUMN origin text;

-- One row per backfill source (provider, endpoint and filter): the cursor after the
-- last event fed, so that a run that was stopped resumes there. done is set when a run
-- reached the end of the provider's list; the next run starts over.
CREATE TABLE hookinbox_backfill_checkpoint (
    name       text        PRIMARY KEY,
    cursor     text        NOT NULL DEFAULT '',
    events     bigint      NOT NULL DEFAULT 0,
    done       boolean     NOT NULL DEFAULT false,
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
