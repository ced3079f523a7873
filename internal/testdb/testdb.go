// Package testdb gives each test its own PostgreSQL schema on a real server, so tests
// run in parallel without seeing each other's rows.
//
// The server is TEST_DATABASE_URL, by default postgres://postgres@127.0.0.1:5432/test.
// Nothing is mocked: an unreachable server fails the test and says what to do.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	neturl "net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the server used when TEST_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL returns the test server's URL.
func URL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

var (
	adminOnce sync.Once
	admin     *pgxpool.Pool
	adminErr  error
)

func adminPool() (*pgxpool.Pool, error) {
	adminOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(URL())
		if err != nil {
			adminErr = fmt.Errorf("TEST_DATABASE_URL is not a valid URL: %w", err)
			return
		}
		cfg.MaxConns = 2
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		admin, adminErr = pgxpool.NewWithConfig(ctx, cfg)
		if adminErr == nil {
			adminErr = admin.Ping(ctx)
		}
	})
	return admin, adminErr
}

// DB is one test's schema.
type DB struct {
	// Schema is the schema's name. It is also the application_name of every
	// connection, so a test can find its own sessions in pg_stat_activity.
	Schema string
	// Pool connects with the schema as its search_path.
	Pool *pgxpool.Pool
}

// Options tune New.
type Options struct {
	// MaxConns caps the pool. Defaults to 10.
	MaxConns int32
}

// New creates a fresh schema and a pool on it, both dropped when the test ends.
func New(t testing.TB, opts ...Options) *DB {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.MaxConns == 0 {
		o.MaxConns = 10
	}
	a, err := adminPool()
	if err != nil {
		t.Fatalf("PostgreSQL is not reachable at %s: %v\n"+
			"Start it (see README, \"Running the tests\"), or point TEST_DATABASE_URL at a server you may create schemas on.", URL(), err)
	}
	ctx := context.Background()
	schema := "hi_" + randomHex(6)
	if _, err := a.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("error creating test schema: %v", err)
	}
	cfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = o.MaxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("error opening test pool: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		if os.Getenv("HOOKINBOX_KEEP_TEST_SCHEMA") != "" {
			t.Logf("kept test schema %s", schema)
			return
		}
		if _, err := a.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("error dropping test schema %s: %v", schema, err)
		}
	})
	return &DB{Schema: schema, Pool: pool}
}

// Config returns a pool config for the test's schema, for tests that need a pool of
// their own (a second process, a pool with other limits).
func (db *DB) Config(t testing.TB) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = db.Schema
	cfg.ConnConfig.RuntimeParams["application_name"] = db.Schema
	return cfg
}

// WaitForLockWaiters polls pg_stat_activity until n of the test's sessions wait on a
// lock. It is how a test knows a concurrent copy is blocked, without sleeping.
func (db *DB) WaitForLockWaiters(t testing.TB, n int) {
	t.Helper()
	a, _ := adminPool()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		err := a.QueryRow(context.Background(), `
SELECT count(*) FROM pg_stat_activity
 WHERE application_name = $1 AND wait_event_type = 'Lock'`, db.Schema).Scan(&waiting)
		if err != nil {
			t.Fatalf("error reading pg_stat_activity: %v", err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions waiting on a lock after 30 s, want %d", waiting, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewSchemaURL creates a fresh schema and returns a database URL whose connections use
// it as their search_path, for code that takes a URL and has no testing.TB: the
// packages' runnable examples read it from DATABASE_URL, as a service would. drop
// removes the schema.
func NewSchemaURL() (url string, drop func(), err error) {
	a, err := adminPool()
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL is not reachable at %s: %w", URL(), err)
	}
	schema := "hi_" + randomHex(6)
	if _, err := a.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("error creating example schema: %w", err)
	}
	cfg, err := neturl.Parse(URL())
	if err != nil {
		return "", nil, err
	}
	q := cfg.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	cfg.RawQuery = q.Encode()
	drop = func() {
		if os.Getenv("HOOKINBOX_KEEP_TEST_SCHEMA") == "" {
			_, _ = a.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		}
	}
	return cfg.String(), drop, nil
}

// RunWithDatabaseURL runs m with DATABASE_URL set to a fresh schema's URL (see
// NewSchemaURL), and drops the schema afterwards: a TestMain for packages whose
// examples connect as a service does. It never uses a DATABASE_URL the environment
// already had.
func RunWithDatabaseURL(m *testing.M) int {
	url, drop, err := NewSchemaURL()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		fmt.Fprintln(os.Stderr, `Start PostgreSQL (see README, "Running the tests"), or point TEST_DATABASE_URL at a server you may create schemas on.`)
		return 1
	}
	defer drop()
	if err := os.Setenv("DATABASE_URL", url); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// EndSessions waits until none of the sessions pids is on the server any more,
// cancelling the statements of those that wait on a lock: how a test makes sure that
// a closed pool's statements (pgx cancels a timed-out statement on the server only in
// the background) can no longer apply once the lock they waited on is released.
func EndSessions(t testing.TB, pool *pgxpool.Pool, pids []uint32) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := pool.Exec(ctx, `
SELECT pg_cancel_backend(pid) FROM pg_stat_activity
 WHERE pid = ANY($1) AND wait_event_type = 'Lock'`, pids); err != nil {
			t.Fatal(err)
		}
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions of a closed pool still on the server after 30 s", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
