package server

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// serve's pool readies each new connection's server process (pgxdriver.ConfigurePool):
// without it, PostgreSQL spent half its CPU per sync request at 8 senders in malloc
// trimming (docs/BENCHMARKS.md, "PostgreSQL's malloc"). What that does is measured,
// not asserted; that serve's pool does it is checked here.

type sentStatements struct {
	mu  sync.Mutex
	sql []string
}

func (s *sentStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, data.SQL)
	return ctx
}

func (s *sentStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// checkReadied opens a pool from pcfg and reports whether its new connection readied
// its server process before the first query.
func checkReadied(t *testing.T, pcfg *pgxpool.Config) error {
	t.Helper()
	sent := &sentStatements{}
	pcfg.ConnConfig.Tracer = sent
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	sent.mu.Lock()
	defer sent.mu.Unlock()
	if i := slices.IndexFunc(sent.sql, func(q string) bool { return strings.Contains(q, "repeat('x', 1048576)") }); i < 0 || i > slices.Index(sent.sql, "SELECT 1") {
		return fmt.Errorf("a new connection sent %q: no readying statement before the first query", sent.sql)
	}
	return nil
}

func TestPoolConfig_ReadiesEachNewConnection(t *testing.T) {
	t.Parallel()
	db := testdb.New(t, testdb.Options{MaxConns: 1})
	pcfg, err := poolConfig(config.Database{Driver: config.DriverPostgres, URL: schemaURL(t, db)}, parseConfig(t, `
endpoints:
  - {name: billing, path: /b, provider: stripe, handler: billing, secrets_env: [S]}
`), OpenOptions{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkReadied(t, pcfg); err != nil {
		t.Fatal(err)
	}
	// The broken variant: the pool config as it was before ConfigurePool.
	plain, err := pgxpool.ParseConfig(schemaURL(t, db))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkReadied(t, plain); err == nil {
		t.Fatal("a pool config without ConfigurePool passed the check")
	}
}

// schemaURL is the test server's URL with db's schema as search_path.
func schemaURL(t *testing.T, db *testdb.DB) string {
	t.Helper()
	u, err := url.Parse(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", db.Schema)
	u.RawQuery = q.Encode()
	return u.String()
}
