-- The billing domain's tables. IF NOT EXISTS: databases created before hookinbox's
-- schema version 3 already have them (hookinbox's own migrations created them then),
-- and this migration adopts them as they are, with their rows.
CREATE TABLE IF NOT EXISTS invoices (
    id          text        PRIMARY KEY,
    customer_id text        NOT NULL,
    status      text        NOT NULL CHECK (status IN ('draft', 'open', 'paid', 'void', 'uncollectible')),
    amount_paid bigint      NOT NULL DEFAULT 0,
    currency    text,
    paid_at     timestamptz,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The business key (invoice_id, kind) books a payment once, even when it arrives as a
-- second Event object with another id.
CREATE TABLE IF NOT EXISTS ledger_entries (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    invoice_id text        NOT NULL,
    kind       text        NOT NULL,
    amount     bigint      NOT NULL,
    currency   text,
    event_id   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (invoice_id, kind)
);

-- Facts that must not be booked and need a person, e.g. a payment for a void invoice.
CREATE TABLE IF NOT EXISTS billing_anomalies (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    invoice_id text        NOT NULL,
    kind       text        NOT NULL,
    event_id   text        NOT NULL,
    event_type text        NOT NULL,
    detail     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (invoice_id, kind)
);
