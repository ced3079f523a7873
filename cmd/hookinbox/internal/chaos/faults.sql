-- The chaos harness's instrumentation of its own throw-away database, installed after
-- `hookinbox migrate`. Test-only: nothing in hookinbox creates or reads these objects.
--
-- Faults: a BEFORE INSERT trigger on billing's invoices (every billing handler's first
-- statement is an upsert of its invoice) and on hookinbox_outbox (the forward handler's
-- only statement) fails the handler at chaos_knobs.fail_rate, and makes it slow at
-- slow_rate: it sleeps slow_seconds in this statement and in every later statement of
-- the transaction about the same invoice, so a handler of several statements (billing's
-- paid: invoice, ledger, outbox) runs past the workers' lease while each statement
-- stays under their statement_timeout.
--
-- Audit: applications of billing handlers (chaos_applied, one row per committed upsert,
-- by the status it writes) and transitions of receipts to processed (chaos_processed).
-- Both are written in the handler's own transaction, so they commit exactly when its
-- effect does: a committed row too many is an event processed twice, even where the
-- ledger's unique key hides it in the business tables.

CREATE TABLE chaos_knobs (
    fail_rate    float8 NOT NULL,
    slow_rate    float8 NOT NULL,
    slow_seconds float8 NOT NULL
);
INSERT INTO chaos_knobs VALUES (0, 0, 0);

-- Sequences are not transactional: an injected fault is counted though its transaction
-- rolls back.
CREATE SEQUENCE chaos_injected_failures;
CREATE SEQUENCE chaos_injected_slow;
CREATE SEQUENCE chaos_handler_calls;

CREATE TABLE chaos_applied (
    invoice_id text NOT NULL,
    status     text NOT NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE chaos_processed (
    endpoint text NOT NULL,
    event_id text NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION chaos_fault(key text, may_fail boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    k chaos_knobs;
BEGIN
    SELECT * INTO k FROM chaos_knobs;
    IF current_setting('chaos.slow_key', true) = key THEN
        PERFORM pg_sleep(k.slow_seconds);
    ELSIF random() < k.slow_rate THEN
        PERFORM nextval('chaos_injected_slow');
        PERFORM set_config('chaos.slow_key', key, true);
        PERFORM pg_sleep(k.slow_seconds);
    END IF;
    IF may_fail THEN
        PERFORM nextval('chaos_handler_calls');
    END IF;
    IF may_fail AND random() < k.fail_rate THEN
        PERFORM nextval('chaos_injected_failures');
        RAISE EXCEPTION 'chaos: injected handler failure';
    END IF;
END
$$;

CREATE FUNCTION chaos_invoices() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM chaos_fault(NEW.id, true);
    INSERT INTO chaos_applied (invoice_id, status) VALUES (NEW.id, NEW.status);
    RETURN NEW;
END
$$;
CREATE TRIGGER chaos_invoices BEFORE INSERT ON invoices
    FOR EACH ROW EXECUTE FUNCTION chaos_invoices();

CREATE FUNCTION chaos_ledger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM chaos_fault(NEW.invoice_id, false);
    RETURN NEW;
END
$$;
CREATE TRIGGER chaos_ledger BEFORE INSERT ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION chaos_ledger();

CREATE FUNCTION chaos_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Billing's notification names its invoice; a forwarded event is the whole
    -- Stripe event. Only the forward handler may fail here: billing's handler had its
    -- chance at its invoice upsert.
    PERFORM chaos_fault(coalesce(NEW.payload->>'invoice_id', NEW.payload->'data'->'object'->>'id', NEW.source_event_id),
                        NEW.destination LIKE 'endpoint:%');
    RETURN NEW;
END
$$;
CREATE TRIGGER chaos_outbox BEFORE INSERT ON hookinbox_outbox
    FOR EACH ROW EXECUTE FUNCTION chaos_outbox();

CREATE FUNCTION chaos_processed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Every commit that marks a receipt processed, even one already processed: the
    -- driver's mark statement has no guard of its own, the row lock and re-check do.
    IF NEW.state = 'processed' AND (TG_OP = 'INSERT' OR NEW.processed_at IS DISTINCT FROM OLD.processed_at) THEN
        INSERT INTO chaos_processed (endpoint, event_id) VALUES (NEW.endpoint, NEW.event_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER chaos_processed AFTER INSERT OR UPDATE ON hookinbox_inbox
    FOR EACH ROW EXECUTE FUNCTION chaos_processed();

-- Receipts as inserted, with the server process and the transaction's start: a
-- transaction whose COMMIT answer the harness's proxy cut is found by both (the
-- proxy knows the connection's process and when the transaction began). Written in
-- the receiving transaction, so it commits exactly when the receipt does.
CREATE TABLE chaos_received (
    endpoint   text NOT NULL,
    event_id   text NOT NULL,
    pid        int NOT NULL DEFAULT pg_backend_pid(),
    xact_start timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION chaos_received() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chaos_received (endpoint, event_id) VALUES (NEW.endpoint, NEW.event_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER chaos_received AFTER INSERT ON hookinbox_inbox
    FOR EACH ROW EXECUTE FUNCTION chaos_received();

-- Lease takeovers: a claim (of a receipt: its attempts grow; of an outbox message:
-- its claim token changes) while the previous claim of the same row recorded no
-- result (a receipt's attempt row, an outbox message's delivery row). Its holder was
-- killed, paused, cut off, or is still at work as a zombie. chaos_claims holds the
-- claims without a result yet; both tables are transactional, so they count what
-- committed.
CREATE TABLE chaos_claims (
    kind text NOT NULL,
    key  text NOT NULL,
    PRIMARY KEY (kind, key)
);

CREATE TABLE chaos_takeovers (
    kind text NOT NULL,
    key  text NOT NULL,
    at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION chaos_claim(kind text, key text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chaos_claims VALUES (kind, key) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        INSERT INTO chaos_takeovers (kind, key) VALUES (kind, key);
    END IF;
END
$$;

CREATE FUNCTION chaos_inbox_claim() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM chaos_claim('inbox', NEW.endpoint || '/' || NEW.event_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER chaos_inbox_claim AFTER UPDATE ON hookinbox_inbox
    FOR EACH ROW WHEN (NEW.attempts > OLD.attempts) EXECUTE FUNCTION chaos_inbox_claim();

CREATE FUNCTION chaos_inbox_result() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM chaos_claims WHERE kind = 'inbox' AND key = NEW.endpoint || '/' || NEW.event_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER chaos_inbox_result AFTER INSERT ON hookinbox_attempt
    FOR EACH ROW EXECUTE FUNCTION chaos_inbox_result();

CREATE FUNCTION chaos_outbox_claim() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM chaos_claim('outbox', NEW.id::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER chaos_outbox_claim AFTER UPDATE ON hookinbox_outbox
    FOR EACH ROW WHEN (NEW.claim_token IS DISTINCT FROM OLD.claim_token) EXECUTE FUNCTION chaos_outbox_claim();

CREATE FUNCTION chaos_outbox_result() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM chaos_claims WHERE kind = 'outbox' AND key = NEW.outbox_id::text;
    RETURN NULL;
END
$$;
CREATE TRIGGER chaos_outbox_result AFTER INSERT ON hookinbox_delivery
    FOR EACH ROW EXECUTE FUNCTION chaos_outbox_result();
