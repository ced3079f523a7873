package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/fakestripe"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// backfillWorld is a migrated schema, a billing config on it and a fake Stripe API.
type backfillWorld struct {
	db     *testdb.DB
	config string
	fake   *fakestripe.Server
	env    map[string]string
}

func setupBackfillWorld(t *testing.T) *backfillWorld {
	t.Helper()
	db := testdb.New(t)
	path := filepath.Join(t.TempDir(), "hookinbox.yaml")
	yaml := fmt.Sprintf(`database_url: %s
endpoints:
  - name: billing
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [STRIPE_WEBHOOK_SECRET]
    mode: sync
    handler: billing
`, schemaURL(t, db, ""))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &backfillWorld{db: db, config: path, fake: fakestripe.New(t),
		env: map[string]string{"STRIPE_SECRET_KEY": "sk_test_cli_secret_never_printed"}}
	if r := runInProcess(t, w.env, "migrate", "--config", path); r.code != 0 {
		t.Fatalf("migrate: exit %d: %s", r.code, r.stderr)
	}
	return w
}

func (w *backfillWorld) addPaid(n int) {
	id := fmt.Sprintf("%03d", n)
	w.fake.AddEvent(fakestripe.Event{ID: "evt_" + id, Type: "invoice.paid", Created: int64(1_700_000_000 + n),
		Object: map[string]any{"id": "in_" + id, "object": "invoice", "customer": "cus_1", "status": "paid", "amount_paid": 100 * n, "currency": "eur"}})
}

func (w *backfillWorld) run(t *testing.T, args ...string) result {
	t.Helper()
	r := runInProcess(t, w.env, append(args, "--config", w.config, "--api-url", w.fake.URL)...)
	if strings.Contains(r.stdout+r.stderr, w.env["STRIPE_SECRET_KEY"]) {
		t.Fatal("the API key was printed")
	}
	return r
}

