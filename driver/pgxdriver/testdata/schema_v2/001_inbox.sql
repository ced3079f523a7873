-- The receipt ledger. Its primary key is what makes a delivery count once: concurrent
-- copies wait on it, and a copy that arrives after commit finds it.
CREATE TABLE webhook_inbox (
    provider     text        NOT NULL,
    endpoint     text        NOT NULL,
    event_id     text        NOT NULL,
    event_type   text        NOT NULL,
    payload      jsonb       NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    available_at timestamptz NOT NULL DEFAULT now(),
    attempts     integer     NOT NULL DEFAULT 0,
    last_error   text,
    processed_at timestamptz,
    outcome      text,
    PRIMARY KEY (provider, endpoint, event_id)
);

-- What workers claim from: only unprocessed rows, so the index stays small however much
-- history is kept.
CREATE INDEX webhook_inbox_unprocessed
    ON webhook_inbox (available_at) WHERE processed_at IS NULL;

-- Recent arrivals (status) and retention (cleanup) scan by time. BRIN costs almost
-- nothing per insert, and rows arrive in time order.
CREATE INDEX webhook_inbox_received_at
    ON webhook_inbox USING brin (received_at);

-- Downstream notifications, written by handlers in the inbox transaction.
CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    aggregate_type  text        NOT NULL,
    aggregate_id    text        NOT NULL,
    event_type      text        NOT NULL,
    payload         jsonb       NOT NULL,
    source_provider text        NOT NULL,
    source_endpoint text        NOT NULL,
    source_event_id text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz
);

CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- The built-in billing domain (package billing).
CREATE TABLE invoices (
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
CREATE TABLE ledger_entries (
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
CREATE TABLE billing_anomalies (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    invoice_id text        NOT NULL,
    kind       text        NOT NULL,
    event_id   text        NOT NULL,
    event_type text        NOT NULL,
    detail     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (invoice_id, kind)
);
