-- The billing domain's tables. IF NOT EXISTS: databases created before hookinbox's
-- schema version 3 already have them (hookinbox's own migrations created them then),
-- and this migration adopts them as they are, with their rows. Timestamps are INTEGER
-- unix microseconds, as in hookinbox's own SQLite tables.
CREATE TABLE IF NOT EXISTS invoices (
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
CREATE TABLE IF NOT EXISTS ledger_entries (
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
CREATE TABLE IF NOT EXISTS billing_anomalies (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    invoice_id TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    event_id   TEXT    NOT NULL,
    event_type TEXT    NOT NULL,
    detail     TEXT    NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    UNIQUE (invoice_id, kind)
) STRICT;
