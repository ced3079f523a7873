-- Version 7: the dispatcher claims each destination on its own, in the order of
-- available_at and id, up to the destination's free delivery slots. This index holds
-- the claimable messages in exactly that order per destination, so a claim reads the
-- rows it takes and no others, however long the backlog (with only
-- hookinbox_outbox_unpublished, a claim of one destination read and sorted every
-- pending message: 7 ms a claim at a backlog of a few thousand).
CREATE INDEX hookinbox_outbox_claim_order
    ON hookinbox_outbox ((coalesce(destination, '')), available_at, id)
 WHERE state = 'pending';

-- Ordered delivery per aggregate (an outbox sink's `ordered` setting): a message of an
-- ordered destination is claimed only when no earlier message of its aggregate type
-- and id is still pending or needs review, and this index answers that check with one
-- probe. Both hold only undelivered messages, so they stay as small as the backlog.
CREATE INDEX hookinbox_outbox_key_order
    ON hookinbox_outbox (aggregate_type, aggregate_id, id)
 WHERE state IN ('pending', 'needs_review');
