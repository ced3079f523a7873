-- The SQLite schema keeps PostgreSQL's table and column names. Timestamps are INTEGER
-- unix microseconds: they sort and compare as numbers, and keep sub-second order.
-- The database's clock (unixepoch('now', 'subsec'), millisecond resolution) fills the
-- defaults, as now() does in PostgreSQL. Tables are STRICT, so a value of the wrong
-- type (a time bound as text, a payload bound as a blob) is refused, not coerced.
--
-- Every object hookinbox creates carries the hookinbox_ prefix, so that it never
-- collides with the application's own tables. (Databases created before schema
-- version 3 had unprefixed names; Migrate renames them in place before migration 003.)

-- The receipt ledger. Its primary key is what makes a delivery count once: a copy that
-- arrives after commit finds it, and concurrent copies are serialised by the write
-- lock that every transaction takes at BEGIN IMMEDIATE.
CREATE TABLE hookinbox_inbox (
    provider     TEXT    NOT NULL,
    endpoint     TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    event_type   TEXT    NOT NULL,
    -- The verified body, byte for byte. Named so the driver can tell a refused payload
    -- (driver.ErrInvalidInput) from any other CHECK failure.
    payload      TEXT    NOT NULL CONSTRAINT hookinbox_inbox_payload_is_json CHECK (json_valid(payload)),
    received_at  INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    available_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT,
    processed_at INTEGER,
    outcome      TEXT,
    PRIMARY KEY (provider, endpoint, event_id)
) STRICT;

-- Recent arrivals (status) and retention (cleanup) scan by time.
CREATE INDEX hookinbox_inbox_received_at ON hookinbox_inbox (received_at);

-- Downstream notifications, written by handlers in the inbox transaction, with the
-- dispatcher's columns (PostgreSQL adds them in its migration 002). AUTOINCREMENT: an
-- id is never reused after a delete, because sinks derive idempotency keys from it.
CREATE TABLE hookinbox_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    aggregate_type  TEXT    NOT NULL,
    aggregate_id    TEXT    NOT NULL,
    event_type      TEXT    NOT NULL,
    payload         TEXT    NOT NULL CONSTRAINT hookinbox_outbox_payload_is_json CHECK (json_valid(payload)),
    source_provider TEXT    NOT NULL,
    source_endpoint TEXT    NOT NULL,
    source_event_id TEXT    NOT NULL,
    destination     TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    available_at    INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    claim_token     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    published_at    INTEGER
) STRICT;
