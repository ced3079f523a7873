-- The SQLite schema keeps PostgreSQL's table and column names. Timestamps are INTEGER
-- unix microseconds: they sort and compare as numbers, and keep sub-second order.
-- The database's clock (unixepoch('now', 'subsec'), millisecond resolution) fills the
-- defaults, as now() does in PostgreSQL. Tables are STRICT, so a value of the wrong
-- type (a time bound as text, a payload bound as a blob) is refused, not coerced.

-- The receipt ledger. Its primary key is what makes a delivery count once: a copy that
-- arrives after commit finds it, and concurrent copies are serialised by the write
-- lock that every transaction takes at BEGIN IMMEDIATE.
CREATE TABLE webhook_inbox (
    provider     TEXT    NOT NULL,
    endpoint     TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    event_type   TEXT    NOT NULL,
    -- The verified body, byte for byte. Named so the driver can tell a refused payload
    -- (driver.ErrInvalidInput) from any other CHECK failure.
    payload      TEXT    NOT NULL CONSTRAINT webhook_inbox_payload_is_json CHECK (json_valid(payload)),
    received_at  INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    available_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT,
    processed_at INTEGER,
    outcome      TEXT,
    PRIMARY KEY (provider, endpoint, event_id)
) STRICT;

-- What workers claim from: only unprocessed rows, so the index stays small however much
-- history is kept.
CREATE INDEX webhook_inbox_unprocessed
    ON webhook_inbox (available_at) WHERE processed_at IS NULL;

-- Recent arrivals (status) and retention (cleanup) scan by time.
CREATE INDEX webhook_inbox_received_at ON webhook_inbox (received_at);

-- Downstream notifications, written by handlers in the inbox transaction, with the
-- dispatcher's columns (PostgreSQL adds them in its migration 002). AUTOINCREMENT: an
-- id is never reused after a delete, because sinks derive idempotency keys from it.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    aggregate_type  TEXT    NOT NULL,
    aggregate_id    TEXT    NOT NULL,
    event_type      TEXT    NOT NULL,
    payload         TEXT    NOT NULL CONSTRAINT outbox_payload_is_json CHECK (json_valid(payload)),
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

CREATE INDEX outbox_pending ON outbox (available_at) WHERE published_at IS NULL;

-- The built-in billing domain (package billing).
CREATE TABLE invoices (
    id          TEXT    NOT NULL PRIMARY KEY,
    customer_id TEXT    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('draft', 'open', 'paid', 'void', 'uncollectible')),
    amount_paid INTEGER NOT NULL DEFAULT 0,
    currency    TEXT,
    paid_at     INTEGER,
    updated_at  INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000)
) STRICT;

-- The business key (invoice_id, kind) books a payment once, even when it arrives as a
-- second Event object with another id.
CREATE TABLE ledger_entries (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    invoice_id TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    amount     INTEGER NOT NULL,
    currency   TEXT,
    event_id   TEXT    NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    UNIQUE (invoice_id, kind)
) STRICT;

-- Facts that must not be booked and need a person, e.g. a payment for a void invoice.
CREATE TABLE billing_anomalies (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    invoice_id TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    event_id   TEXT    NOT NULL,
    event_type TEXT    NOT NULL,
    detail     TEXT    NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    UNIQUE (invoice_id, kind)
) STRICT;
