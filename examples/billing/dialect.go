package billing

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
)

// dialect is billing's SQL on one database, and how its statements run on the
// transaction type TTx of that database's driver. The handlers, the store and their
// error messages are written once over it; each database's statements are in one file
// (postgres.go, sqlite.go).
type dialect[TTx any] interface {
	statements() *statements

	// exec runs a statement and returns how many rows it changed.
	exec(ctx context.Context, tx TTx, query string, args ...any) (int64, error)
	// queryRow scans the first row of a query into dest; found is false when it
	// returned none.
	queryRow(ctx context.Context, tx TTx, query string, args []any, dest ...any) (found bool, err error)
	// query scans each row of a query into dest and calls each after every row.
	query(ctx context.Context, tx TTx, query string, args []any, dest []any, each func()) error
	// list binds a list of values as the dialect's statements read one.
	list(values []string) any

	// insertOutbox writes messages[k] to hookinbox's outbox on behalf of sources[k].
	insertOutbox(ctx context.Context, tx TTx, sources []hookinbox.Event, messages []hookinbox.OutboxMessage) error
}

// statements are billing's SQL in one database. Each is a guarded state transition:
// creation inserts only if absent, and an update names the states it may leave, so
// late or repeated events cannot roll an invoice back.
type statements struct {
	invoiceCreate            string // $1 id, $2 customer, $3 status, $4 currency
	invoiceFinalize          string // $1 id, $2 customer, $3 currency
	invoicePay               string // $1 id, $2 customer, $3 amount, $4 currency; returns the status, or no row when the guard refused
	invoiceVoid              string // as invoicePay, without the amount
	invoiceMarkUncollectible string // as invoiceFinalize
	invoiceStatus            string // $1 id
	// invoicePayMany is invoicePay and ledgerBookPayment for a batch (PaymentsBatch),
	// in one statement, "" where the database has no such statement.
	invoicePayMany    string
	ledgerBookPayment string // $1 invoice, $2 amount, $3 currency, $4 event id; returns the entry's id, or no row when booked already
	anomalyRecord     string // $1 invoice, $2 kind, $3 event id, $4 event type, $5 detail
	anomalyList       string // created_at in unix microseconds
	invoicesByID      string // $1 the ids, bound with list
}

// dialectFor returns the dialect of TTx: PostgreSQL's for pgx.Tx, SQLite's for
// *sql.Tx. It panics on another type, which no driver of hookinbox has.
func dialectFor[TTx any]() dialect[TTx] {
	var d any
	switch any((*TTx)(nil)).(type) {
	case *pgx.Tx:
		d = postgres{}
	case **sql.Tx:
		d = sqlite{}
	default:
		panic(fmt.Sprintf("billing: no SQL for a driver whose transaction is %v", reflect.TypeFor[TTx]()))
	}
	return d.(dialect[TTx])
}

// insertOutbox writes messages[k] on behalf of sources[k] in tx, a transaction of
// TDriver's: one message as InsertOutboxTx writes it, several in one statement.
func insertOutbox[TDriver driver.Driver[TTx], TTx any](ctx context.Context, tx TTx, sources []hookinbox.Event, messages []hookinbox.OutboxMessage) error {
	if len(messages) == 1 {
		_, err := hookinbox.InsertOutboxTx[TDriver](ctx, tx, sources[0], messages[0])
		return err
	}
	return hookinbox.InsertOutboxBatchTx[TDriver](ctx, tx, sources, messages)
}
