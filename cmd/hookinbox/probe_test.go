package main

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/testdb"
)

// The probe is tested against the reference receivers of examples/receivers, each on
// a schema of its own: every broken one must be caught by the scenario that breaks
// it, and correct and hookinbox serve must pass every scenario. docs/PROBE.md has the
// same table.

const probeSecret = "whsec_probe_test_secret"

// applicationsSQL is the check of the reference receivers: one row per application.
const applicationsSQL = `SELECT invoice_id AS fact_id, count(*) AS applied FROM applications GROUP BY invoice_id`

// probeJSON is the part of probe --json the tests read.
type probeJSON struct {
	Lost, Doubled, Undelivered int
	Passed                     bool
	Scenarios                  []struct {
		Name, Verdict              string
		Lost, Doubled, Undelivered int
		Failures                   []struct {
			FactID string `json:"fact_id"`
		}
	}
}

func (p probeJSON) scenario(t *testing.T, name string) (lost, doubled, undelivered int) {
	t.Helper()
	for _, s := range p.Scenarios {
		if s.Name == name {
			return s.Lost, s.Doubled, s.Undelivered
		}
	}
	t.Fatalf("no scenario %s in the report", name)
	return
}

var (
	receiversOnce sync.Once
	receiversDir  string
	receiversErr  error
)

// receiverBinary builds the reference receivers once, beside the hookinbox binary,
// and returns the path of the named one.
func receiverBinary(t *testing.T, name string) string {
	t.Helper()
	receiversOnce.Do(func() {
		receiversDir = filepath.Join(filepath.Dir(binary), "receivers")
		out, err := exec.Command("go", "build", "-o", receiversDir+string(filepath.Separator),
			"github.com/hookinbox/hookinbox/examples/receivers/...").CombinedOutput()
		if err != nil {
			receiversErr = fmt.Errorf("go build examples/receivers: %v\n%s", err, out)
		}
	})
	if receiversErr != nil {
		t.Fatal(receiversErr)
	}
	return filepath.Join(receiversDir, name)
}

// startReceiver runs the named reference receiver on a schema of its own and returns
// its webhook URL and a database URL on its schema.
func startReceiver(t *testing.T, name string, args ...string) (target, dbURL string) {
	t.Helper()
	db := testdb.New(t)
	dbURL = schemaURL(t, db, "")
	cmd := exec.Command(receiverBinary(t, name), append([]string{
		"-listen", "127.0.0.1:0", "-database-url", dbURL, "-schema", db.Schema, "-work", "50ms"}, args...)...)
	cmd.Env = childEnv("STRIPE_WEBHOOK_SECRET=" + probeSecret)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	listening := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				listening <- rec.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("%s's logs:\n%s", name, logs.String())
			mu.Unlock()
		}
	})
	select {
	case addr := <-listening:
		return "http://" + addr + "/webhooks/stripe", dbURL
	case <-done:
		t.Fatalf("%s exited before listening:\n%s", name, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30 s", name)
	}
	return "", ""
}

// runProbe runs probe --json in this process against target with the check, quickly:
// few facts, a schedule compressed 100000 times.
func runProbe(t *testing.T, target string, check []string, extra ...string) (result, probeJSON) {
	t.Helper()
	args := append([]string{"probe", "--target", target, "--provider", "stripe", "--secret-env", "PROBE_SECRET",
		"--facts", "6", "--time-scale", "100000", "--concurrency", "3", "--json"}, check...)
	r := runInProcess(t, map[string]string{"PROBE_SECRET": probeSecret}, append(args, extra...)...)
	var p probeJSON
	if r.code != 2 {
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			t.Fatalf("probe --json printed %q (stderr %q): %v", r.stdout, r.stderr, err)
		}
	}
	return r, p
}

