package sqlitedriver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
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
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM hookinbox_migration`).Scan(&n); err != nil || n != migrationCount(t) {
		t.Fatalf("migration rows %d (%v), want %d", n, err, migrationCount(t))
	}
	// The PostgreSQL driver's tables, by the same names, and only hookinbox's own: the
	// billing tables are the billing package's to create, and the names from before
	// version 3 are gone.
	if got := tables(t, db); got != fmt.Sprint(hookinboxTables) {
		t.Errorf("tables %s, want %v", got, hookinboxTables)
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
	if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM hookinbox_migration`).Scan(&n); err != nil || n != migrationCount(t) {
		t.Fatalf("migration rows %d (%v), want %d", n, err, migrationCount(t))
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
	_, err = impatient.ExecContext(b.ctx, `INSERT INTO hookinbox_effect (key, state, token, lease_until) VALUES ('k', 'pending', 1, 0)`)
	if !errors.Is(sqlitedriver.New(impatient).TranslateError(err), driver.ErrUnavailable) {
		t.Fatalf("write during an open transaction: %v, want SQLITE_BUSY (unavailable)", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := impatient.ExecContext(b.ctx, `INSERT INTO hookinbox_effect (key, state, token, lease_until) VALUES ('k', 'pending', 1, 0)`); err != nil {
		t.Fatalf("write after the transaction ended: %v", err)
	}
}

// hookinboxTables are the tables of a migrated database, by name (sqlite_sequence is
// SQLite's, for AUTOINCREMENT).
var hookinboxTables = []string{"hookinbox_attempt", "hookinbox_audit", "hookinbox_backfill_checkpoint", "hookinbox_backlog", "hookinbox_delivery", "hookinbox_effect", "hookinbox_endpoint", "hookinbox_inbox", "hookinbox_migration", "hookinbox_minute", "hookinbox_outbox", "hookinbox_rollup", "hookinbox_sequence", "sqlite_sequence"}

// tables lists the tables of db's main schema, by name.
func tables(t *testing.T, db *sql.DB) string {
	t.Helper()
	return queryStrings(t, db, `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
}

// queryStrings returns the rows of a query of one text column, as fmt prints a slice.
func queryStrings(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(all)
}

// shape describes hookinbox's tables as queries see them: each column (name, type,
// NOT NULL, default, primary key) and each index's definition. It leaves out the names
// of CHECK constraints, which a renamed table keeps from before.
func shape(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"hookinbox_inbox", "hookinbox_outbox", "hookinbox_effect", "hookinbox_sequence"} {
		fmt.Fprintf(&b, "%s: %s\n  %s\n", table,
			queryStrings(t, db, `SELECT name || ' ' || type || ' ' || "notnull" || ' ' || coalesce(dflt_value, '-') || ' ' || pk
				FROM pragma_table_info(?1) ORDER BY cid`, table),
			queryStrings(t, db, `SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1 AND sql IS NOT NULL ORDER BY name`, table))
	}
	return b.String()
}

// legacyDatabase creates a database at schema version 2 as the driver released with it
// left it: testdata/schema_v2's migrations (with their unprefixed tables and the billing
// tables), recorded in hookinbox_migration.
func legacyDatabase(t *testing.T) *sql.DB {
	t.Helper()
	db := open(t, filepath.Join(t.TempDir(), "hookinbox.db"))
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	for _, q := range []string{`CREATE TABLE IF NOT EXISTS hookinbox_migration (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL DEFAULT (CAST(round(unixepoch('now', 'subsec') * 1000) AS INTEGER) * 1000)
) STRICT`, readFile(t, "testdata/schema_v2/001_inbox.sql"), readFile(t, "testdata/schema_v2/002_outbox_dispatch.sql"),
		`INSERT INTO hookinbox_migration (version, name) VALUES (1, 'inbox'), (2, 'outbox_dispatch')`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return db
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustExec(t *testing.T, db *sql.DB, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// The rows of a version 2 database, as the driver of that version wrote them.
var legacyRows = []string{
	`INSERT INTO webhook_inbox (provider, endpoint, event_id, event_type, payload, received_at, available_at, attempts, processed_at, outcome)
	 VALUES ('stripe', 'billing', 'evt_done', 'invoice.paid', '{"id":"evt_done"}', 1700000000000000, 1700000000000000, 0, 1700000000001000, 'processed')`,
	`INSERT INTO webhook_inbox (provider, endpoint, event_id, event_type, payload, received_at, available_at, attempts, last_error)
	 VALUES ('stripe', 'async', 'evt_pending', 'invoice.paid', '{"id":"evt_pending"}', 1700000000000000, 1700000000000000, 2, 'boom')`,
	`INSERT INTO webhook_inbox (provider, endpoint, event_id, event_type, payload, received_at, available_at, attempts, last_error)
	 VALUES ('stripe', 'async', 'evt_spent', 'invoice.paid', '{"id":"evt_spent"}', 1700000000000000, 1700000000000000, 10, 'boom')`,
	`INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, source_provider, source_endpoint, source_event_id, attempts, claim_token, published_at)
	 VALUES ('Invoice', 'in_1', 'InvoicePaymentBooked', '{"n":1}', 'stripe', 'billing', 'evt_done', 1, 1, 1700000000002000)`,
	`INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, source_provider, source_endpoint, source_event_id, destination, available_at)
	 VALUES ('Invoice', 'in_1', 'InvoicePaymentBooked', '{"n":2}', 'stripe', 'billing', 'evt_done', 'nats', 0)`,
	`INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, source_provider, source_endpoint, source_event_id, attempts, claim_token, last_error)
	 VALUES ('Invoice', 'in_1', 'InvoicePaymentBooked', '{"n":3}', 'stripe', 'billing', 'evt_done', 20, 6, 'refused')`,
	`INSERT INTO effects (key, state, token, lease_until, result, completed_at)
	 VALUES ('webhook:evt_done:refund', 'done', 7, 1700000000000000, CAST('re_1' AS BLOB), 1700000000003000)`,
	`UPDATE hookinbox_sequence SET value = 7 WHERE name = 'claim_token'`,
	`INSERT INTO invoices (id, customer_id, status, amount_paid, currency) VALUES ('in_1', 'cus_1', 'paid', 1500, 'eur')`,
	`INSERT INTO ledger_entries (invoice_id, kind, amount, currency, event_id) VALUES ('in_1', 'payment', 1500, 'eur', 'evt_done')`,
	`INSERT INTO billing_anomalies (invoice_id, kind, event_id, event_type, detail) VALUES ('in_2', 'payment_for_void', 'evt_x', 'invoice.paid', 'void')`,
}

// A database of schema version 2 is upgraded in place: hookinbox's tables take their
// new names with their rows, each row gets its state, and the billing tables stay as
// they were.
func TestMigrate_UpgradesAVersion2DatabaseInPlace(t *testing.T) {
	t.Parallel()
	db := legacyDatabase(t)
	mustExec(t, db, legacyRows...)
	d := sqlitedriver.New(db)
	ctx := context.Background()
	if applied, _, err := d.SchemaVersion(ctx); err != nil || applied != 2 {
		t.Fatalf("legacy database at version %d (%v), want 2", applied, err)
	}
	for range 2 {
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if applied, latest, err := d.SchemaVersion(ctx); err != nil || applied != latest || latest < 3 {
		t.Fatalf("applied=%d latest=%d err=%v", applied, latest, err)
	}
	want := append([]string{"billing_anomalies"}, hookinboxTables[:12]...)
	want = append(want, "hookinbox_sequence", "invoices", "ledger_entries", "sqlite_sequence")
	if got := tables(t, db); got != fmt.Sprint(want) {
		t.Fatalf("tables %s, want %v", got, want)
	}
	fresh := open(t, filepath.Join(t.TempDir(), "fresh.db"))
	if err := sqlitedriver.New(fresh).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := shape(t, db), shape(t, fresh); got != want {
		t.Fatalf("upgraded schema:\n%s\nwant, as a new database has it:\n%s", got, want)
	}
	if got := queryStrings(t, db, `SELECT quick_check FROM pragma_quick_check`); got != "[ok]" {
		t.Fatalf("quick_check: %s", got)
	}

	ex := d.Executor()
	for id, state := range map[string]hookinboxtype.State{"evt_done": hookinboxtype.StateProcessed, "evt_pending": hookinboxtype.StatePending, "evt_spent": hookinboxtype.StateNeedsReview} {
		endpoint := "async"
		if id == "evt_done" {
			endpoint = "billing"
		}
		r, err := ex.InboxGet(ctx, hookinboxtype.Key{Provider: "stripe", Endpoint: endpoint, EventID: id})
		if err != nil || r == nil || r.State != state || r.MaxAttempts != 0 || string(r.Payload) != fmt.Sprintf(`{"id":%q}`, id) {
			t.Errorf("%s: %+v %v, want %s", id, r, err, state)
		}
	}
	if got := queryStrings(t, db, `SELECT id || ' ' || state || ' ' || attempts FROM hookinbox_outbox ORDER BY id`); got != "[1 published 1 2 pending 0 3 needs_review 20]" {
		t.Errorf("outbox %s", got)
	}
	if c, err := ex.EffectClaim(ctx, &driver.EffectClaimParams{Key: "webhook:evt_done:refund", Lease: time.Minute}); err != nil || !c.Done || string(c.Result) != "re_1" {
		t.Errorf("effect %+v %v, want done with its result", c, err)
	}
	for table, want := range map[string]string{
		"invoices":          "[in_1 cus_1 paid 1500]",
		"ledger_entries":    "[in_1 payment 1500 evt_done]",
		"billing_anomalies": "[in_2 payment_for_void evt_x]",
	} {
		cols := map[string]string{
			"invoices":          `id || ' ' || customer_id || ' ' || status || ' ' || amount_paid`,
			"ledger_entries":    `invoice_id || ' ' || kind || ' ' || amount || ' ' || event_id`,
			"billing_anomalies": `invoice_id || ' ' || kind || ' ' || event_id`,
		}[table]
		if got := queryStrings(t, db, `SELECT `+cols+` FROM `+table); got != want {
			t.Errorf("%s: %s, want %s", table, got, want)
		}
	}

	// The renamed tables work as new ones: the processed receipt's key is a duplicate, a
	// payload that is not JSON is still refused (under the check's old name), the
	// claim counter and the outbox's ids carry on past the old ones.
	inserted, err := ex.InboxInsert(ctx, &driver.InboxInsertParams{
		Key: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_done"}, EventType: "invoice.paid",
		Payload: []byte(`{"id":"evt_done"}`), MaxAttempts: 10,
	})
	if err != nil || inserted {
		t.Fatalf("re-inserting the processed receipt: inserted=%v err=%v, want a duplicate", inserted, err)
	}
	_, err = ex.InboxInsert(ctx, &driver.InboxInsertParams{Key: key("evt_bad"), EventType: "t", Payload: []byte("{"), MaxAttempts: 10})
	if !errors.Is(err, driver.ErrInvalidInput) {
		t.Fatalf("payload not JSON: %v, want ErrInvalidInput", err)
	}
	mustExec(t, db, `DELETE FROM hookinbox_outbox WHERE id = 3`)
	id, err := ex.OutboxInsert(ctx, &driver.OutboxInsertParams{AggregateType: "a", AggregateID: "1", EventType: "e", Payload: []byte("{}"), Source: key("evt_1")})
	if err != nil || id != 4 {
		t.Fatalf("new outbox id %d (%v), want 4: never one used before", id, err)
	}
	msgs, err := ex.OutboxClaim(ctx, &driver.OutboxClaimParams{Destinations: []string{"nats"}, Limit: 10, Lease: time.Minute, MaxAttempts: 20})
	if err != nil || len(msgs) != 1 || msgs[0].ID != 2 || msgs[0].FencingToken <= 7 {
		t.Fatalf("outbox claim %+v %v, want message 2 with a token past 7", msgs, err)
	}
	r, err := claimOne(ctx, ex, &driver.InboxClaimParams{Endpoints: []string{"async"}, Lease: time.Minute, MaxAttempts: 10})
	if err != nil || r == nil || r.EventID != "evt_pending" || r.Attempts != 3 || r.MaxAttempts != 10 {
		t.Fatalf("inbox claim %+v %v, want evt_pending on its third attempt", r, err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE hookinbox_inbox SET state = 'lost'`); err == nil {
		t.Fatal("a state outside the CHECK accepted")
	}
}

