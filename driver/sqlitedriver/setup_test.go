package sqlitedriver_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// bundle is one test's world: its own database file, migrated, and a driver on it.
type bundle struct {
	ctx  context.Context
	path string
	db   *sql.DB
	d    *sqlitedriver.Driver
	ex   driver.Executor
}

func setup(t testing.TB) *bundle {
	t.Helper()
	b := &bundle{ctx: context.Background(), path: filepath.Join(t.TempDir(), "hookinbox.db")}
	b.db = open(t, b.path)
	b.d = sqlitedriver.New(b.db)
	if err := b.d.Migrate(b.ctx); err != nil {
		t.Fatal(err)
	}
	b.ex = b.d.Executor()
	return b
}

// open opens the database file at path with Open's settings, closed at the end of
// the test.
func open(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sqlitedriver.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// process opens another *sql.DB on the test's file with a single connection: what
// another process on the same file has.
func (b *bundle) process(t testing.TB) *sql.DB {
	t.Helper()
	db := open(t, b.path)
	db.SetMaxOpenConns(1)
	return db
}

func (b *bundle) count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.QueryRowContext(b.ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (b *bundle) exec(t testing.TB, query string, args ...any) {
	t.Helper()
	if _, err := b.db.ExecContext(b.ctx, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// claimOne claims at most one receipt, as a worker with a batch size of 1 does.
func claimOne(ctx context.Context, ex driver.Executor, p *driver.InboxClaimParams) (*hookinboxtype.Receipt, error) {
	q := *p
	q.Limit = 1
	rs, err := ex.InboxClaim(ctx, &q)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return rs[0], nil
}

// lockOne locks one receipt if it is pending, and returns it (nil otherwise).
func lockOne(ctx context.Context, ex driver.Executor, key hookinboxtype.Key) (*hookinboxtype.Receipt, error) {
	rs, err := ex.InboxLockUnprocessed(ctx, []hookinboxtype.Key{key})
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return rs[0], nil
}
