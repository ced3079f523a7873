package billing

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Anomaly kinds a reconcile records when, after its repair, an invoice still differs
// from the provider's and no handler recorded why.
const (
	// AnomalyReconcileStatus: the provider's status could not be applied (a local
	// invoice ahead of or beside the provider's: open here, draft there).
	AnomalyReconcileStatus = "reconcile_status_differs"
	// AnomalyReconcileAmount: a paid invoice's amount differs from the provider's. A
	// payment is booked once, so a second amount is never applied by a handler.
	AnomalyReconcileAmount = "reconcile_amount_differs"
)

// Invoice is an invoice's local state, as a reconcile compares it.
type Invoice struct {
	ID         string
	Status     string
	AmountPaid int64
	Currency   string
}

// Store reads invoices and records anomalies, for a reconcile: NewStore on
// PostgreSQL, NewStoreSQL on SQLite.
type Store interface {
	// Invoices returns the local state of the invoices ids that exist.
	Invoices(ctx context.Context, ids []string) (map[string]Invoice, error)
	// Anomalies lists the recorded anomalies, oldest first.
	Anomalies(ctx context.Context) ([]Anomaly, error)
	// RecordAnomaly records a once per invoice and kind; it reports false when one
	// was recorded before.
	RecordAnomaly(ctx context.Context, a Anomaly) (bool, error)
}

// NewStore returns the Store of the billing tables on pool.
func NewStore(pool *pgxpool.Pool) Store { return pgStore{pool} }

// NewStoreSQL returns the Store of the billing tables on a SQLite database.
func NewStoreSQL(db *sql.DB) Store { return sqlStore{db} }

type pgStore struct{ pool *pgxpool.Pool }

func (s pgStore) Invoices(ctx context.Context, ids []string) (map[string]Invoice, error) {
	rows, err := s.pool.Query(ctx, sqlInvoicesByID, ids)
	if err != nil {
		return nil, fmt.Errorf("error reading invoices: %w", err)
	}
	defer rows.Close()
	m := map[string]Invoice{}
	for rows.Next() {
		var inv Invoice
		var currency *string
		if err := rows.Scan(&inv.ID, &inv.Status, &inv.AmountPaid, &currency); err != nil {
			return nil, fmt.Errorf("error reading invoices: %w", err)
		}
		if currency != nil {
			inv.Currency = *currency
		}
		m[inv.ID] = inv
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading invoices: %w", err)
	}
	return m, nil
}

func (s pgStore) Anomalies(ctx context.Context) ([]Anomaly, error) { return Anomalies(ctx, s.pool) }

func (s pgStore) RecordAnomaly(ctx context.Context, a Anomaly) (bool, error) {
	tag, err := s.pool.Exec(ctx, sqlAnomalyRecord, a.InvoiceID, a.Kind, a.EventID, a.EventType, a.Detail)
	if err != nil {
		return false, fmt.Errorf("error recording billing anomaly: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

type sqlStore struct{ db *sql.DB }

func (s sqlStore) Invoices(ctx context.Context, ids []string) (map[string]Invoice, error) {
	m := map[string]Invoice{}
	// One statement per invoice: SQLite has no array parameter, and a reconcile reads
	// at most the invoices it listed from the provider.
	for _, id := range ids {
		var inv Invoice
		var currency sql.NullString
		err := s.db.QueryRowContext(ctx, sqliteInvoiceByID, id).Scan(&inv.ID, &inv.Status, &inv.AmountPaid, &currency)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("error reading invoice %s: %w", id, err)
		}
		inv.Currency = currency.String
		m[id] = inv
	}
	return m, nil
}

func (s sqlStore) Anomalies(ctx context.Context) ([]Anomaly, error) { return AnomaliesSQL(ctx, s.db) }

func (s sqlStore) RecordAnomaly(ctx context.Context, a Anomaly) (bool, error) {
	res, err := s.db.ExecContext(ctx, sqliteAnomalyRecord, a.InvoiceID, a.Kind, a.EventID, a.EventType, a.Detail)
	if err != nil {
		return false, fmt.Errorf("error recording billing anomaly: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
