package billing

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Anomaly is a billing fact that was not applied and needs a person.
type Anomaly struct {
	ID        int64
	InvoiceID string
	Kind      string
	EventID   string
	EventType string
	Detail    string
	CreatedAt time.Time
}

// Querier is satisfied by *pgxpool.Pool, *pgx.Conn and pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Anomalies lists the recorded anomalies, oldest first.
func Anomalies(ctx context.Context, db Querier) ([]Anomaly, error) {
	rows, err := db.Query(ctx, sqlAnomalyList)
	if err != nil {
		return nil, fmt.Errorf("error listing billing anomalies: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Anomaly])
	if err != nil {
		return nil, fmt.Errorf("error listing billing anomalies: %w", err)
	}
	return list, nil
}
