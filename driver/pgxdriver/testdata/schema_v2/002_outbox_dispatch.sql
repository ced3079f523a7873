-- The outbox dispatcher: attempts and backoff like the inbox, a lease, and a fencing
-- token from a sequence, so that every claim's token is larger than any before it and a
-- dispatcher whose lease ran out can no longer mark the row.
CREATE SEQUENCE outbox_claim_token_seq;

ALTER TABLE outbox
    ADD COLUMN destination  text,
    ADD COLUMN attempts     integer     NOT NULL DEFAULT 0,
    ADD COLUMN available_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN claim_token  bigint,
    ADD COLUMN last_error   text;

DROP INDEX outbox_unpublished;
CREATE INDEX outbox_pending ON outbox (available_at) WHERE published_at IS NULL;

-- External side effects recorded once (package effect). A row is pending while one
-- caller holds its lease and is making the call, and done once its result is recorded;
-- a done row is never called again.
CREATE TABLE effects (
    key          text        PRIMARY KEY,
    state        text        NOT NULL CHECK (state IN ('pending', 'done')),
    token        bigint      NOT NULL,
    lease_until  timestamptz NOT NULL,
    result       bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
