package pgxdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// executor runs the queries of queries.go on a pool or a transaction.
// The executor is the whole query contract, checked here rather than at run time.
var _ driver.Executor = (*executor)(nil)

type executor struct {
	db dbtx
	// queue, when set, is the transaction OutboxInsertMany's statement waits on, to be
	// sent with its next statement or its commit.
	queue *executorTx
}

func (e *executor) InboxInsert(ctx context.Context, p *driver.InboxInsertParams) (bool, error) {
	if p.Lease > 0 {
		inserted, err := e.InboxInsertMany(ctx, []*driver.InboxInsertParams{p})
		if err != nil {
			return false, err
		}
		return inserted[0], nil
	}
	var inserted bool
	err := e.db.QueryRow(ctx, sqlInboxInsert, inboxInsertArgs(p)...).Scan(&inserted)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(fmt.Errorf("error inserting receipt: %w", err))
	}
	return true, nil
}

func inboxInsertArgs(p *driver.InboxInsertParams) []any {
	// The jsonb payload as a string, not []byte: in QueryExecModeExec (a pool behind
	// PgBouncer) pgx sends a []byte of unknown type as bytea's hex text, which jsonb
	// refuses.
	return []any{p.Provider, p.Endpoint, p.EventID, p.EventType, string(p.Payload),
		p.Processed, nullString(p.Outcome), p.Attempts, nullString(p.LastError), p.Delay.Seconds(),
		driver.AttemptLimit(p.MaxAttempts), p.BodySHA256, p.TraceParent, nullBytes(p.Request)}
}

// nullBytes is b as text, or NULL when empty (a string for the reason payloads are).
func nullBytes(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

func (e *executor) InboxInsertMany(ctx context.Context, ps []*driver.InboxInsertParams) ([]bool, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	query, args, position, err := inboxInsertManyArgs(ps)
	if err != nil {
		return nil, err
	}
	rows, err := e.db.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(fmt.Errorf("error inserting receipts: %w", err))
	}
	return scanInserted(rows, position, len(ps))
}

// inboxInsertManyArgs binds a batch of receipts as sqlInboxInsertMany's arrays, in key
// order (concurrent batches then take their rows' locks in one order, and cannot
// deadlock), with each key's position in ps; a batch with a leased receipt takes
// sqlInboxInsertManyLeased, which it returns instead.
func inboxInsertManyArgs(ps []*driver.InboxInsertParams) (string, []any, map[hookinboxtype.Key]int, error) {
	n := len(ps)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return keyLess(ps[order[a]].Key, ps[order[b]].Key) })
	var (
		providers, endpoints, ids, types, payloads, outcomes, errs = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		processed        = make([]bool, n)
		hashes           = make([][]byte, n)
		attempts, limits = make([]int32, n), make([]int32, n)
		delays           = make([]float64, n)
		leases           []float64 // nil while no receipt is leased: then the plain statement
		traces           []string  // nil (NULL, which unnest pads) while no receipt has one
		requests         []*string
		position         = make(map[hookinboxtype.Key]int, n)
	)
	for j, i := range order {
		p := ps[i]
		if _, dup := position[p.Key]; dup {
			return "", nil, nil, fmt.Errorf("error inserting receipts: key %v twice in one batch", p.Key)
		}
		position[p.Key] = i
		providers[j], endpoints[j], ids[j], types[j] = p.Provider, p.Endpoint, p.EventID, p.EventType
		payloads[j], outcomes[j], errs[j] = string(p.Payload), p.Outcome, p.LastError
		processed[j], attempts[j], limits[j], delays[j] = p.Processed, int32(p.Attempts), int32(max(p.MaxAttempts, 0)), p.Delay.Seconds()
		hashes[j] = p.BodySHA256
		if p.Lease > 0 {
			if leases == nil {
				leases = make([]float64, n)
			}
			leases[j] = p.Lease.Seconds()
		}
		if p.TraceParent != "" {
			if traces == nil {
				traces = make([]string, n)
			}
			traces[j] = p.TraceParent
		}
		if len(p.Request) > 0 {
			if requests == nil {
				requests = make([]*string, n)
			}
			requests[j] = nullBytes(p.Request)
		}
	}
	args := []any{providers, endpoints, ids, types, payloads, processed, outcomes,
		attempts, errs, delays, limits, hashes, traces, requests}
	if leases != nil {
		return sqlInboxInsertManyLeased, append(args, leases), position, nil
	}
	return sqlInboxInsertMany, args, position, nil
}

