package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
)

// runDB is the database of a run: for PostgreSQL, a schema of the run's own.
type runDB struct {
	db config.Database // what the server opens: on PostgreSQL, search_path set to schema
	// url is the database as given, without the schema, for pgbench and its schema.
	url string
	// admin creates, counts and drops schemas; nil on SQLite.
	admin  *pgxpool.Pool
	schema string
	keep   bool
}

// openRunDB connects to f's database and, on PostgreSQL, creates the run's schema.
func openRunDB(ctx context.Context, c *Config, r *Report) (*runDB, error) {
	raw := c.DatabaseURL
	if raw == "" {
		raw = DefaultDatabase
	}
	db, err := config.ParseDatabaseURL(raw, config.SourceFlag)
	if err != nil {
		return nil, usagef("--database-url: %v", err)
	}
	r.Database = db.String()
	if db.Driver == config.DriverSQLite {
		r.Settings.Database = "sqlite"
		return &runDB{db: db, keep: true}, nil
	}
	r.Settings.Database = "postgres"
	admin, err := connectAdmin(ctx, raw)
	if err != nil {
		return nil, err
	}
	b := &runDB{url: raw, admin: admin, schema: c.Schema, keep: c.Keep || c.Schema != ""}
	create := "CREATE SCHEMA IF NOT EXISTS "
	if b.schema == "" {
		b.schema = "hookinbox_bench_" + randomHex(4)
		create = "CREATE SCHEMA "
	}
	if _, err := admin.Exec(ctx, create+pgx.Identifier{b.schema}.Sanitize()); err != nil {
		admin.Close()
		return nil, fmt.Errorf("error creating schema %s: %w", b.schema, err)
	}
	r.Schema, r.SchemaKept = b.schema, b.keep
	if b.db, err = schemaDatabase(raw, b.schema); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// connectAdmin opens a small pool on the database as given, and checks that it answers.
func connectAdmin(ctx context.Context, raw string) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, usagef("--database-url: %v", err)
	}
	pcfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to %s: %w", config.Database{Driver: config.DriverPostgres, URL: raw}, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting to %s (bench needs a PostgreSQL server: --database-url postgres://..., or sqlite:PATH): %w",
			config.Database{Driver: config.DriverPostgres, URL: raw}, err)
	}
	return pool, nil
}

// schemaDatabase is raw with search_path set to schema, which pgx sends as a run-time
// parameter of every connection.
func schemaDatabase(raw, schema string) (config.Database, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return config.Database{}, usagef("--database-url: cannot parse it")
	}
	q := u.Query()
	q.Set("search_path", schema)
	if q.Get("application_name") == "" {
		q.Set("application_name", "hookinbox-bench")
	}
	u.RawQuery = q.Encode()
	return config.ParseDatabaseURL(u.String(), config.SourceFlag)
}

// anchorSchema creates a fresh schema prefix<random> on the database at raw, with
// the tables of cfg's migrations, for an anchor's run beside hookinbox's. It returns
// the schema, the database with search_path set to it, and a function that drops it,
// which runs after an interrupt too.
func anchorSchema(ctx context.Context, admin *pgxpool.Pool, raw, prefix string, cfg *config.Config) (string, config.Database, func(), error) {
	schema := prefix + randomHex(4)
	sctx := context.WithoutCancel(ctx)
	if _, err := admin.Exec(sctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return "", config.Database{}, nil, fmt.Errorf("error creating schema %s: %w", schema, err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(sctx, time.Minute)
		defer cancel()
		_, _ = admin.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	}
	db, err := schemaDatabase(raw, schema)
	if err != nil {
		drop()
		return "", config.Database{}, nil, err
	}
	b, err := server.Open(sctx, db, cfg, server.OpenOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		drop()
		return "", config.Database{}, nil, err
	}
	_, err = b.Migrate(sctx)
	b.Close()
	if err != nil {
		drop()
		return "", config.Database{}, nil, fmt.Errorf("error migrating schema %s: %w", schema, err)
	}
	return schema, db, drop, nil
}

// close drops the run's schema unless it is kept, and closes the pool. It runs after
// an interrupt too, so it has a context of its own.
func (b *runDB) close() {
	if b.admin == nil {
		return
	}
	if !b.keep {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, _ = b.admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{b.schema}.Sanitize()+" CASCADE")
		cancel()
	}
	b.admin.Close()
}

// DBCounts is what the run left in the database.
type DBCounts struct {
	Receipts        int64  `json:"receipts"`
	ReceiptsPending int64  `json:"receipts_pending"`
	LedgerEntries   *int64 `json:"ledger_entries,omitempty"`
	OutboxMessages  int64  `json:"outbox_messages"`
	OutboxPending   int64  `json:"outbox_pending"`
}

const sqlBenchCounts = `
SELECT (SELECT count(*) FROM %[1]shookinbox_inbox),
       (SELECT count(*) FROM %[1]shookinbox_inbox WHERE state = 'pending'),
       (SELECT count(*) FROM %[1]shookinbox_outbox),
       (SELECT count(*) FROM %[1]shookinbox_outbox WHERE state = 'pending')`

func countPostgres(ctx context.Context, admin *pgxpool.Pool, schema string) (*DBCounts, error) {
	prefix := pgx.Identifier{schema}.Sanitize() + "."
	var c DBCounts
	if err := admin.QueryRow(ctx, fmt.Sprintf(sqlBenchCounts, prefix)).Scan(
		&c.Receipts, &c.ReceiptsPending, &c.OutboxMessages, &c.OutboxPending); err != nil {
		return nil, fmt.Errorf("error counting the run's rows: %w", err)
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, prefix+"ledger_entries").Scan(&exists); err != nil {
		return nil, fmt.Errorf("error counting the run's rows: %w", err)
	}
	if exists {
		var n int64
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+prefix+"ledger_entries").Scan(&n); err != nil {
			return nil, fmt.Errorf("error counting the run's rows: %w", err)
		}
		c.LedgerEntries = &n
	}
	return &c, nil
}

func countSQLite(ctx context.Context, path string) (*DBCounts, error) {
	db, err := sqlitedriver.Open(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var c DBCounts
	if err := db.QueryRowContext(ctx, fmt.Sprintf(sqlBenchCounts, "")).Scan(
		&c.Receipts, &c.ReceiptsPending, &c.OutboxMessages, &c.OutboxPending); err != nil {
		return nil, fmt.Errorf("error counting the run's rows: %w", err)
	}
	var n int64
	switch err := db.QueryRowContext(ctx, "SELECT count(*) FROM ledger_entries").Scan(&n); {
	case err == nil:
		c.LedgerEntries = &n
	case !strings.Contains(err.Error(), "no such table"):
		return nil, fmt.Errorf("error counting the run's rows: %w", err)
	}
	return &c, nil
}
