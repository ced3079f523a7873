// Package driver is the boundary between hookinbox and a database. Everything that is
// SQL-shaped sits behind it, so the core never speaks a dialect or imports a database
// library; each driver (driver/pgxdriver for PostgreSQL) keeps its SQL in one place and
// translates its errors into the sentinels of this package.
//
// The interfaces are generic over TTx, the driver's native transaction type (pgx.Tx for
// PostgreSQL), which handlers receive so that their business writes commit or roll back
// together with the inbox row.
package driver

import (
	"context"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Driver opens transactions and runs hookinbox's queries on one database.
type Driver[TTx any] interface {
	// Name is a short name of the database, e.g. "postgres".
	Name() string

	// Begin starts a transaction. The caller must Commit or Rollback it.
	Begin(ctx context.Context) (ExecutorTx[TTx], error)

	// Executor runs single statements outside any caller transaction, each in its
	// own implicit transaction.
	Executor() Executor

	// UnwrapExecutor returns an Executor bound to a transaction the caller owns, so that
	// an insert made through it commits or rolls back with the caller's work. It must
	// not use the driver's own state: hookinbox.InsertOutboxTx calls it on the
	// driver type's zero value.
	UnwrapExecutor(tx TTx) Executor

	// Migrate applies every migration not yet applied. It is safe to run twice and from
	// several processes at once.
	Migrate(ctx context.Context) error

	// SchemaVersion returns the newest applied migration and the newest one this driver
	// knows. The schema is current when they are equal.
	SchemaVersion(ctx context.Context) (applied, latest int, err error)

	// MigrateLine applies the migrations of line not yet applied, each recorded in the
	// line's own version table, in one transaction under a lock scoped to the line
	// (see the function MigrateLine, which drivers run with their Migrator). Migrate
	// is MigrateLine of hookinbox's line; a package beside the core (the billing
	// example) migrates its own tables with it, through whichever driver it is given.
	MigrateLine(ctx context.Context, line MigrationLine) error

	// LineVersion returns the newest applied migration of line (0 when none) and the
	// newest one line has, taking no lock.
	LineVersion(ctx context.Context, line MigrationLine) (applied, latest int, err error)

	// TranslateError wraps err with the sentinel of this package that it matches, if
	// any, keeping the original in the chain. Handler errors pass through it so the core
	// can tell a statement timeout or an unreachable database from a handler's own error.
	TranslateError(err error) error
}

// Executor runs hookinbox's queries. Implementations are bound either to a pool (each
// call its own statement) or to one transaction. It is the whole contract of a
// driver's queries: the operator console's (ConsoleExecutor) and the backfill's
// (BackfillStore) are part of it, so a driver that compiles serves every feature, and
// driver/drivertest exercises every method against each driver.
type Executor interface {
	ConsoleExecutor
	BackfillStore

	// InboxInsert inserts a receipt unless one with the same key exists. It returns
	// false for a duplicate. A concurrent insert of the same key waits for the other
	// transaction to end: it reports a duplicate if that one commits and inserts if it
	// rolls back.
	InboxInsert(ctx context.Context, params *InboxInsertParams) (inserted bool, err error)

	// InboxInsertMany inserts a batch of receipts with distinct keys in one statement,
	// each unless one with its key exists, and reports for each whether it was inserted
	// (false: a duplicate). Concurrent inserts of a key wait as InboxInsert's do. The
	// statement fails as a whole: one row the database refuses fails the batch.
	InboxInsertMany(ctx context.Context, params []*InboxInsertParams) (inserted []bool, err error)

	// InboxLockUnprocessed locks the receipts of keys that are still pending for the rest
	// of the transaction and returns them; absent keys and keys no longer pending are
	// left out. It waits for locks held by other transactions (it does not skip locked
	// rows), taking them in key order.
	InboxLockUnprocessed(ctx context.Context, keys []hookinboxtype.Key) ([]*hookinboxtype.Receipt, error)

	// InboxMarkProcessed sets the receipts' state to processed, processed_at and the
	// outcome, and clears last_error. With by set it also adds each receipt's attempt
	// to the attempt history, in the same statement.
	InboxMarkProcessed(ctx context.Context, keys []hookinboxtype.Key, outcome string, by *AttemptBy) error

	// InboxClaim picks up to Limit of the oldest available pending receipts of the given
	// endpoints, skipping rows locked by others, counts an attempt on each, stores
	// MaxAttempts with them and hides them for the lease, in one statement. It returns
	// none when there are none. A pending receipt found with MaxAttempts attempts used
	// (its worker died during the last one) is put to review on the way, not returned.
	// The receipts carry no payload (Payload is empty): the transaction that processes
	// them reads it, with InboxLockUnprocessed. A claim that carried it would read,
	// send and decode every payload twice (measured: about a tenth of the async
	// path's CPU, docs/BENCHMARKS.md).
	InboxClaim(ctx context.Context, params *InboxClaimParams) ([]*hookinboxtype.Receipt, error)

	// InboxExtendLease makes the pending receipts of keys unavailable to other workers
	// for Lease from now, as a claim does, without counting an attempt; a parked
	// receipt (available at ParkedAt) stays parked. It returns how many it extended.
	InboxExtendLease(ctx context.Context, keys []hookinboxtype.Key, lease time.Duration) (int, error)

	// InboxRecordFailure stores the error of a failed attempt and its fingerprint, only
	// while the receipt is pending: it becomes available again after Delay, or needs
	// review when the attempt was the last its max_attempts allows. With By set, the
	// attempt joins the history in the same statement.
	InboxRecordFailure(ctx context.Context, params *InboxFailureParams) error

	// InboxNoteDuplicate checks a duplicate delivery's body hash against the receipt's:
	// when both are known and differ it counts a conflict on the receipt, stores the
	// new hash, and returns the stored one with conflict true.
	InboxNoteDuplicate(ctx context.Context, key hookinboxtype.Key, bodySHA256 []byte) (stored []byte, conflict bool, err error)

	// InboxGet returns one receipt, or nil if it does not exist.
	InboxGet(ctx context.Context, key hookinboxtype.Key) (*hookinboxtype.Receipt, error)

	// InboxList returns receipts, newest first.
	InboxList(ctx context.Context, params *InboxListParams) ([]*hookinboxtype.Receipt, error)

	// InboxStats summarises the unprocessed receipts and recent arrivals.
	InboxStats(ctx context.Context, params *InboxStatsParams) (*InboxStats, error)

	// InboxRetry makes receipts pending and available now with their attempts reset
	// to zero: one unprocessed key, or (with NeedsReview) every receipt that needs
	// review. It returns how many it reset.
	InboxRetry(ctx context.Context, params *InboxRetryParams) (int, error)

	// InboxDeleteProcessed deletes up to Limit receipts processed before OlderThan
	// ago, or with DryRun counts them all. It returns how many.
	InboxDeleteProcessed(ctx context.Context, params *InboxDeleteParams) (int, error)

	// InboxPurgePayloads replaces with JSON null the payload of up to Limit receipts
	// processed before OlderThan ago whose payload is not null already, or with DryRun
	// counts them all, and returns how many. The receipts, their keys and body hashes
	// stay: retries remain duplicates. Unprocessed receipts are never touched.
	InboxPurgePayloads(ctx context.Context, params *InboxDeleteParams) (int, error)

	// TableSizes reports the size of each table hookinbox keeps.
	TableSizes(ctx context.Context) ([]TableSize, error)

	// OutboxDeletePublished deletes up to Limit messages published before OlderThan
	// ago, or with DryRun counts them all. Undelivered messages are never deleted.
	OutboxDeletePublished(ctx context.Context, params *InboxDeleteParams) (int, error)

	// AttemptDeleteOld deletes up to Limit attempt history rows finished before
	// OlderThan ago, or with DryRun counts them all.
	AttemptDeleteOld(ctx context.Context, params *InboxDeleteParams) (int, error)

	// DeliveryDeleteOld deletes up to Limit outbox delivery history rows finished
	// before OlderThan ago, or with DryRun counts them all.
	DeliveryDeleteOld(ctx context.Context, params *InboxDeleteParams) (int, error)

	// EffectDeleteDone deletes up to Limit effects recorded before OlderThan ago, or
	// with DryRun counts them all. Effects whose call is in progress are never deleted.
	EffectDeleteDone(ctx context.Context, params *InboxDeleteParams) (int, error)

	// OutboxInsert inserts an outbox message and returns its id.
	OutboxInsert(ctx context.Context, params *OutboxInsertParams) (int64, error)

	// OutboxInsertMany inserts several outbox messages in one statement where the
	// database allows it, all or none.
	OutboxInsertMany(ctx context.Context, params []*OutboxInsertParams) error

	// OutboxClaim leases up to Limit available pending messages, skipping rows locked
	// by others, counting the attempt, storing MaxAttempts and giving each a new fencing
	// token larger than every token before it. A pending message found with MaxAttempts
	// attempts used is put to review on the way, not returned.
	OutboxClaim(ctx context.Context, params *OutboxClaimParams) ([]*hookinboxtype.OutboxMessage, error)

	// OutboxMarkPublished marks a message published only if token is still its claim
	// token, and adds the delivery to its history (hookinbox_delivery) with it. It
	// reports false when a later claim took the message over.
	OutboxMarkPublished(ctx context.Context, id, token int64) (bool, error)

	// OutboxMarkPublishedMany is OutboxMarkPublished for several messages in one
	// statement where the database allows it: each is marked only if its token is
	// still its claim token. It returns the ids it marked; the others were taken over
	// by a later claim (or are no longer pending).
	OutboxMarkPublishedMany(ctx context.Context, marks []OutboxMark) (published []int64, err error)

	// OutboxRecordFailure stores a failed delivery's error, and adds it to the
	// message's delivery history, only if ClaimToken is still its token: the message becomes available after Delay, or needs review when the
	// attempt was its last.
	OutboxRecordFailure(ctx context.Context, params *OutboxFailureParams) error

	// OutboxList returns messages, newest first.
	OutboxList(ctx context.Context, params *OutboxListParams) ([]*hookinboxtype.OutboxMessage, error)

	// OutboxStats summarises the unpublished messages.
	OutboxStats(ctx context.Context) (*OutboxStats, error)

	// OutboxRetry makes undelivered messages pending and available now with their
	// attempts reset: one id, or every message that needs review.
	OutboxRetry(ctx context.Context, params *OutboxRetryParams) (int, error)

	// EffectClaim takes the lease on an effect key when it is new or its holder's lease
	// ran out, or reports the recorded result, or who holds it until when.
	EffectClaim(ctx context.Context, params *EffectClaimParams) (*EffectClaim, error)

	// EffectComplete records the result of the call made under token. It reports false
	// when the lease was lost and the result was not recorded.
	EffectComplete(ctx context.Context, key string, token int64, result []byte) (bool, error)

	// EffectRelease gives up the lease taken with token, recording nothing, so the
	// effect can be tried again.
	EffectRelease(ctx context.Context, key string, token int64) error

	// SetStatementTimeout bounds every later statement of the current transaction.
	// Only valid on a transaction's executor.
	SetStatementTimeout(ctx context.Context, timeout time.Duration) error
}

// ExecutorTx is an Executor bound to a transaction the core owns.
//
// A driver may hold back a statement whose only result is success (the mark of
// InboxMarkProcessed, a handler's OutboxInsertMany on Native's transaction) and send
// it with the transaction's next statement or with its commit, as the PostgreSQL
// driver does to save round trips. It must keep the order in which statements were
// issued, and report such a statement's error from the statement or the commit it
// travelled with; the core counts a commit that fails after a sync handler succeeded
// as the handler's failure, unless the error is ErrUnavailable, ErrConflict or the
// deadline's.
type ExecutorTx[TTx any] interface {
	Executor

	// Native returns the driver's transaction, to be passed to handlers.
	Native() TTx

	// Savepoint marks the transaction's current state; RollbackToSavepoint returns to
	// the mark, undoing what came after it (a failed statement included) and leaving the
	// transaction usable; ReleaseSavepoint keeps what came after it and drops the mark,
	// and fails if the transaction failed meanwhile: how several deliveries share one
	// transaction while one's failure undoes only its own work. A transaction should
	// take at most a few dozen (PostgreSQL keeps 64 subtransactions per backend in
	// memory, released ones included).
	Savepoint(ctx context.Context) error
	RollbackToSavepoint(ctx context.Context) error
	ReleaseSavepoint(ctx context.Context) error

	// SavepointInboxInsert is Savepoint followed by InboxInsert, in one round trip
	// where the database's protocol allows it. A failed savepoint is reported wrapping
	// ErrSavepoint.
	SavepointInboxInsert(ctx context.Context, params *InboxInsertParams) (inserted bool, err error)

	// SavepointInboxInsertMany is Savepoint followed by InboxInsertMany (distinct
	// keys), in one round trip where the database's protocol allows it. A failed
	// savepoint is reported wrapping ErrSavepoint.
	SavepointInboxInsertMany(ctx context.Context, params []*InboxInsertParams) (inserted []bool, err error)

	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}
