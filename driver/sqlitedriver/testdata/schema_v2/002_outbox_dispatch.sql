-- The fencing tokens of outbox and effect claims. SQLite has no sequences: this
-- one-row counter is incremented inside the claim's write transaction, so every token
-- is larger than any before it. A counter, not max(claim_token) + 1, because it
-- survives the deletion of the rows that held the largest tokens.
CREATE TABLE hookinbox_sequence (
    name  TEXT    NOT NULL PRIMARY KEY,
    value INTEGER NOT NULL
) STRICT;

INSERT INTO hookinbox_sequence (name, value) VALUES ('claim_token', 0);

-- External side effects recorded once (package effect). A row is pending while one
-- caller holds its lease and is making the call, and done once its result is recorded;
-- a done row is never called again.
CREATE TABLE effects (
    key          TEXT    NOT NULL PRIMARY KEY,
    state        TEXT    NOT NULL CHECK (state IN ('pending', 'done')),
    token        INTEGER NOT NULL,
    lease_until  INTEGER NOT NULL,
    result       BLOB,
    created_at   INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000),
    completed_at INTEGER
) STRICT;
