package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// Roles split one configuration across processes: a receivers-only serve accepts an
// async event, and a workers-only serve, which polls only once an hour, processes it
// at once, woken across processes by LISTEN/NOTIFY. Each says its roles in /readyz,
// and the workers-only process serves no endpoint.
func TestServe_RolesAcrossProcessesWokenByNotify(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	b := &e2eBundle{db: db, dbURL: schemaURL(t, db, ""), env: childEnv("E2E_STRIPE_SECRET=" + e2eSecret)}
	b.config = filepath.Join(t.TempDir(), "hookinbox.yaml")
	if err := os.WriteFile(b.config, fmt.Appendf(nil, `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - {name: queue, path: /webhooks/queue, provider: stripe, secrets_env: [E2E_STRIPE_SECRET], mode: async, handler: billing}
worker: {concurrency: 2, poll_interval: 1h}
shutdown_timeout: 10s
`, b.dbURL), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, b.env, "migrate", "--config", b.config)
	receivers := startServe(t, b.env, "--config", b.config, "--role", "receivers")
	workers := startServe(t, b.env, "--config", b.config, "--role", "workers,dispatcher")
	for _, p := range []*serveProc{receivers, workers} {
		testwait.Until(t, 30*time.Second, "/readyz to answer 200", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })
	}
	if _, body := get(receivers.url("/readyz")); !strings.Contains(body, `"roles":["receivers"]`) {
		t.Errorf("receivers' /readyz: %s", body)
	}
	if _, body := get(workers.url("/readyz")); !strings.Contains(body, `"roles":["workers","dispatcher"]`) {
		t.Errorf("workers' /readyz: %s", body)
	}
	if code, _ := get(workers.url("/webhooks/queue")); code != 404 {
		t.Errorf("a workers-only process answered %d on an endpoint's path, want 404", code)
	}
	// The workers listen once they run; an event sent before would be found by their
	// first claim anyway, so this test waits for the listener.
	testwait.Until(t, 30*time.Second, "the workers' listener", func() bool {
		return countIn(t, b, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND query LIKE '%`+db.Schema+`%'`) == 1
	})
	if got := b.send(t, receivers, "/webhooks/queue", "--id", "evt_roles_1", "--invoice", "in_roles_1"); !strings.HasSuffix(got[0], `200 {"outcome":"accepted"}`) {
		t.Fatalf("send: %q", got)
	}
	testwait.Until(t, 30*time.Second, "the workers' process to process the receipt", func() bool { return b.status(t).Unprocessed == 0 })
	if n := countIn(t, b, `SELECT count(*) FROM ledger_entries WHERE invoice_id = 'in_roles_1'`); n != 1 {
		t.Fatalf("ledger entries %d, want 1", n)
	}
}

func countIn(t *testing.T, b *e2eBundle, query string) int {
	t.Helper()
	var n int
	if err := b.db.Pool.QueryRow(t.Context(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