// scanInserted reads sqlInboxInsertMany's RETURNING: the keys inserted, in no
// defined order; a key absent from it was a duplicate.
func scanInserted(rows pgx.Rows, position map[hookinboxtype.Key]int, n int) ([]bool, error) {
	inserted := make([]bool, n)
	var k hookinboxtype.Key
	_, err := pgx.ForEachRow(rows, []any{&k.Provider, &k.Endpoint, &k.EventID}, func() error {
		if i, ok := position[k]; ok {
			inserted[i] = true
		}
		return nil
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error inserting receipts: %w", err))
	}
	return inserted, nil
}

func keyLess(a, b hookinboxtype.Key) bool {
	if a.Provider != b.Provider {
		return a.Provider < b.Provider
	}
	if a.Endpoint != b.Endpoint {
		return a.Endpoint < b.Endpoint
	}
	return a.EventID < b.EventID
}

// keyColumns splits keys into the three arrays the key-set statements unnest.
func keyColumns(keys []hookinboxtype.Key) (providers, endpoints, ids []string) {
	providers, endpoints, ids = make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		providers[i], endpoints[i], ids[i] = k.Provider, k.Endpoint, k.EventID
	}
	return providers, endpoints, ids
}

func (e *executor) InboxLockUnprocessed(ctx context.Context, keys []hookinboxtype.Key) ([]*hookinboxtype.Receipt, error) {
	providers, endpoints, ids := keyColumns(keys)
	rows, err := e.db.Query(ctx, sqlInboxLockUnprocessed, providers, endpoints, ids)
	if err != nil {
		return nil, translate(fmt.Errorf("error locking receipts: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*hookinboxtype.Receipt, error) { return scanReceipt(row) })
	if err != nil {
		return nil, translate(fmt.Errorf("error locking receipts: %w", err))
	}
	return list, nil
}

func (e *executor) InboxMarkProcessed(ctx context.Context, keys []hookinboxtype.Key, outcome string, by *driver.AttemptBy) error {
	query, args := markProcessedArgs(keys, outcome, by)
	if _, err := e.db.Exec(ctx, query, args...); err != nil {
		return translate(fmt.Errorf("error marking receipts processed: %w", err))
	}
	return nil
}

// markProcessedArgs is InboxMarkProcessed's statement and its arguments.
func markProcessedArgs(keys []hookinboxtype.Key, outcome string, by *driver.AttemptBy) (string, []any) {
	providers, endpoints, ids := keyColumns(keys)
	query, args := sqlInboxMarkProcessed, []any{providers, endpoints, ids, outcome}
	if by != nil {
		query, args = sqlInboxMarkProcessedAttempt, append(args, time.Since(by.StartedAt).Seconds(), by.Worker)
	}
	return query, args
}

func (e *executor) InboxClaim(ctx context.Context, p *driver.InboxClaimParams) ([]*hookinboxtype.Receipt, error) {
	if p.MaxAttempts < 1 {
		return nil, driver.ErrNoAttemptLimit
	}
	return driver.ClaimPending(func() ([]*hookinboxtype.Receipt, error) {
		rows, err := e.db.Query(ctx, sqlInboxClaim, p.Endpoints, p.Lease.Seconds(), p.MaxAttempts, max(p.Limit, 1))
		if err != nil {
			return nil, translate(fmt.Errorf("error claiming receipts: %w", err))
		}
		list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*hookinboxtype.Receipt, error) { return scanReceipt(row) })
		if err != nil {
			return nil, translate(fmt.Errorf("error claiming receipts: %w", err))
		}
		return list, nil
	}, driver.ReceiptState)
}

func (e *executor) InboxExtendLease(ctx context.Context, keys []hookinboxtype.Key, lease time.Duration) (int, error) {
	providers, endpoints, ids := keyColumns(keys)
	tag, err := e.db.Exec(ctx, sqlInboxExtendLease, providers, endpoints, ids, lease.Seconds())
	if err != nil {
		return 0, translate(fmt.Errorf("error extending leases: %w", err))
	}
	return int(tag.RowsAffected()), nil
}

func (e *executor) InboxRecordFailure(ctx context.Context, p *driver.InboxFailureParams) error {
	var elapsed *float64
	var worker string
	if p.By != nil {
		s := time.Since(p.By.StartedAt).Seconds()
		elapsed, worker = &s, p.By.Worker
	}
	if _, err := e.db.Exec(ctx, sqlInboxRecordFailure, p.Provider, p.Endpoint, p.EventID, p.Error, p.Delay.Seconds(),
		driver.ErrorFingerprint(p.Error), elapsed, worker); err != nil {
		return translate(fmt.Errorf("error recording failure: %w", err))
	}
	return nil
}

func (e *executor) InboxNoteDuplicate(ctx context.Context, key hookinboxtype.Key, sha []byte) ([]byte, bool, error) {
	if len(sha) == 0 {
		return nil, false, nil
	}
	var stored []byte
	err := e.db.QueryRow(ctx, sqlInboxNoteDuplicate, key.Provider, key.Endpoint, key.EventID, sha).Scan(&stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, translate(fmt.Errorf("error checking a duplicate's body: %w", err))
	}
	return stored, true, nil
}

func (e *executor) InboxGet(ctx context.Context, key hookinboxtype.Key) (*hookinboxtype.Receipt, error) {
	r, err := scanReceipt(e.db.QueryRow(ctx, sqlInboxGet, key.Provider, key.Endpoint, key.EventID))
	if err != nil {
		return nil, translate(fmt.Errorf("error reading receipt: %w", err))
	}
	return r, nil
}

func (e *executor) InboxList(ctx context.Context, p *driver.InboxListParams) ([]*hookinboxtype.Receipt, error) {
	rows, err := e.db.Query(ctx, sqlInboxList, p.Endpoint, p.NeedsReview, p.Unprocessed, p.Limit, p.Conflicts)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing receipts: %w", err))
	}
	defer rows.Close()
	var list []*hookinboxtype.Receipt
	for rows.Next() {
		r, err := scanReceipt(rows)
		if err != nil {
			return nil, translate(fmt.Errorf("error listing receipts: %w", err))
		}
		list = append(list, r)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(fmt.Errorf("error listing receipts: %w", err))
	}
	return list, nil
}

