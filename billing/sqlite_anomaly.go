package billing

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SQLQuerier is satisfied by *sql.DB, *sql.Conn and *sql.Tx.
type SQLQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// AnomaliesSQL lists the anomalies recorded on a SQLite database, oldest first.
func AnomaliesSQL(ctx context.Context, db SQLQuerier) ([]Anomaly, error) {
	rows, err := db.QueryContext(ctx, sqliteAnomalyList)
	if err != nil {
		return nil, fmt.Errorf("error listing billing anomalies: %w", err)
	}
	defer rows.Close()
	var list []Anomaly
	for rows.Next() {
		var a Anomaly
		var created int64
		if err := rows.Scan(&a.ID, &a.InvoiceID, &a.Kind, &a.EventID, &a.EventType, &a.Detail, &created); err != nil {
			return nil, fmt.Errorf("error listing billing anomalies: %w", err)
		}
		a.CreatedAt = time.UnixMicro(created)
		list = append(list, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error listing billing anomalies: %w", err)
	}
	return list, nil
}
