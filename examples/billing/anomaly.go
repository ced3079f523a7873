package billing

import (
	"context"
	"fmt"
	"time"
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

// recordAnomaly records a once per invoice and kind; it reports false when one was
// recorded before.
func recordAnomaly[TTx any](ctx context.Context, d dialect[TTx], tx TTx, a Anomaly) (bool, error) {
	n, err := d.exec(ctx, tx, d.statements().anomalyRecord, a.InvoiceID, a.Kind, a.EventID, a.EventType, a.Detail)
	if err != nil {
		return false, fmt.Errorf("error recording billing anomaly: %w", err)
	}
	return n == 1, nil
}

// anomalies lists the recorded anomalies, oldest first.
func anomalies[TTx any](ctx context.Context, d dialect[TTx], tx TTx) ([]Anomaly, error) {
	var (
		list    []Anomaly
		a       Anomaly
		created int64
	)
	err := d.query(ctx, tx, d.statements().anomalyList, nil,
		[]any{&a.ID, &a.InvoiceID, &a.Kind, &a.EventID, &a.EventType, &a.Detail, &created}, func() {
			a.CreatedAt = time.UnixMicro(created)
			list = append(list, a)
		})
	if err != nil {
		return nil, fmt.Errorf("error listing billing anomalies: %w", err)
	}
	return list, nil
}
