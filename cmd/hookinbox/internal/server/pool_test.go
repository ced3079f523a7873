package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/internal/testdb"
)

// serve's pool readies each new connection's server process (pgxdriver.ConfigurePool):
// without it, PostgreSQL spent half its CPU per sync request at 8 senders in malloc
// trimming (docs/BENCHMARKS.md, "PostgreSQL's malloc"). What that does is measured,
// not asserted; that serve's pool does it is checked here.

// checkReadied opens a pool from pcfg and reports whether its new connection readied
// its server process before the first query.
func checkReadied(t *testing.T, pcfg *pgxpool.Config) error {
	t.Helper()
	sent := &testdb.Statements{}
	pcfg.ConnConfig.Tracer = sent
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	got := sent.SQL()
	if i := slices.IndexFunc(got, func(q string) bool { return strings.Contains(q, "repeat('x', 1048576)") }); i < 0 || i > slices.Index(got, "SELECT 1") {
		return fmt.Errorf("a new connection sent %q: no readying statement before the first query", got)
	}
	return nil
}

func TestPoolConfig_ReadiesEachNewConnection(t *testing.T) {
	t.Parallel()
	db := testdb.New(t, testdb.Options{MaxConns: 1})
	target := schemaDatabase(t, db)
	pcfg, err := poolConfig(target, parseConfig(t, `
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
	plain, err := pgxpool.ParseConfig(target.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkReadied(t, plain); err == nil {
		t.Fatal("a pool config without ConfigurePool passed the check")
	}
}
