package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// OutboxClaim claims in one write transaction: the rows take their tokens from the
// counter, then the counter moves past them, so no later claim reuses a token. Messages
// the claim put to review are committed as such and not returned.
func (e *executor) OutboxClaim(ctx context.Context, p *driver.OutboxClaimParams) ([]*hookinboxtype.OutboxMessage, error) {
	if p.MaxAttempts < 1 {
		return nil, driver.ErrNoAttemptLimit
	}
	return driver.ClaimPending(func() ([]*hookinboxtype.OutboxMessage, error) {
		return e.outboxClaimOnce(ctx, p)
	}, driver.MessageState)
}

// outboxClaimOnce claims each destination in turn, in one write transaction; after
// each statement the token counter moves past the tokens it gave, so tokens only grow.
func (e *executor) outboxClaimOnce(ctx context.Context, p *driver.OutboxClaimParams) ([]*hookinboxtype.OutboxMessage, error) {
	var msgs []*hookinboxtype.OutboxMessage
	err := e.inTx(ctx, func(q dbtx) error {
		for k, dest := range p.Destinations {
			rows, err := q.QueryContext(ctx, sqlOutboxClaim, p.LimitFor(k), p.Lease.Microseconds(), p.MaxAttempts,
				dest, slices.Contains(p.Ordered, dest), driver.ParkedAt.UnixMicro())
			if err != nil {
				return err
			}
			claimed, err := collect(rows, scanOutboxMessage)
			if err != nil {
				return err
			}
			var largest int64
			for _, m := range claimed {
				largest = max(largest, m.FencingToken)
			}
			if largest == 0 {
				continue
			}
			if _, err = q.ExecContext(ctx, sqlSequenceAdvance, largest); err != nil {
				return err
			}
			msgs = append(msgs, claimed...)
		}
		return nil
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error claiming outbox messages: %w", err))
	}
	return msgs, nil
}

func (e *executor) OutboxMarkPublished(ctx context.Context, id, token int64) (bool, error) {
	var n int
	err := e.inTx(ctx, func(q dbtx) error {
		var err error
		if n, err = rowsAffected(q.ExecContext(ctx, sqlOutboxMarkPublished, id, token)); err != nil || n == 0 {
			return err
		}
		_, err = q.ExecContext(ctx, sqlDeliveryRecord, id, nil)
		return err
	})
	if err != nil {
		return false, translate(fmt.Errorf("error marking outbox message published: %w", err))
	}
	return n == 1, nil
}

func (e *executor) OutboxMarkPublishedMany(ctx context.Context, marks []driver.OutboxMark) ([]int64, error) {
	var published []int64
	err := e.inTx(ctx, func(q dbtx) error {
		published = published[:0]
		for _, m := range marks {
			n, err := rowsAffected(q.ExecContext(ctx, sqlOutboxMarkPublished, m.ID, m.Token))
			if err != nil {
				return err
			}
			if n == 0 {
				continue
			}
			if _, err := q.ExecContext(ctx, sqlDeliveryRecord, m.ID, nil); err != nil {
				return err
			}
			published = append(published, m.ID)
		}
		return nil
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error marking outbox messages published: %w", err))
	}
	return published, nil
}

func (e *executor) OutboxRecordFailure(ctx context.Context, p *driver.OutboxFailureParams) error {
	err := e.inTx(ctx, func(q dbtx) error {
		n, err := rowsAffected(q.ExecContext(ctx, sqlOutboxRecordFailure, p.ID, p.ClaimToken, p.Error, p.Delay.Microseconds(),
			driver.ErrorFingerprint(p.Error)))
		if err != nil || n == 0 {
			return err
		}
		_, err = q.ExecContext(ctx, sqlDeliveryRecord, p.ID, p.Error)
		return err
	})
	if err != nil {
		return translate(fmt.Errorf("error recording outbox failure: %w", err))
	}
	return nil
}

func (e *executor) OutboxList(ctx context.Context, p *driver.OutboxListParams) ([]*hookinboxtype.OutboxMessage, error) {
	rows, err := e.db.QueryContext(ctx, sqlOutboxList, p.NeedsReview, p.Pending, p.Limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	msgs, err := collect(rows, scanOutboxMessage)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	return msgs, nil
}

func (e *executor) OutboxStats(ctx context.Context) (*driver.OutboxStats, error) {
	var s driver.OutboxStats
	var oldest int64
	if err := e.db.QueryRowContext(ctx, sqlOutboxStats).Scan(&s.Pending, &oldest, &s.NeedsReview); err != nil {
		return nil, translate(fmt.Errorf("error reading outbox stats: %w", err))
	}
	s.OldestPendingAge = max(time.Duration(oldest)*time.Microsecond, 0)
	return &s, nil
}

func (e *executor) OutboxRetry(ctx context.Context, p *driver.OutboxRetryParams) (int, error) {
	var res sql.Result
	var err error
	switch {
	case p.ID != 0:
		res, err = e.db.ExecContext(ctx, sqlOutboxRetryOne, p.ID)
	case p.NeedsReview:
		res, err = e.db.ExecContext(ctx, sqlOutboxRetryNeedsReview)
	default:
		return 0, errors.New("outbox retry needs an id or NeedsReview")
	}
	n, err := rowsAffected(res, err)
	if err != nil {
		return 0, translate(fmt.Errorf("error resetting outbox messages for retry: %w", err))
	}
	return n, nil
}

// EffectClaim reads the key's state and takes it only when it is new or its lease ran
// out, all in one write transaction: a caller polling a key that another holds writes
// nothing and takes no token.
func (e *executor) EffectClaim(ctx context.Context, p *driver.EffectClaimParams) (*driver.EffectClaim, error) {
	var c driver.EffectClaim
	err := e.inTx(ctx, func(q dbtx) error {
		held, err := readEffect(ctx, q, p.Key, &c)
		if err != nil || c.Done || held {
			return err
		}
		c = driver.EffectClaim{}
		var token int64
		if err := q.QueryRowContext(ctx, sqlSequenceNext).Scan(&token); err != nil {
			return fmt.Errorf("error taking a token: %w", err)
		}
		err = q.QueryRowContext(ctx, sqlEffectClaim, p.Key, token, p.Lease.Microseconds()).Scan(&c.Token)
		if errors.Is(err, sql.ErrNoRows) {
			// Taken meanwhile: only possible outside a write transaction (a database
			// opened without _txlock=immediate). Report what is there now.
			_, err = readEffect(ctx, q, p.Key, &c)
		}
		return err
	})
	if err != nil {
		return nil, translate(fmt.Errorf("error claiming effect: %w", err))
	}
	return &c, nil
}

// readEffect fills c with the recorded result or the holder's lease end, and reports
// whether another caller's lease still runs. An absent key leaves c empty.
func readEffect(ctx context.Context, q dbtx, key string, c *driver.EffectClaim) (held bool, err error) {
	var leaseUntil int64
	err = q.QueryRowContext(ctx, sqlEffectGet, key).Scan(&c.Done, &c.Result, &leaseUntil, &held)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error reading effect: %w", err)
	}
	c.LeaseUntil = fromMicros(leaseUntil)
	return held && !c.Done, nil
}

func (e *executor) EffectComplete(ctx context.Context, key string, token int64, result []byte) (bool, error) {
	if result == nil {
		result = []byte{}
	}
	n, err := rowsAffected(e.db.ExecContext(ctx, sqlEffectComplete, key, token, result))
	if err != nil {
		return false, translate(fmt.Errorf("error recording effect: %w", err))
	}
	return n == 1, nil
}

func (e *executor) EffectRelease(ctx context.Context, key string, token int64) error {
	if _, err := e.db.ExecContext(ctx, sqlEffectRelease, key, token); err != nil {
		return translate(fmt.Errorf("error releasing effect: %w", err))
	}
	return nil
}

func scanOutboxMessage(row scanner) (*hookinboxtype.OutboxMessage, error) {
	var m hookinboxtype.OutboxMessage
	var payload string
	var created int64
	var published sql.NullInt64
	err := row.Scan(&m.ID, &m.AggregateType, &m.AggregateID, &m.EventType, &payload,
		&m.Source.Provider, &m.Source.Endpoint, &m.Source.EventID, &m.Destination,
		&created, &m.Attempts, &m.MaxAttempts, &m.FencingToken, &m.LastError, &published, &m.State, &m.TraceParent)
	if err != nil {
		return nil, err
	}
	m.Payload = []byte(payload)
	m.CreatedAt = fromMicros(created)
	m.PublishedAt = fromNullMicros(published)
	return &m, nil
}