// A database new at version 3 that already holds the application's own tables named as
// hookinbox's were before (webhook_inbox, outbox, with an index outbox_pending) and as
// billing's are (invoices): migrating creates hookinbox_* beside them and leaves them,
// their columns and their rows as they were.
func TestMigrate_NewDatabaseLeavesTheApplicationsTablesOfOldNames(t *testing.T) {
	t.Parallel()
	db := open(t, filepath.Join(t.TempDir(), "app.db"))
	ctx := context.Background()
	mustExec(t, db,
		`CREATE TABLE webhook_inbox (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`,
		`CREATE TABLE outbox (id INTEGER PRIMARY KEY, topic TEXT NOT NULL, sent INTEGER NOT NULL DEFAULT 0)`,
		`CREATE INDEX outbox_pending ON outbox (topic) WHERE sent = 0`,
		`CREATE TABLE invoices (number TEXT PRIMARY KEY, total INTEGER)`,
		`INSERT INTO webhook_inbox (body) VALUES ('mine'), ('also mine')`,
		`INSERT INTO outbox (topic) VALUES ('orders')`,
		`INSERT INTO invoices (number, total) VALUES ('2024-001', 99)`,
	)
	app := func() string {
		return queryStrings(t, db, `SELECT type || ' ' || name || ': ' || sql FROM sqlite_schema
				WHERE tbl_name IN ('webhook_inbox', 'outbox', 'invoices') AND sql IS NOT NULL ORDER BY name`) +
			queryStrings(t, db, `SELECT id || ' ' || body FROM webhook_inbox ORDER BY id`) +
			queryStrings(t, db, `SELECT id || ' ' || topic || ' ' || sent FROM outbox ORDER BY id`) +
			queryStrings(t, db, `SELECT number || ' ' || total FROM invoices`)
	}
	before := app()
	d := sqlitedriver.New(db)
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := app(); after != before {
		t.Fatalf("the application's tables changed:\n%s\nwere:\n%s", after, before)
	}
	want := append([]string{"hookinbox_attempt", "hookinbox_audit", "hookinbox_backfill_checkpoint", "hookinbox_backlog", "hookinbox_delivery", "hookinbox_effect", "hookinbox_endpoint", "hookinbox_inbox", "hookinbox_migration", "hookinbox_minute", "hookinbox_outbox", "hookinbox_rollup", "hookinbox_sequence"},
		"invoices", "outbox", "sqlite_sequence", "webhook_inbox")
	if got := tables(t, db); got != fmt.Sprint(want) {
		t.Fatalf("tables %s, want %v", got, want)
	}
	fresh := open(t, filepath.Join(t.TempDir(), "fresh.db"))
	if err := sqlitedriver.New(fresh).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := shape(t, db), shape(t, fresh); got != want {
		t.Fatalf("hookinbox's schema beside the application's:\n%s\nwant:\n%s", got, want)
	}
}