func TestProbe_ReferenceReceivers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		receiver string
		// caught are the scenarios that must catch the receiver, with what they must
		// count: "lost" or "doubled". Any of a group separated by | will do.
		caught map[string]string
	}{
		{"correct", nil},
		{"mark-first", map[string]string{"reorder": "lost", "retries|timeout": "lost"}},
		{"mark-after", map[string]string{"duplicates": "doubled", "burst": "doubled"}},
		{"no-unique-key", map[string]string{"duplicates": "doubled", "burst": "doubled"}},
		{"ack-before-commit", map[string]string{"reorder": "lost"}},
		{"event-id-only", map[string]string{"second-object": "doubled"}},
	}
	for _, tt := range tests {
		t.Run(tt.receiver, func(t *testing.T) {
			t.Parallel()
			target, dbURL := startReceiver(t, tt.receiver)
			r, p := runProbe(t, target, []string{"--check-database-url", dbURL, "--check-sql", applicationsSQL})
			if tt.caught == nil {
				if r.code != 0 || !p.Passed || p.Lost+p.Doubled+p.Undelivered != 0 {
					t.Fatalf("exit %d, %d lost, %d doubled, %d undelivered; want a pass\nstdout: %s\nstderr: %s",
						r.code, p.Lost, p.Doubled, p.Undelivered, r.stdout, r.stderr)
				}
				return
			}
			if r.code != 1 || p.Passed {
				t.Errorf("exit %d, passed %v; want exit 1, failed\nstderr: %s", r.code, p.Passed, r.stderr)
			}
			for scenarios, what := range tt.caught {
				n := 0
				for _, s := range strings.Split(scenarios, "|") {
					lost, doubled, _ := p.scenario(t, s)
					n += map[string]int{"lost": lost, "doubled": doubled}[what]
				}
				if n == 0 {
					t.Errorf("%s counted nothing %s; %s must catch %s\n%s", scenarios, what, scenarios, tt.receiver, r.stdout)
				}
			}
		})
	}
}