func TestBackfillCommand_ProcessesTheMissedAndShowsTheOrigin(t *testing.T) {
	t.Parallel()
	w := setupBackfillWorld(t)
	for i := 1; i <= 3; i++ {
		w.addPaid(i)
	}
	r := w.run(t, "backfill", "--endpoint", "billing", "--types", "invoice.*", "--page-size", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "done: 3 events of stripe:billing:types=invoice.* in 2 pages: 3 processed, 0 accepted, 0 ignored, 0 duplicate") {
		t.Fatalf("first backfill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Two more events; the finished run's checkpoint starts over, and the first three
	// are duplicates.
	w.addPaid(4)
	w.addPaid(5)
	r = w.run(t, "backfill", "--endpoint", "billing", "--types", "invoice.*", "--json")
	if r.code != 0 {
		t.Fatalf("second backfill: exit %d: %s", r.code, r.stderr)
	}
	var last progressJSON
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
	}
	if !last.Done || last.Fed != 5 || last.Counts["processed"] != 2 || last.Counts["duplicate"] != 3 {
		t.Fatalf("last JSON line %+v, want done with 2 processed, 3 duplicates", last)
	}

	show := runInProcess(t, w.env, "events", "show", "stripe", "billing", "evt_004", "--config", w.config)
	if show.code != 0 || !strings.Contains(show.stdout, "origin") || !strings.Contains(show.stdout, "backfill") {
		t.Fatalf("events show: exit %d\n%s%s", show.code, show.stdout, show.stderr)
	}
	var rj receiptJSON
	show = runInProcess(t, w.env, "events", "show", "stripe", "billing", "evt_004", "--config", w.config, "--json")
	if err := json.Unmarshal([]byte(show.stdout), &rj); err != nil || rj.Origin != "backfill" {
		t.Fatalf("events show --json: origin %q (%v)", rj.Origin, err)
	}
}

func TestBackfillCommand_UsageErrors(t *testing.T) {
	t.Parallel()
	w := setupBackfillWorld(t)
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"backfill"}, w.env, "--endpoint is required"},
		{[]string{"backfill", "--endpoint", "nope"}, w.env, `no endpoint "nope"`},
		{[]string{"backfill", "--endpoint", "billing"}, map[string]string{}, "no API key: set STRIPE_SECRET_KEY"},
		{[]string{"backfill", "--endpoint", "billing", "--since", "yesterday"}, w.env, "--since"},
		{[]string{"backfill", "--endpoint", "billing", "--repo", "a/b"}, w.env, "are for GitHub endpoints"},
		{[]string{"backfill", "--endpoint", "billing", "--types", "invoice.*,charge.*"}, w.env, "only as the one type listed"},
	} {
		r := runInProcess(t, tt.env, append(tt.args, "--config", w.config)...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

func TestReconcileCommand_PrintsDriftAndRepairs(t *testing.T) {
	t.Parallel()
	w := setupBackfillWorld(t)
	w.fake.SetInvoice(fakestripe.Invoice{ID: "in_missing", Customer: "cus_1", Status: "paid", AmountPaid: 700, Currency: "eur", Created: 1_700_000_001})
	w.fake.SetInvoice(fakestripe.Invoice{ID: "in_amount", Customer: "cus_1", Status: "paid", AmountPaid: 900, Currency: "eur", Created: 1_700_000_002})
	w.fake.SetInvoice(fakestripe.Invoice{ID: "in_same", Customer: "cus_1", Status: "open", Currency: "eur", Created: 1_700_000_003})
	ctx := context.Background()
	if _, err := w.db.Pool.Exec(ctx, `INSERT INTO invoices (id, customer_id, status, amount_paid, currency) VALUES
	    ('in_amount', 'cus_1', 'paid', 800, 'eur'), ('in_same', 'cus_1', 'open', 0, 'eur')`); err != nil {
		t.Fatal(err)
	}

	r := w.run(t, "reconcile", "--endpoint", "billing", "--since", "2023-11-01")
	if r.code != 1 || !strings.Contains(r.stdout, "in_missing  missing_locally  -") || !strings.Contains(r.stdout, "in_amount   amount_differs   paid 800  paid 900") ||
		!strings.Contains(r.stdout, "3 invoices compared, 2 differ, 2 still differ") {
		t.Fatalf("reconcile: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for range 2 {
		r = w.run(t, "reconcile", "--endpoint", "billing", "--since", "2023-11-01", "--repair", "--json")
		var doc driftJSON
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("reconcile --json: %v\n%s%s", err, r.stdout, r.stderr)
		}
		got := map[string]driftItem{}
		for _, d := range doc.Drift {
			got[d.InvoiceID] = d
		}
		if r.code != 1 || got["in_amount"].Anomaly != "reconcile_amount_differs" {
			t.Fatalf("reconcile --repair: exit %d, %+v", r.code, doc)
		}
		if m, ok := got["in_missing"]; ok && (!m.Resolved || m.Outcome != "processed") {
			t.Fatalf("in_missing: %+v, want processed and resolved", m)
		}
	}
	var n int
	if err := w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE id = 'in_missing' AND status = 'paid' AND amount_paid = 700`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("in_missing not repaired: %d, %v", n, err)
	}
}

// The binary killed with SIGKILL while it waits for its second page: the next run
// resumes after the first page's events, and every missed event is applied once.
func TestBackfillBinary_KilledRunResumes(t *testing.T) {
	t.Parallel()
	w := setupBackfillWorld(t)
	for i := 1; i <= 6; i++ {
		w.addPaid(i)
	}
	// A proxy in front of the fake that holds the second list request until released.
	reached, release := make(chan struct{}), make(chan struct{})
	var lists atomic.Int32
	target, err := url.Parse(w.fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	fwd := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/events" && lists.Add(1) == 2 {
			close(reached)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		fwd.ServeHTTP(rw, r)
	}))
	t.Cleanup(proxy.Close)
	defer close(release)

	env := childEnv("STRIPE_SECRET_KEY=" + w.env["STRIPE_SECRET_KEY"])
	args := []string{"backfill", "--config", w.config, "--endpoint", "billing", "--api-url", proxy.URL, "--page-size", "2"}
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the backfill never asked for its second page")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	ctx := context.Background()
	var cursor string
	var events int
	if err := w.db.Pool.QueryRow(ctx, `SELECT cursor, events FROM hookinbox_backfill_checkpoint`).Scan(&cursor, &events); err != nil {
		t.Fatal(err)
	}
	if cursor != "evt_005" || events != 2 {
		t.Fatalf("checkpoint after the kill: %s, %d events; want after evt_005, 2", cursor, events)
	}
	r := runBinary(t, env, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "done (resumed): 6 events") || !strings.Contains(r.stdout, "4 processed") {
		t.Fatalf("resumed run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var ledger int
	if err := w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries`).Scan(&ledger); err != nil || ledger != 6 {
		t.Fatalf("%d payments booked (%v), want 6", ledger, err)
	}
}
