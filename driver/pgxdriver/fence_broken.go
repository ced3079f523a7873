//go:build hookinbox_broken_lease

package pgxdriver

// markPublishedSQL, in this deliberately broken build (see fence.go), marks the
// message published whatever its state and whoever holds its lease now: a dispatcher
// that stalled past its lease overwrites the result of the one that took over.
const markPublishedSQL = `
WITH done AS (
UPDATE hookinbox_outbox
   SET state = 'published', published_at = now(), last_error = NULL
 WHERE id = $1 AND $2::bigint IS NOT NULL
RETURNING id, attempts, $2::bigint AS claim_token)
INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token)
SELECT id, attempts, claim_token FROM done`

// markPublishedManySQL, in this broken build, marks every message of the batch
// published whatever its state and its token: the dispatcher's batched marks, unfenced.
const markPublishedManySQL = `
WITH done AS (
UPDATE hookinbox_outbox AS o
   SET state = 'published', published_at = now(), last_error = NULL
  FROM (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS m(id, token) ORDER BY id) AS m
 WHERE o.id = m.id
RETURNING o.id, o.attempts, m.token AS claim_token),
history AS (
INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token)
SELECT id, attempts, claim_token FROM done)
SELECT id FROM done`