// TestProbe_HookinboxServePasses probes hookinbox serve's sync billing endpoint,
// judged by billing's own tables: a payment is a ledger entry, a voiding a void
// invoice. The probe reads no hookinbox_* table.
func TestProbe_HookinboxServePasses(t *testing.T) {
	t.Parallel()
	b := setupE2E(t, "")
	p := b.serve(t)
	check := `SELECT invoice_id AS fact_id, count(*) AS applied FROM ledger_entries GROUP BY invoice_id
		UNION ALL SELECT id, 1 FROM invoices WHERE status = 'void'`
	r := runInProcess(t, map[string]string{"PROBE_SECRET": e2eSecret}, "probe", "--target", p.url("/webhooks/stripe"),
		"--provider", "stripe", "--secret-env", "PROBE_SECRET", "--facts", "6", "--time-scale", "100000",
		"--concurrency", "3", "--check-database-url", b.dbURL, "--check-sql", check)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"baseline", "duplicates", "retries", "timeout", "reorder", "second-object", "burst"} {
		if !strings.Contains(r.stdout, "\n"+s+" ") {
			t.Errorf("the table has no row %s:\n%s", s, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "nothing lost, nothing doubled") {
		t.Errorf("no verdict line:\n%s", r.stdout)
	}
}

// TestProbe_CheckURLAndJUnit judges a receiver by a URL of its own and writes JUnit
// XML with a failure for the scenario that caught it.
func TestProbe_CheckURLAndJUnit(t *testing.T) {
	t.Parallel()
	target, _ := startReceiver(t, "event-id-only")
	junit := filepath.Join(t.TempDir(), "probe.xml")
	applied := strings.Replace(target, "/webhooks/stripe", "/applied", 1)
	r, p := runProbe(t, target, []string{"--check-url", applied}, "--scenario", "second-object", "--junit", junit)
	if r.code != 1 || p.Doubled == 0 {
		t.Fatalf("exit %d, %d doubled; want exit 1 and doubles\n%s\n%s", r.code, p.Doubled, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Type string `xml:"type,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("--junit wrote %s: %v", data, err)
	}
	if doc.Tests != 2 || doc.Failures != 1 || len(doc.Suites) != 1 {
		t.Fatalf("junit: %d tests, %d failures, %d suites; want baseline and second-object, one failure:\n%s", doc.Tests, doc.Failures, len(doc.Suites), data)
	}
	for _, c := range doc.Suites[0].Cases {
		if (c.Failure != nil) != (c.Name == "second-object") || c.Failure != nil && c.Failure.Type != "doubled" {
			t.Errorf("junit case %s: failure %+v", c.Name, c.Failure)
		}
	}
}

// TestProbe_BadInput: each refusal is one clear line on stderr and exit 2, before
// anything is reported as lost.
func TestProbe_BadInput(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dbURL := schemaURL(t, db, "")
	emptyCheck := []string{"--check-database-url", dbURL, "--check-sql", `SELECT ''::text AS fact_id, 0 AS applied WHERE false`}
	wrongSecretTarget, receiverDB := startReceiver(t, "correct")
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"facts": []}`))
	}))
	t.Cleanup(notJSON.Close)

	tests := []struct {
		name   string
		env    map[string]string
		target string
		args   []string
		want   string
	}{
		{"unreachable target", nil, "http://127.0.0.1:1/webhooks", emptyCheck, "cannot reach --target"},
		{"wrong secret", map[string]string{"PROBE_SECRET": "whsec_not_the_receivers"}, wrongSecretTarget,
			[]string{"--check-database-url", receiverDB, "--check-sql", applicationsSQL},
			"every delivery was answered 401 Unauthorized: the receiver refuses the signature"},
		{"check query fails", nil, wrongSecretTarget,
			[]string{"--check-database-url", dbURL, "--check-sql", "SELECT fact_id, applied FROM no_such_table"}, "--check-sql fails"},
		{"check query returns other columns", nil, wrongSecretTarget,
			[]string{"--check-database-url", dbURL, "--check-sql", "SELECT 'x' AS invoice, 1 AS n"},
			"--check-sql returns (invoice, n); it must return two columns, fact_id (text) and applied (integer)"},
		{"check query returns another type", nil, wrongSecretTarget,
			[]string{"--check-database-url", dbURL, "--check-sql", "SELECT 1 AS fact_id, 1 AS applied"}, "fact_id is not text"},
		{"check database unreachable", nil, wrongSecretTarget,
			[]string{"--check-database-url", "postgres://postgres@127.0.0.1:1/test", "--check-sql", applicationsSQL}, "--check-database-url: cannot connect"},
		{"check URL answers something else", nil, wrongSecretTarget, []string{"--check-url", notJSON.URL}, "--check-url did not answer a JSON array"},
		{"no check", nil, wrongSecretTarget, nil, "no check: give --check-database-url with --check-sql, or --check-url"},
		{"no secret", map[string]string{}, wrongSecretTarget, emptyCheck, "--secret-env: environment variable PROBE_SECRET is empty or unset"},
		{"unknown provider", nil, wrongSecretTarget, append([]string{"--provider", "bitbucket"}, emptyCheck...), "--provider bitbucket: unknown"},
		{"unknown scenario", nil, wrongSecretTarget, append([]string{"--scenario", "chaos"}, emptyCheck...), "--scenario chaos: unknown"},
		{"target not a URL", nil, "localhost:8080", emptyCheck, "not an http:// or https:// URL"},
	}
	for _, tt := range tests {
		// Not parallel: the check below runs after them.
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == nil {
				env = map[string]string{"PROBE_SECRET": probeSecret}
			}
			args := append([]string{"probe", "--target", tt.target, "--provider", "stripe", "--secret-env", "PROBE_SECRET", "--facts", "2"}, tt.args...)
			r := runInProcess(t, env, args...)
			if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, one line with %q", r.code, r.stdout, r.stderr, tt.want)
			}
		})
	}

	// The receiver refused every delivery: nothing was written.
	if n := countRows(t, receiverDB, "receipts"); n != 0 {
		t.Errorf("%d receipts after deliveries with a wrong secret, want 0", n)
	}
}

// countRows counts the rows of table in the database of dbURL.
func countRows(t *testing.T, dbURL, table string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