func (e *executor) InboxStats(ctx context.Context, p *driver.InboxStatsParams) (*driver.InboxStats, error) {
	var s driver.InboxStats
	var oldest, oldestPending float64
	if err := e.db.QueryRow(ctx, sqlInboxStats).Scan(&s.Unprocessed, &oldest, &s.NeedsReview, &oldestPending); err != nil {
		return nil, translate(fmt.Errorf("error reading inbox stats: %w", err))
	}
	s.OldestUnprocessedAge = time.Duration(oldest * float64(time.Second))
	s.OldestPendingAge = time.Duration(oldestPending * float64(time.Second))
	rows, err := e.db.Query(ctx, sqlInboxReceivedByType, p.RecentWindow.Seconds())
	if err != nil {
		return nil, translate(fmt.Errorf("error counting receipts by type: %w", err))
	}
	s.ReceivedByType, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (driver.TypeCount, error) {
		var tc driver.TypeCount
		err := row.Scan(&tc.EventType, &tc.Count)
		return tc, err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error counting receipts by type: %w", err))
	}
	return &s, nil
}

func (e *executor) InboxRetry(ctx context.Context, p *driver.InboxRetryParams) (int, error) {
	var err error
	var n int64
	switch {
	case p.Key != nil:
		tag, e2 := e.db.Exec(ctx, sqlInboxRetryOne, p.Key.Provider, p.Key.Endpoint, p.Key.EventID)
		n, err = tag.RowsAffected(), e2
	case p.NeedsReview:
		tag, e2 := e.db.Exec(ctx, sqlInboxRetryNeedsReview)
		n, err = tag.RowsAffected(), e2
	default:
		return 0, errors.New("retry needs a key or NeedsReview")
	}
	if err != nil {
		return 0, translate(fmt.Errorf("error resetting receipts for retry: %w", err))
	}
	return int(n), nil
}

func (e *executor) InboxDeleteProcessed(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	if p.DryRun {
		var n int64
		if err := e.db.QueryRow(ctx, sqlInboxCountProcessed, p.OlderThan.Seconds()).Scan(&n); err != nil {
			return 0, translate(fmt.Errorf("error counting processed receipts: %w", err))
		}
		return int(n), nil
	}
	tag, err := e.db.Exec(ctx, sqlInboxDeleteProcessed, p.OlderThan.Seconds(), p.Limit)
	if err != nil {
		return 0, translate(fmt.Errorf("error deleting processed receipts: %w", err))
	}
	return int(tag.RowsAffected()), nil
}

func (e *executor) InboxPurgePayloads(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlInboxCountPurgeable, sqlInboxPurgePayloads, "payloads of processed receipts")
}

func (e *executor) TableSizes(ctx context.Context) ([]driver.TableSize, error) {
	rows, err := e.db.Query(ctx, sqlTableSizes)
	if err != nil {
		return nil, translate(fmt.Errorf("error reading table sizes: %w", err))
	}
	var sizes []driver.TableSize
	var t driver.TableSize
	if _, err := pgx.ForEachRow(rows, []any{&t.Table, &t.Rows, &t.Bytes}, func() error {
		sizes = append(sizes, t)
		return nil
	}); err != nil {
		return nil, translate(fmt.Errorf("error reading table sizes: %w", err))
	}
	return sizes, nil
}

