package sqlitedriver_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
)

func TestMigrate_TwiceIsANoOp(t *testing.T) {
	t.Parallel()
	db := open(t, filepath.Join(t.TempDir(), "hookinbox.db"))
	d := sqlitedriver.New(db)
	ctx := context.Background()
	if applied, latest, err := d.SchemaVersion(ctx); err != nil || applied != 0 || latest < 1 {
		t.Fatalf("fresh file: applied=%d latest=%d err=%v", applied, latest, err)
	}
	for range 2 {
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	applied, latest, err := d.SchemaVersion(ctx)
	if err != nil || applied != latest {
		t.Fatalf("applied=%d latest=%d err=%v", applied, latest, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM hookinbox_migration`).Scan(&n); err != nil || n != latest {
		t.Fatalf("migration rows %d (%v), want %d", n, err, latest)
	}
	// The PostgreSQL driver's tables, by the same names.
	for _, table := range []string{"webhook_inbox", "outbox", "effects", "invoices", "ledger_entries", "billing_anomalies", "hookinbox_migration"} {
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
}

// Four processes migrating one fresh file at once, each with its own *sql.DB: BEGIN
// IMMEDIATE lets one apply and the others wait, then find nothing to do.
func TestMigrate_ConcurrentlyFromFourDatabases(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hookinbox.db")
	ctx := context.Background()
	var start, wg sync.WaitGroup
	start.Add(1)
	errs := make(chan error, 4)
	for range 4 {
		db := open(t, path)
		db.SetMaxOpenConns(1)
		wg.Go(func() {
			start.Wait()
			errs <- sqlitedriver.New(db).Migrate(ctx)
		})
	}
	start.Done()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	d := sqlitedriver.New(open(t, path))
	applied, latest, err := d.SchemaVersion(ctx)
	if err != nil || applied != latest {
		t.Fatalf("applied=%d latest=%d err=%v", applied, latest, err)
	}
	var n int
	if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM hookinbox_migration`).Scan(&n); err != nil || n != latest {
		t.Fatalf("migration rows %d (%v), want %d", n, err, latest)
	}
}

// Open's settings are in force on every connection of the pool, and its path is a
// file name even where it holds characters that a URI would read as syntax.
func TestOpen_SettingsOnEveryConnection(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "odd ?#% dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hookinbox.db")
	db := open(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not at its path: %v", err)
	}
	ctx := context.Background()
	var conns []*sql.Conn
	for range sqlitedriver.MaxOpenConns {
		c, err := db.Conn(ctx) // held, so each iteration gets another connection
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		var journal string
		var synchronous, busy, fk int
		err := c.QueryRowContext(ctx, `SELECT journal_mode, synchronous, timeout, foreign_keys
			FROM pragma_journal_mode, pragma_synchronous, pragma_busy_timeout, pragma_foreign_keys`).
			Scan(&journal, &synchronous, &busy, &fk)
		if err != nil {
			t.Fatal(err)
		}
		if journal != "wal" || synchronous != 2 || busy != sqlitedriver.BusyTimeoutMillis || fk != 1 {
			t.Errorf("connection %d: journal_mode=%s synchronous=%d busy_timeout=%d foreign_keys=%d, want wal 2 (FULL) %d 1",
				i, journal, synchronous, busy, sqlitedriver.BusyTimeoutMillis, fk)
		}
		_ = c.Close()
	}
}

// A transaction of Open's database holds the write lock from BEGIN, before any
// statement: a writer that does not wait (busy_timeout 0) is refused meanwhile.
func TestOpen_TransactionsTakeTheWriteLockAtBegin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tx, err := b.db.BeginTx(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	impatient, err := sql.Open("sqlite", "file:"+b.path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	_, err = impatient.ExecContext(b.ctx, `INSERT INTO invoices (id, customer_id, status) VALUES ('in_1', 'cus_1', 'open')`)
	if !errors.Is(sqlitedriver.New(impatient).TranslateError(err), driver.ErrUnavailable) {
		t.Fatalf("write during an open transaction: %v, want SQLITE_BUSY (unavailable)", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := impatient.ExecContext(b.ctx, `INSERT INTO invoices (id, customer_id, status) VALUES ('in_1', 'cus_1', 'open')`); err != nil {
		t.Fatalf("write after the transaction ended: %v", err)
	}
}