// Another package's line (billing's, say) migrates with its own version table, apart
// from hookinbox's, and a failed migration of it changes nothing.
func TestMigrateLine_AnotherLineHasItsOwnVersionTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, table := range []string{"billing_migration", `odd-"name"`} {
		first := driver.Migration{Version: 1, Name: "first", SQL: "CREATE TABLE app_t (id INTEGER PRIMARY KEY) STRICT;"}
		second := driver.Migration{Version: 2, Name: "second", SQL: "ALTER TABLE app_t ADD COLUMN note TEXT;"}
		if table != "billing_migration" {
			first.SQL = "CREATE TABLE app_u (id INTEGER PRIMARY KEY) STRICT;"
			second.SQL = "ALTER TABLE app_u ADD COLUMN note TEXT;"
		}
		line := driver.MigrationLine{Name: "billing", Table: table, Migrations: []driver.Migration{first}}
		if applied, latest, err := b.d.LineVersion(b.ctx, line); err != nil || applied != 0 || latest != 1 {
			t.Fatalf("%s before: applied=%d latest=%d err=%v", table, applied, latest, err)
		}
		for range 2 {
			if err := b.d.MigrateLine(b.ctx, line); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
		}
		broken := line
		broken.Migrations = []driver.Migration{first, second, {Version: 3, Name: "broken", SQL: "CREATE TABLE app_t (id INTEGER);"}}
		if err := b.d.MigrateLine(b.ctx, broken); err == nil || !strings.Contains(err.Error(), "billing migration 003_broken") {
			t.Fatalf("%s: broken migration: %v", table, err)
		}
		if applied, latest, err := b.d.LineVersion(b.ctx, broken); err != nil || applied != 1 || latest != 3 {
			t.Fatalf("%s after a failed migration: applied=%d latest=%d err=%v, want 1 of 3", table, applied, latest, err)
		}
		line.Migrations = []driver.Migration{first, second}
		if err := b.d.MigrateLine(b.ctx, line); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if applied, latest, err := b.d.LineVersion(b.ctx, line); err != nil || applied != 2 || latest != 2 {
			t.Fatalf("%s: applied=%d latest=%d err=%v", table, applied, latest, err)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM billing_migration`); n != 2 {
		t.Fatalf("billing_migration has %d rows, want 2", n)
	}
	if n := b.count(t, `SELECT count(*) FROM app_t WHERE note IS NULL`); n != 0 {
		t.Fatalf("app_t: %d rows", n)
	}
	core, err := sqlitedriver.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if applied, latest, err := b.d.LineVersion(b.ctx, core); err != nil || applied != latest || core.Table != sqlitedriver.MigrationTable {
		t.Fatalf("hookinbox's line: applied=%d latest=%d err=%v", applied, latest, err)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_migration`); n != len(core.Migrations) {
		t.Fatalf("hookinbox_migration has %d rows, want %d", n, len(core.Migrations))
	}
}

