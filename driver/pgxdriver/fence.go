//go:build !hookinbox_broken_lease

package pgxdriver

// markPublishedSQL is the statement that marks an outbox message published: fenced by
// the claim's token, so that a dispatcher whose lease ran out changes nothing. The
// build tag hookinbox_broken_lease, never in a shipped binary, replaces it with an
// unfenced one: the broken variant that the chaos harness
// (cmd/hookinbox/internal/chaos) must catch publishing a message twice.
const markPublishedSQL = sqlOutboxMarkPublished

// markPublishedManySQL is markPublishedSQL for a batch: each message fenced by its own
// token.
const markPublishedManySQL = sqlOutboxMarkPublishedMany
