-- Version 4: what the operator console reads and writes (the same tables and columns
-- as PostgreSQL's; timestamps in unix microseconds).

-- One row per finished processing attempt of a receipt, written by the worker with
-- the statement that records the attempt's end. error is NULL for a success,
-- next_retry_at NULL unless the receipt was given another attempt. Deleted by cleanup
-- with the receipts' retention.
CREATE TABLE hookinbox_attempt (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    provider      TEXT    NOT NULL,
    endpoint      TEXT    NOT NULL,
    event_id      TEXT    NOT NULL,
    attempt       INTEGER NOT NULL,
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    worker        TEXT    NOT NULL,
    error         TEXT,
    next_retry_at INTEGER
);
CREATE INDEX hookinbox_attempt_receipt ON hookinbox_attempt (provider, endpoint, event_id, id);
CREATE INDEX hookinbox_attempt_finished_at ON hookinbox_attempt (finished_at);

-- One row per finished delivery of an outbox message, written with its result, only
-- when the dispatcher's fencing token is still the message's.
CREATE TABLE hookinbox_delivery (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    outbox_id     INTEGER NOT NULL,
    attempt       INTEGER NOT NULL,
    claim_token   INTEGER NOT NULL,
    finished_at   INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    error         TEXT,
    next_retry_at INTEGER
);
CREATE INDEX hookinbox_delivery_message ON hookinbox_delivery (outbox_id, id);
CREATE INDEX hookinbox_delivery_finished_at ON hookinbox_delivery (finished_at);

-- Every operator action taken through the console. Never updated or deleted.
CREATE TABLE hookinbox_audit (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    actor  TEXT    NOT NULL,
    action TEXT    NOT NULL,
    target TEXT    NOT NULL,
    rows   INTEGER NOT NULL,
    note   TEXT
);

-- The failure's error with ids and numbers masked, so receipts needing review group
-- by cause.
ALTER TABLE hookinbox_inbox ADD COLUMN error_fingerprint TEXT;

-- (hookinbox_inbox_received_at is already a b-tree on SQLite: the console's key-set
-- pages use it.)

CREATE INDEX hookinbox_outbox_source
    ON hookinbox_outbox (source_provider, source_endpoint, source_event_id);

CREATE INDEX hookinbox_inbox_processed_at ON hookinbox_inbox (processed_at);
