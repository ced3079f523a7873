package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

func (e *executor) OutboxClaim(ctx context.Context, p *driver.OutboxClaimParams) ([]*hookinboxtype.OutboxMessage, error) {
	if p.MaxAttempts < 1 {
		return nil, driver.ErrNoAttemptLimit
	}
	return driver.ClaimPending(func() ([]*hookinboxtype.OutboxMessage, error) {
		limits := make([]int32, len(p.Destinations))
		ordered := make([]bool, len(p.Destinations))
		for k, dest := range p.Destinations {
			limits[k] = int32(p.LimitFor(k))
			ordered[k] = slices.Contains(p.Ordered, dest)
		}
		rows, err := e.db.Query(ctx, sqlOutboxClaim, limits, p.Lease.Seconds(), p.MaxAttempts, p.Destinations, ordered)
		if err != nil {
			return nil, translate(fmt.Errorf("error claiming outbox messages: %w", err))
		}
		msgs, err := pgx.CollectRows(rows, scanOutboxMessage)
		if err != nil {
			return nil, translate(fmt.Errorf("error claiming outbox messages: %w", err))
		}
		return msgs, nil
	}, driver.MessageState)
}

func (e *executor) OutboxMarkPublished(ctx context.Context, id, token int64) (bool, error) {
	tag, err := e.db.Exec(ctx, markPublishedSQL, id, token)
	if err != nil {
		return false, translate(fmt.Errorf("error marking outbox message published: %w", err))
	}
	return tag.RowsAffected() == 1, nil
}

func (e *executor) OutboxMarkPublishedMany(ctx context.Context, marks []driver.OutboxMark) ([]int64, error) {
	ids := make([]int64, len(marks))
	tokens := make([]int64, len(marks))
	for k, m := range marks {
		ids[k], tokens[k] = m.ID, m.Token
	}
	rows, err := e.db.Query(ctx, markPublishedManySQL, ids, tokens)
	if err != nil {
		return nil, translate(fmt.Errorf("error marking outbox messages published: %w", err))
	}
	published, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, translate(fmt.Errorf("error marking outbox messages published: %w", err))
	}
	return published, nil
}

func (e *executor) OutboxRecordFailure(ctx context.Context, p *driver.OutboxFailureParams) error {
	if _, err := e.db.Exec(ctx, sqlOutboxRecordFailure, p.ID, p.ClaimToken, p.Error, p.Delay.Seconds(),
		driver.ErrorFingerprint(p.Error)); err != nil {
		return translate(fmt.Errorf("error recording outbox failure: %w", err))
	}
	return nil
}

func (e *executor) OutboxList(ctx context.Context, p *driver.OutboxListParams) ([]*hookinboxtype.OutboxMessage, error) {
	rows, err := e.db.Query(ctx, sqlOutboxList, p.NeedsReview, p.Pending, p.Limit)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	msgs, err := pgx.CollectRows(rows, scanOutboxMessage)
	if err != nil {
		return nil, translate(fmt.Errorf("error listing outbox messages: %w", err))
	}
	return msgs, nil
}

func (e *executor) OutboxStats(ctx context.Context) (*driver.OutboxStats, error) {
	var s driver.OutboxStats
	var oldest float64
	if err := e.db.QueryRow(ctx, sqlOutboxStats).Scan(&s.Pending, &oldest, &s.NeedsReview); err != nil {
		return nil, translate(fmt.Errorf("error reading outbox stats: %w", err))
	}
	s.OldestPendingAge = time.Duration(oldest * float64(time.Second))
	return &s, nil
}

func (e *executor) OutboxRetry(ctx context.Context, p *driver.OutboxRetryParams) (int, error) {
	var tagErr error
	var n int64
	switch {
	case p.ID != 0:
		tag, err := e.db.Exec(ctx, sqlOutboxRetryOne, p.ID)
		n, tagErr = tag.RowsAffected(), err
	case p.NeedsReview:
		tag, err := e.db.Exec(ctx, sqlOutboxRetryNeedsReview)
		n, tagErr = tag.RowsAffected(), err
	default:
		return 0, errors.New("outbox retry needs an id or NeedsReview")
	}
	if tagErr != nil {
		return 0, translate(fmt.Errorf("error resetting outbox messages for retry: %w", tagErr))
	}
	return int(n), nil
}

func (e *executor) EffectClaim(ctx context.Context, p *driver.EffectClaimParams) (*driver.EffectClaim, error) {
	var c driver.EffectClaim
	err := e.db.QueryRow(ctx, sqlEffectClaim, p.Key, p.Lease.Seconds()).Scan(&c.Token)
	if err == nil {
		return &c, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, translate(fmt.Errorf("error claiming effect: %w", err))
	}
	// Done, or leased by another caller. The row may have been released between the
	// two statements: then it reads as absent, and the caller simply claims again.
	err = e.db.QueryRow(ctx, sqlEffectGet, p.Key).Scan(&c.Done, &c.Result, &c.LeaseUntil)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, translate(fmt.Errorf("error reading effect: %w", err))
	}
	return &c, nil
}

func (e *executor) EffectComplete(ctx context.Context, key string, token int64, result []byte) (bool, error) {
	if result == nil {
		result = []byte{}
	}
	tag, err := e.db.Exec(ctx, sqlEffectComplete, key, token, result)
	if err != nil {
		return false, translate(fmt.Errorf("error recording effect: %w", err))
	}
	return tag.RowsAffected() == 1, nil
}

func (e *executor) EffectRelease(ctx context.Context, key string, token int64) error {
	if _, err := e.db.Exec(ctx, sqlEffectRelease, key, token); err != nil {
		return translate(fmt.Errorf("error releasing effect: %w", err))
	}
	return nil
}

func scanOutboxMessage(row pgx.CollectableRow) (*hookinboxtype.OutboxMessage, error) {
	var m hookinboxtype.OutboxMessage
	err := row.Scan(&m.ID, &m.AggregateType, &m.AggregateID, &m.EventType, rawJSON(&m.Payload),
		&m.Source.Provider, &m.Source.Endpoint, &m.Source.EventID, &m.Destination,
		&m.CreatedAt, &m.Attempts, &m.MaxAttempts, &m.FencingToken, &m.LastError, &m.PublishedAt, &m.State, &m.TraceParent)
	return &m, err
}
