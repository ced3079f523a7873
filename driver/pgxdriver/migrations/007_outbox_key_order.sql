-- Version 7: ordered delivery per aggregate (an outbox sink's `ordered` setting). A
-- message of an ordered destination is claimed only when no earlier message of its
-- aggregate type and id is still pending or needs review; this index answers that
-- check with one probe. It holds only undelivered messages, so it stays as small as
-- the backlog.
CREATE INDEX hookinbox_outbox_key_order
    ON hookinbox_outbox (aggregate_type, aggregate_id, id)
 WHERE state IN ('pending', 'needs_review');
