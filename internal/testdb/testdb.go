// Package testdb gives each test its own PostgreSQL schema on a real server, so tests
// run in parallel without seeing each other's rows.
//
// The server is TEST_DATABASE_URL, by default postgres://postgres@127.0.0.1:5432/test.
// Nothing is mocked: an unreachable server fails the test and says what to do.
//
// # Through a pooler in transaction mode
//
// By default a test's connections find its schema through the search_path startup
// parameter. PgBouncer 1.18 in transaction mode does not carry a startup parameter it
// does not know to the server sessions it hands out (it refuses it, or with
// ignore_startup_parameters drops it), so with TEST_DATABASE_POOLED=1, for a
// TEST_DATABASE_URL that points at such a pooler, each test also gets a role of its
// own, named after its schema, whose role-level search_path is the schema: the
// pooler keeps one pool of server sessions per database and user, so a server
// session only ever serves one test, and its search_path is set by the server at
// login, with nothing for the pooler to track. The pools then use pgx's
// QueryExecModeExec (no named prepared statements, which PgBouncer 1.18 cannot
// follow), and the schemas and roles are created and dropped over
// TEST_DIRECT_DATABASE_URL (by default TEST_DATABASE_URL), the server itself, which
// is also where ListenConnConfig connects.
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

	"github.com/hookinbox/hookinbox/internal/testwait"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the server used when TEST_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL returns the test server's URL (a pooler's, when Pooled).
func URL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Pooled reports whether URL goes through a pooler in transaction mode
// (TEST_DATABASE_POOLED=1): see the package documentation.
func Pooled() bool { return os.Getenv("TEST_DATABASE_POOLED") == "1" }

// DirectURL returns the URL of the server itself, past any pooler:
// TEST_DIRECT_DATABASE_URL, by default URL.
func DirectURL() string {
	if u := os.Getenv("TEST_DIRECT_DATABASE_URL"); u != "" {
		return u
	}
	return URL()
}

var (
	adminOnce sync.Once
	admin     *pgxpool.Pool
	adminErr  error
)

func adminPool() (*pgxpool.Pool, error) {
	adminOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(DirectURL())
		if err != nil {
			adminErr = fmt.Errorf("TEST_DATABASE_URL or TEST_DIRECT_DATABASE_URL is not a valid URL: %w", err)
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
	// Role is the login of the test's connections when Pooled (the schema's name,
	// whose role-level search_path is the schema), empty otherwise.
	Role string
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
	schema, role, err := createSchema(ctx, a)
	if err != nil {
		t.Fatalf("error creating test schema: %v", err)
	}
	db := &DB{Schema: schema, Role: role}
	cfg := db.Config(t)
	cfg.MaxConns = o.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("error opening test pool: %v", err)
	}
	db.Pool = pool
	t.Cleanup(func() {
		pool.Close()
		if os.Getenv("HOOKINBOX_KEEP_TEST_SCHEMA") != "" {
			t.Logf("kept test schema %s", schema)
			return
		}
		if err := dropSchema(context.Background(), a, schema, role); err != nil {
			t.Logf("error dropping test schema %s: %v", schema, err)
		}
	})
	return db
}

// createSchema creates a fresh schema and, when Pooled, its role (see the package
// documentation).
func createSchema(ctx context.Context, a *pgxpool.Pool) (schema, role string, err error) {
	schema = "hi_" + randomHex(6)
	if !Pooled() {
		_, err = a.Exec(ctx, "CREATE SCHEMA "+schema)
		return schema, "", err
	}
	role = schema
	// Not a superuser: the test's sessions see and signal only each other, as an
	// application's would.
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"CREATE SCHEMA " + schema + " AUTHORIZATION " + role,
		"ALTER ROLE " + role + " SET search_path = " + schema,
	} {
		if _, err := a.Exec(ctx, q); err != nil {
			return "", "", err
		}
	}
	return schema, role, nil
}

func dropSchema(ctx context.Context, a *pgxpool.Pool, schema, role string) error {
	if _, err := a.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
		return err
	}
	if role == "" {
		return nil
	}
	// The pooler may still hold idle server sessions of the role; the server lets a
	// role with sessions be dropped, and nothing logs in as it again.
	_, err := a.Exec(ctx, "DROP ROLE "+role)
	return err
}