// The script WriteMigrations writes makes the schema Migrate makes, and records it so
// that Migrate finds nothing to do; from version 2 it names the rename step first.
func TestWriteMigrations_ScriptMakesWhatMigrateMakes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	line, err := sqlitedriver.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	script := func(from int) string {
		var b strings.Builder
		if err := driver.WriteMigrations(&b, sqlitedriver.MigrationDialect(), line, from); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	everything := func(db *sql.DB) string {
		return queryStrings(t, db, `SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema ORDER BY name`) +
			queryStrings(t, db, `SELECT version || ' ' || name FROM hookinbox_migration ORDER BY version`)
	}
	migrated := setup(t)

	scripted := open(t, filepath.Join(t.TempDir(), "scripted.db"))
	mustExec(t, scripted, script(0))
	if got, want := everything(scripted), everything(migrated.db); got != want {
		t.Fatalf("scripted schema:\n%s\nwant:\n%s", got, want)
	}
	d := sqlitedriver.New(scripted)
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if applied, latest, err := d.SchemaVersion(ctx); err != nil || applied != latest {
		t.Fatalf("applied=%d latest=%d err=%v", applied, latest, err)
	}

	// From version 2: the rename step, given as comments, then the script.
	fromV2 := script(2)
	if strings.Contains(fromV2, "001_inbox") || !strings.Contains(fromV2, "--     ALTER TABLE webhook_inbox RENAME TO hookinbox_inbox;\n") {
		t.Fatalf("script from version 2:\n%s", fromV2)
	}
	var rename []string
	for l := range strings.Lines(fromV2) {
		if stmt, ok := strings.CutPrefix(l, "--     "); ok {
			rename = append(rename, stmt)
		}
	}
	legacy, upgraded := legacyDatabase(t), legacyDatabase(t)
	mustExec(t, legacy, legacyRows...)
	mustExec(t, upgraded, legacyRows...)
	mustExec(t, legacy, strings.Join(rename, ""), fromV2)
	if err := sqlitedriver.New(upgraded).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := everything(legacy), everything(upgraded); got != want {
		t.Fatalf("schema after the rename step and the script:\n%s\nwant, as Migrate makes it:\n%s", got, want)
	}
	if strings.Contains(script(3), "RENAME") {
		t.Fatal("script from version 3 names the rename step")
	}
}

// migrationCount is the number of hookinbox's migrations: a migrated database has a
// row for each. Versions need not be contiguous (a version reserved by a branch not
// yet merged), so it is not the latest version.
func migrationCount(t *testing.T) int {
	t.Helper()
	line, err := sqlitedriver.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	return len(line.Migrations)
}
