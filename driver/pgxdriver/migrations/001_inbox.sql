-- The receipt ledger. Its primary key is what makes a delivery count once: concurrent
-- copies wait on it, and a copy that arrives after commit finds it.
--
-- Every object hookinbox creates carries the hookinbox_ prefix, so that it never
-- collides with the application's own tables. (Databases created before schema
-- version 3 had unprefixed names; migration 003 renames them in place.)
CREATE TABLE hookinbox_inbox (
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

-- Recent arrivals (status) and retention (cleanup) scan by time. BRIN costs almost
-- nothing per insert, and rows arrive in time order.
CREATE INDEX hookinbox_inbox_received_at
    ON hookinbox_inbox USING brin (received_at);

-- Downstream notifications, written by handlers in the inbox transaction.
CREATE TABLE hookinbox_outbox (
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