// Config returns a pool config for the test's schema, for tests that need a pool of
// their own (a second process, a pool with other limits).
func (db *DB) Config(t testing.TB) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		t.Fatal(err)
	}
	db.connect(cfg.ConnConfig)
	return cfg
}

// ListenConnConfig returns a connection config for the test's schema on the server
// itself, past any pooler: where a listener must connect (see
// pgxdriver.Config.ListenConnConfig).
func (db *DB) ListenConnConfig(t testing.TB) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(DirectURL())
	if err != nil {
		t.Fatal(err)
	}
	db.connect(cfg)
	return cfg
}

// connect makes cfg's connections use the test's schema.
func (db *DB) connect(cfg *pgx.ConnConfig) {
	cfg.RuntimeParams["application_name"] = db.Schema
	if db.Role == "" {
		cfg.RuntimeParams["search_path"] = db.Schema
		return
	}
	cfg.User = db.Role
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
}

// WaitForLockWaiters polls pg_stat_activity until n of the test's sessions wait on a
// lock. It is how a test knows a concurrent copy is blocked, without sleeping.
func (db *DB) WaitForLockWaiters(t testing.TB, n int) {
	t.Helper()
	a, _ := adminPool()
	testwait.For(t, 30*time.Second, fmt.Sprintf("%d sessions waiting on a lock", n), func() (bool, error) {
		var waiting int
		err := a.QueryRow(context.Background(), `
SELECT count(*) FROM pg_stat_activity
 WHERE application_name = $1 AND wait_event_type = 'Lock'`, db.Schema).Scan(&waiting)
		if err != nil {
			t.Fatalf("error reading pg_stat_activity: %v", err)
		}
		return waiting >= n, fmt.Errorf("%d waiting", waiting)
	})
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
	schema, role, err := createSchema(context.Background(), a)
	if err != nil {
		return "", nil, fmt.Errorf("error creating example schema: %w", err)
	}
	cfg, err := neturl.Parse(URL())
	if err != nil {
		return "", nil, err
	}
	q := cfg.Query()
	q.Set("application_name", schema)
	if role == "" {
		q.Set("search_path", schema)
	} else {
		cfg.User = neturl.User(role)
		q.Set("default_query_exec_mode", "exec")
	}
	cfg.RawQuery = q.Encode()
	drop = func() {
		if os.Getenv("HOOKINBOX_KEEP_TEST_SCHEMA") == "" {
			_ = dropSchema(context.Background(), a, schema, role)
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
//
// When Pooled it skips the test: a pooled connection's PID is the pooler's, not a
// server session's, and which session ran a closed client's statement is not known.
func EndSessions(t testing.TB, pool *pgxpool.Pool, pids []uint32) {
	t.Helper()
	if Pooled() {
		t.Skip("testdb.EndSessions: a pooled connection's PID names no server session")
	}
	ctx := context.Background()
	testwait.For(t, 30*time.Second, "the sessions of a closed pool to leave the server", func() (bool, error) {
		if _, err := pool.Exec(ctx, `
SELECT pg_cancel_backend(pid) FROM pg_stat_activity
 WHERE pid = ANY($1) AND wait_event_type = 'Lock'`, pids); err != nil {
			t.Fatal(err)
		}
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0, fmt.Errorf("%d still on the server", left)
	})
}

// RefuseOutboxMessagesOf makes the schema's database refuse, with "message refused",
// every outbox message inserted with aggregate id id: a failure that only the
// database sees, whenever the insert is sent.
func (db *DB) RefuseOutboxMessagesOf(t testing.TB, id string) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `
CREATE FUNCTION refuse_message() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'message refused'; END $$;
CREATE TRIGGER refuse_message BEFORE INSERT ON hookinbox_outbox
   FOR EACH ROW WHEN (NEW.aggregate_id = '`+id+`') EXECUTE FUNCTION refuse_message()`); err != nil {
		t.Fatal(err)
	}
}
