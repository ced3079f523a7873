package sqlitedriver_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
)

// holdWriteLock begins a transaction on the test's database, which holds the write
// lock until the end of the test.
func (b *bundle) holdWriteLock(t *testing.T) {
	t.Helper()
	tx, err := b.d.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(b.ctx) })
}

func TestTranslateError_BusyAfterTheBusyTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.holdWriteLock(t)
	impatient, err := sql.Open("sqlite", "file:"+b.path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	_, err = sqlitedriver.New(impatient).Begin(b.ctx)
	if !errors.Is(err, driver.ErrUnavailable) || errors.Is(err, driver.ErrStatementTimeout) {
		t.Fatalf("Begin while another holds the write lock: %v, want ErrUnavailable", err)
	}
}

// A wait for the write lock ended by a context deadline is a timeout; one ended by a
// cancellation is not.
func TestTranslateError_DeadlineIsTimeoutCancellationIsNot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.holdWriteLock(t)
	other := sqlitedriver.New(b.process(t))

	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Millisecond)
	defer cancel()
	_, err := other.Begin(ctx)
	if !errors.Is(err, driver.ErrStatementTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Begin past its deadline: %v, want ErrStatementTimeout", err)
	}

	ctx, cancel = context.WithCancel(b.ctx)
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	_, err = other.Begin(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, driver.ErrStatementTimeout) || errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("Begin cancelled: %v, want context.Canceled only", err)
	}
}

// A statement running when the context's deadline passes is interrupted.
func TestTranslateError_InterruptedStatementIsTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Millisecond)
	defer cancel()
	var n int64
	err := b.db.QueryRowContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c`).Scan(&n)
	if err = b.d.TranslateError(err); !errors.Is(err, driver.ErrStatementTimeout) {
		t.Fatalf("endless statement: %v, want ErrStatementTimeout", err)
	}
}

func TestTranslateError_OtherErrorsPassThrough(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if b.d.TranslateError(nil) != nil {
		t.Fatal("nil translated")
	}
	handlerErr := errors.New("no such customer")
	if err := b.d.TranslateError(handlerErr); err != handlerErr {
		t.Fatalf("handler error changed: %v", err)
	}
	// Constraint violations of business tables are the handler's: not invalid input.
	b.exec(t, `CREATE TABLE app_invoice (id TEXT PRIMARY KEY, status TEXT NOT NULL CHECK (status IN ('open', 'paid'))) STRICT`)
	b.exec(t, `CREATE TABLE app_ledger (invoice_id TEXT NOT NULL, kind TEXT NOT NULL, UNIQUE (invoice_id, kind)) STRICT`)
	_, err := b.db.ExecContext(b.ctx, `INSERT INTO app_invoice (id, status) VALUES ('in_1', 'refunded')`)
	if err == nil {
		t.Fatal("status outside the CHECK accepted")
	}
	if err := b.d.TranslateError(err); errors.Is(err, driver.ErrInvalidInput) || errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("CHECK violation translated to %v", err)
	}
	b.exec(t, `INSERT INTO app_ledger (invoice_id, kind) VALUES ('in_1', 'payment')`)
	_, err = b.db.ExecContext(b.ctx, `INSERT INTO app_ledger (invoice_id, kind) VALUES ('in_1', 'payment')`)
	if err == nil || errors.Is(b.d.TranslateError(err), driver.ErrInvalidInput) {
		t.Fatalf("unique violation: %v", err)
	}
}
