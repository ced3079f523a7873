-- Version 4: what the operator console reads and writes.

-- One row per finished processing attempt of a receipt, written by the worker in the
-- statement that already records the attempt's end (the batch's "mark processed", or
-- the failure's update), so that history costs no extra round trip. started_at is when
-- the worker began the attempt (for a batch, the batch's start), finished_at when its
-- result was recorded; error is NULL for a success, next_retry_at NULL unless the
-- receipt was given another attempt. Rows are deleted by cleanup with the same
-- retention as receipts; a receipt keeps at most its max_attempts rows per retry.
CREATE TABLE hookinbox_attempt (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider      text        NOT NULL,
    endpoint      text        NOT NULL,
    event_id      text        NOT NULL,
    attempt       integer     NOT NULL,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT now(),
    worker        text        NOT NULL,
    error         text,
    next_retry_at timestamptz
);
CREATE INDEX hookinbox_attempt_receipt
    ON hookinbox_attempt (provider, endpoint, event_id, id);
-- Retention deletes by time; rows arrive in time order.
CREATE INDEX hookinbox_attempt_finished_at
    ON hookinbox_attempt USING brin (finished_at);

-- One row per finished delivery of an outbox message, written by the statement that
-- records its result (published, or failed with the retry time), only when the
-- delivering dispatcher's fencing token is still the message's. Cleaned like the
-- attempt history.
CREATE TABLE hookinbox_delivery (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    outbox_id     bigint      NOT NULL,
    attempt       integer     NOT NULL,
    claim_token   bigint      NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT now(),
    error         text,
    next_retry_at timestamptz
);
CREATE INDEX hookinbox_delivery_message ON hookinbox_delivery (outbox_id, id);
CREATE INDEX hookinbox_delivery_finished_at ON hookinbox_delivery USING brin (finished_at);

-- Every operator action taken through the console: who, when, what, on which rows,
-- how many it changed, and the note given. Never updated or deleted by hookinbox.
CREATE TABLE hookinbox_audit (
    id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at     timestamptz NOT NULL DEFAULT now(),
    actor  text        NOT NULL,
    action text        NOT NULL,
    target text        NOT NULL,
    rows   integer     NOT NULL,
    note   text
);

-- The failure's error with ids and numbers masked, written with last_error by the
-- worker, so that receipts needing review group by cause. NULL for receipts that
-- failed before this version, or only in a hybrid endpoint's first attempt.
ALTER TABLE hookinbox_inbox ADD COLUMN error_fingerprint text;

-- The console's inbox list pages newest first with a key set (received_at and the
-- key), one index range a page; BRIN cannot give an order.
CREATE INDEX hookinbox_inbox_received_order ON hookinbox_inbox (received_at);

-- An event's page lists the outbox messages its processing wrote.
CREATE INDEX hookinbox_outbox_source
    ON hookinbox_outbox (source_provider, source_endpoint, source_event_id);

-- The overview counts what was processed in the last hour or day; rows are processed
-- in about the order they are written, which is what BRIN needs.
CREATE INDEX hookinbox_inbox_processed_at
    ON hookinbox_inbox USING brin (processed_at);
