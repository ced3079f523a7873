package billing

import (
	"context"
	"fmt"

	"github.com/hookinbox/hookinbox/driver"
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

// Store reads invoices and anomalies and records anomalies, for a reconcile and for
// a person looking at what needs them.
type Store interface {
	// Invoices returns the local state of the invoices ids that exist.
	Invoices(ctx context.Context, ids []string) (map[string]Invoice, error)
	// Anomalies lists the recorded anomalies, oldest first.
	Anomalies(ctx context.Context) ([]Anomaly, error)
	// RecordAnomaly records a once per invoice and kind; it reports false when one
	// was recorded before.
	RecordAnomaly(ctx context.Context, a Anomaly) (bool, error)
}

// NewStore returns the Store of the billing tables on d's database. Each call is a
// transaction of its own; TTx is as Register's.
func NewStore[TTx any](d driver.Driver[TTx]) Store {
	return store[TTx]{driver: d, d: dialectFor[TTx]()}
}

type store[TTx any] struct {
	driver driver.Driver[TTx]
	d      dialect[TTx]
}

// inTx runs fn in a transaction of the driver and commits it.
func (s store[TTx]) inTx(ctx context.Context, fn func(tx TTx) error) error {
	tx, err := s.driver.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	if err := fn(tx.Native()); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s store[TTx]) Invoices(ctx context.Context, ids []string) (map[string]Invoice, error) {
	m := map[string]Invoice{}
	var (
		inv      Invoice
		currency *string
	)
	err := s.inTx(ctx, func(tx TTx) error {
		return s.d.query(ctx, tx, s.d.statements().invoicesByID, []any{s.d.list(ids)},
			[]any{&inv.ID, &inv.Status, &inv.AmountPaid, &currency}, func() {
				inv.Currency = ""
				if currency != nil {
					inv.Currency = *currency
				}
				m[inv.ID] = inv
			})
	})
	if err != nil {
		return nil, fmt.Errorf("error reading invoices: %w", err)
	}
	return m, nil
}

func (s store[TTx]) Anomalies(ctx context.Context) (list []Anomaly, err error) {
	err = s.inTx(ctx, func(tx TTx) error {
		list, err = anomalies(ctx, s.d, tx)
		return err
	})
	return list, err
}

func (s store[TTx]) RecordAnomaly(ctx context.Context, a Anomaly) (recorded bool, err error) {
	err = s.inTx(ctx, func(tx TTx) error {
		recorded, err = recordAnomaly(ctx, s.d, tx, a)
		return err
	})
	return recorded, err
}
