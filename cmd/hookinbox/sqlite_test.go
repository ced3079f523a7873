package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// The embedded store: without any database URL the binary keeps everything in a
// SQLite file, so a first serve works on a machine with nothing installed.

// sqliteConfig is a config without database_url; extra is appended (e.g. sqlite_path).
const sqliteConfig = `
listen: 127.0.0.1:0
endpoints:
  - name: billing
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [E2E_STRIPE_SECRET]
    mode: sync
    handler: billing
shutdown_timeout: 10s
`

// writeConfig writes a config file into dir and returns its path.
func writeConfig(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, "hookinbox.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sqliteEnv is a child environment with the test secret and no HOOKINBOX_ variable
// (childEnv drops them), so no database URL comes from the environment.
func sqliteEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	env := childEnv(append([]string{"E2E_STRIPE_SECRET=" + e2eSecret}, extra...)...)
	for _, kv := range env {
		if strings.HasPrefix(kv, "HOOKINBOX_DATABASE_URL=") && !strings.HasPrefix(kv, "HOOKINBOX_DATABASE_URL=sqlite:") {
			t.Fatalf("the child environment sets %s", kv)
		}
	}
	return env
}

// openSQLite opens the file the way the test reads it: database/sql on modernc.
func openSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sqlitedriver.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func countSQLite(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func statusIn(t *testing.T, dir string, env []string, args ...string) statusJSON {
	t.Helper()
	var s statusJSON
	out := mustRunIn(t, dir, env, append([]string{"status", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status --json printed %q: %v", out, err)
	}
	return s
}

func sendTo(t *testing.T, env []string, p *serveProc, args ...string) string {
	t.Helper()
	out := mustRun(t, env, append([]string{"send", "--url", p.url("/webhooks/stripe"), "--secret-env", "E2E_STRIPE_SECRET"}, args...)...)
	return strings.TrimSpace(out)
}

var reMigrated = regexp.MustCompile(`"msg":"hookinbox: migrated \./hookinbox\.db to schema version (\d+)"`)

// The newcomer's first run, the README's: examples/hookinbox.yaml with no database URL
// anywhere, and serve creates, migrates and uses ./hookinbox.db; the operator commands
// read the same file.
func TestServe_WithoutDatabaseURLUsesSQLiteInTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	work, elsewhere := t.TempDir(), t.TempDir()
	// The example's secret variable; a free port instead of its 8080.
	env := sqliteEnv(t, "STRIPE_WEBHOOK_SECRET="+e2eSecret, "HOOKINBOX_LISTEN=127.0.0.1:0")
	config, err := filepath.Abs("../../examples/hookinbox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(config); err != nil || regexp.MustCompile(`(?m)^(database_url|sqlite_path):`).Match(data) {
		t.Fatalf("examples/hookinbox.yaml names a database, or cannot be read (%v)", err)
	}

	p := startServeIn(t, work, env, "--config", config)
	if m := reMigrated.FindStringSubmatch(p.Logs()); m == nil || m[1] == "0" {
		t.Fatalf("serve did not log that it migrated ./hookinbox.db:\n%s", p.Logs())
	}
	if _, err := os.Stat(filepath.Join(work, "hookinbox.db")); err != nil {
		t.Fatalf("no hookinbox.db in the working directory: %v", err)
	}
	testwait.Until(t, 30*time.Second, "/readyz to answer 200", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })

	if got := sendTo(t, env, p, "--id", "evt_sqlite_1", "--invoice", "in_sqlite_1"); !strings.HasSuffix(got, `200 {"outcome":"processed"}`) {
		t.Errorf("first send: %q", got)
	}
	if got := sendTo(t, env, p, "--id", "evt_sqlite_1", "--invoice", "in_sqlite_1"); !strings.HasSuffix(got, `200 {"outcome":"duplicate"}`) {
		t.Errorf("second send: %q", got)
	}

	// With serve's config, and with none at all: both mean ./hookinbox.db here.
	for _, args := range [][]string{{"--config", config}, nil} {
		s := statusIn(t, work, env, args...)
		if s.ReceivedLastHour["invoice.paid"] != 1 || s.Unprocessed != 0 || s.NeedsReview != 0 {
			t.Errorf("status %v = %+v", args, s)
		}
	}
	var list []receiptJSON
	if err := json.Unmarshal([]byte(mustRunIn(t, work, env, "events", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].EventID != "evt_sqlite_1" || list[0].State != "processed" {
		t.Errorf("events list = %+v", list)
	}
	db := openSQLite(t, filepath.Join(work, "hookinbox.db"))
	if n := countSQLite(t, db, `SELECT count(*) FROM ledger_entries WHERE invoice_id = 'in_sqlite_1'`); n != 1 {
		t.Errorf("ledger rows = %d, want 1", n)
	}

	// In another directory there is no such file: the command says so and creates
	// nothing, rather than report an empty inbox from a new empty database.
	r := runBinaryIn(t, elsewhere, env, "status")
	if r.code != 1 || !strings.Contains(r.stderr, "no SQLite database at ./hookinbox.db (the default without a database URL)") {
		t.Errorf("status elsewhere: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "hookinbox.db")); err == nil {
		t.Errorf("status created a database in %s", elsewhere)
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0", code)
	}
}

// --database-url sqlite:PATH and HOOKINBOX_DATABASE_URL=sqlite:PATH name the file for
// every command; sqlite_path in a config is relative to the config file.
func TestDatabaseURL_SQLiteForMigrateServeAndStatus(t *testing.T) {
	t.Parallel()
	dataDir, work := t.TempDir(), t.TempDir()
	path := filepath.Join(dataDir, "events.db")
	dbURL := "sqlite:" + path
	env := sqliteEnv(t)

	// The config's billing endpoint brings billing's migration line along.
	config := writeConfig(t, t.TempDir(), sqliteConfig)
	in := regexp.QuoteMeta(" in sqlite:" + path)
	if out := mustRunIn(t, work, env, "migrate", "--database-url", dbURL, "--config", config); !regexp.MustCompile(`^schema migrated from version 0 to \d+` + in + "\nbilling schema migrated from version 0 to 1" + in + "\n$").MatchString(out) {
		t.Errorf("migrate printed %q", out)
	}
	if out := mustRunIn(t, work, env, "migrate", "--database-url", dbURL, "--config", config); !strings.HasPrefix(out, "schema already current") || !strings.Contains(out, "billing schema already current") {
		t.Errorf("migrate again printed %q", out)
	}

	p := startServeIn(t, work, env, "--config", config, "--database-url", dbURL)
	if logs := p.Logs(); strings.Contains(logs, "hookinbox: migrated") || !strings.Contains(logs, `"from":"--database-url"`) {
		t.Errorf("serve on a migrated file: a migration line, or no database line:\n%s", logs)
	}
	if got := sendTo(t, env, p, "--id", "evt_url_1", "--invoice", "in_url_1"); !strings.HasSuffix(got, `200 {"outcome":"processed"}`) {
		t.Errorf("send: %q", got)
	}
	if _, err := os.Stat(filepath.Join(work, "hookinbox.db")); err == nil {
		t.Errorf("the default ./hookinbox.db was created despite --database-url")
	}

	// The flag, the environment variable, and a config whose relative sqlite_path is
	// found from another working directory: all the same file.
	rel := writeConfig(t, dataDir, sqliteConfig+"sqlite_path: events.db\n")
	for name, run := range map[string]func() statusJSON{
		"--database-url":         func() statusJSON { return statusIn(t, work, env, "--database-url", dbURL) },
		"HOOKINBOX_DATABASE_URL": func() statusJSON { return statusIn(t, work, sqliteEnv(t, "HOOKINBOX_DATABASE_URL="+dbURL)) },
		"sqlite_path":            func() statusJSON { return statusIn(t, work, env, "--config", rel) },
	} {
		if s := run(); s.ReceivedLastHour["invoice.paid"] != 1 {
			t.Errorf("status with %s = %+v", name, s)
		}
	}
	out := mustRunIn(t, work, env, "events", "show", "stripe", "billing", "evt_url_1", "--database-url", dbURL)
	if !strings.Contains(out, "processed") {
		t.Errorf("events show printed %q", out)
	}
}

// SIGKILL during a burst against SQLite: every event answered 2xx has its receipt and
// its ledger row after the restart, and the provider's redelivery of the whole burst
// books nothing twice.
func TestServe_SQLiteSigkillDuringBurstLosesAndDoublesNothing(t *testing.T) {
	t.Parallel()
	const total, concurrency = 300, 16
	dir := t.TempDir()
	env := sqliteEnv(t)
	config := writeConfig(t, dir, sqliteConfig+"sqlite_path: burst.db\n")
	p := startServe(t, env, "--config", config)
	testwait.Until(t, 30*time.Second, "/readyz to answer 200", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })

	var once sync.Once
	acked := burst(t, p.url("/webhooks/stripe"), "kill", total, concurrency, func(n int) {
		if n == total/3 {
			once.Do(func() { _ = p.cmd.Process.Kill() }) // SIGKILL
		}
	})
	p.wait(30 * time.Second)
	if len(acked) < total/3 || len(acked) == total {
		t.Fatalf("%d of %d acknowledged: the kill did not land mid-burst", len(acked), total)
	}

	// Restart on the same file: nothing to migrate, every acknowledged event is there.
	p = startServe(t, env, "--config", config)
	if strings.Contains(p.Logs(), "hookinbox: migrated") {
		t.Errorf("the restart migrated again:\n%s", p.Logs())
	}
	testwait.Until(t, 30*time.Second, "/readyz to answer 200 after the restart", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })
	db := openSQLite(t, filepath.Join(dir, "burst.db"))
	for id, outcome := range acked {
		if outcome != "processed" {
			t.Errorf("%s was answered %q in the first burst, want processed", id, outcome)
		}
		invoice := strings.Replace(id, "evt_", "in_", 1)
		if n := countSQLite(t, db, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = ? AND processed_at IS NOT NULL`, id); n != 1 {
			t.Errorf("acknowledged %s has %d processed receipts, want 1", id, n)
		}
		if n := countSQLite(t, db, `SELECT count(*) FROM ledger_entries WHERE invoice_id = ?`, invoice); n != 1 {
			t.Errorf("acknowledged %s has %d ledger rows, want 1", id, n)
		}
	}

	// The provider redelivers the whole burst.
	again := burst(t, p.url("/webhooks/stripe"), "kill", total, concurrency, nil)
	if len(again) != total {
		t.Fatalf("the redelivery: %d of %d answered 2xx", len(again), total)
	}
	committedUnanswered := 0
	for id, outcome := range again {
		switch {
		case acked[id] != "" && outcome != "duplicate":
			t.Errorf("%s, acknowledged before the kill, was redelivered as %q, want duplicate", id, outcome)
		case acked[id] == "" && outcome == "duplicate":
			// Committed in the instant between its commit and its answer: at most one
			// per request in flight when the process died.
			committedUnanswered++
		case acked[id] == "" && outcome != "processed":
			t.Errorf("%s, not acknowledged before the kill, was redelivered as %q", id, outcome)
		}
	}
	if committedUnanswered > concurrency {
		t.Errorf("%d unacknowledged events were already committed; at most %d were in flight", committedUnanswered, concurrency)
	}
	if n := countSQLite(t, db, `SELECT count(*) FROM ledger_entries`); n != total {
		t.Errorf("ledger rows = %d, want exactly %d", n, total)
	}
	if n := countSQLite(t, db, `SELECT count(*) FROM hookinbox_inbox WHERE processed_at IS NOT NULL`); n != total {
		t.Errorf("processed receipts = %d, want %d", n, total)
	}
	t.Logf("%d of %d acknowledged before SIGKILL; %d committed but unanswered", len(acked), total, committedUnanswered)
}