func (e *executor) OutboxDeletePublished(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlOutboxCountPublished, sqlOutboxDeletePublished, "published outbox messages")
}

func (e *executor) AttemptDeleteOld(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlAttemptCountOld, sqlAttemptDeleteOld, "attempt history")
}

func (e *executor) DeliveryDeleteOld(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlDeliveryCountOld, sqlDeliveryDeleteOld, "delivery history")
}

func (e *executor) EffectDeleteDone(ctx context.Context, p *driver.InboxDeleteParams) (int, error) {
	return e.deleteOld(ctx, p, sqlEffectCountDone, sqlEffectDeleteDone, "recorded effects")
}

// deleteOld counts (DryRun) or deletes up to Limit rows older than OlderThan.
func (e *executor) deleteOld(ctx context.Context, p *driver.InboxDeleteParams, countSQL, deleteSQL, what string) (int, error) {
	if p.DryRun {
		var n int64
		if err := e.db.QueryRow(ctx, countSQL, p.OlderThan.Seconds()).Scan(&n); err != nil {
			return 0, translate(fmt.Errorf("error counting %s: %w", what, err))
		}
		return int(n), nil
	}
	tag, err := e.db.Exec(ctx, deleteSQL, p.OlderThan.Seconds(), p.Limit)
	if err != nil {
		return 0, translate(fmt.Errorf("error deleting %s: %w", what, err))
	}
	return int(tag.RowsAffected()), nil
}

func (e *executor) OutboxInsert(ctx context.Context, p *driver.OutboxInsertParams) (int64, error) {
	var id int64
	err := e.db.QueryRow(ctx, sqlOutboxInsert,
		p.AggregateType, p.AggregateID, p.EventType, string(p.Payload), // a string: see inboxInsertArgs
		p.Source.Provider, p.Source.Endpoint, p.Source.EventID, nullString(p.Destination), p.TraceParent,
	).Scan(&id)
	if err != nil {
		return 0, translate(fmt.Errorf("error inserting outbox message: %w", err))
	}
	return id, nil
}

func (e *executor) OutboxInsertMany(ctx context.Context, ps []*driver.OutboxInsertParams) error {
	if len(ps) == 0 {
		return nil
	}
	n := len(ps)
	var (
		aggTypes, aggIDs, types, payloads = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		providers, endpoints, eventIDs    = make([]string, n), make([]string, n), make([]string, n)
		destinations, traces              = make([]string, n), make([]string, n)
	)
	for i, p := range ps {
		aggTypes[i], aggIDs[i], types[i], payloads[i] = p.AggregateType, p.AggregateID, p.EventType, string(p.Payload)
		providers[i], endpoints[i], eventIDs[i] = p.Source.Provider, p.Source.Endpoint, p.Source.EventID
		destinations[i], traces[i] = p.Destination, p.TraceParent
	}
	if e.queue != nil && e.queue.queues() {
		e.queue.queue("error inserting outbox messages", sqlOutboxInsertMany, aggTypes, aggIDs, types, payloads,
			providers, endpoints, eventIDs, destinations, traces)
		return nil
	}
	if _, err := e.db.Exec(ctx, sqlOutboxInsertMany, aggTypes, aggIDs, types, payloads,
		providers, endpoints, eventIDs, destinations, traces); err != nil {
		return translate(fmt.Errorf("error inserting outbox messages: %w", err))
	}
	return nil
}

func (e *executor) SetStatementTimeout(ctx context.Context, timeout time.Duration) error {
	ms := strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)
	if _, err := e.db.Exec(ctx, sqlSetStatementTimeout, ms); err != nil {
		return translate(fmt.Errorf("error setting statement timeout: %w", err))
	}
	return nil
}

// scanReceipt scans the column list shared by the receipt queries; no row is nil.
func scanReceipt(row pgx.Row) (*hookinboxtype.Receipt, error) {
	var r hookinboxtype.Receipt
	err := row.Scan(&r.Provider, &r.Endpoint, &r.EventID, &r.EventType, rawJSON(&r.Payload),
		&r.ReceivedAt, &r.AvailableAt, &r.Attempts, &r.MaxAttempts, &r.LastError, &r.ProcessedAt,
		&r.Outcome, &r.State, &r.BodySHA256, &r.Conflicts, &r.TraceParent)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// rawJSON is where a json or jsonb column is scanned as it came: pgx copies the bytes
// into a *[]byte, but decodes them with encoding/json (validating the document again
// and copying it once more) into a *json.RawMessage. A worker scans each payload it
// processes (twice: claim and lock), and the dispatcher each message it publishes:
// in a mixed-load profile the decode was a fifth of the workers' CPU.
func rawJSON(p *json.RawMessage) *[]byte { return (*[]byte)(p) }

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
