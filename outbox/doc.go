// Package outbox delivers the messages that handlers write to the outbox table in the
// inbox transaction: to an HTTP service or to NATS JetStream, at least once, with an
// idempotency key that lets the receiver (or JetStream itself) make it once.
//
// Several dispatchers may run, in one process or many. Each claims messages with FOR
// UPDATE SKIP LOCKED, a lease and a fencing token that only grows; it delivers with no
// database transaction open, then marks the message published only if its token is
// still the message's token. A dispatcher that stalled past its lease therefore cannot
// overwrite the outcome of the one that took over, and the sink receives the token so
// it can refuse a stale delivery too.
package outbox
