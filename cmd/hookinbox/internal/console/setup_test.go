package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/console"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
	"github.com/hookinbox/hookinbox/provider"
)

// The canaries: values that must never appear in any page.
const (
	operatorToken = "canary-operator-token-5b1f0e"
	readerToken   = "canary-reader-token-9d33aa"
	signingSecret = "whsec_canarysigningsecret"
	cardCanary    = "4242-canary-card-0000"
)

// quiet discards the logs of the inbox and the console: the tests read the database.
var quiet = slog.New(slog.DiscardHandler)

// bundle is one test's world: a console on a fresh database, served over HTTP.
type bundle struct {
	ctx     context.Context
	driver  string
	exec    driver.Executor
	srv     *httptest.Server
	console *console.Console
	// count runs a SELECT count(*) (or any one-integer query) on the database.
	count func(t *testing.T, query string, args ...any) int
	// run runs a statement on the database.
	run func(t *testing.T, query string)
	// work runs real workers with a failing handler until every pending receipt of
	// endpoint billing needs review.
	work func(t *testing.T, fail func(ev hookinbox.Event) error)
}

type setupOpts struct {
	maxBulk int
	tls     bool
	wrap    func(driver.Executor) driver.Executor
	// redact replaces the default redacted fields (card_number).
	redact []string
	// logger receives the console's logs (default: discarded).
	logger *slog.Logger
	// retried is the console's RetriedFunc.
	retried func()
	// endpoints are configured beside billing.
	endpoints []console.Endpoint
}

// drivers runs fn against PostgreSQL and SQLite.
func drivers(t *testing.T, fn func(t *testing.T, name string)) {
	for _, name := range []string{"postgres", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, name)
		})
	}
}

func setup(t *testing.T, name string, opts ...setupOpts) *bundle {
	t.Helper()
	var o setupOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	b := &bundle{ctx: context.Background(), driver: name}
	verifier, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{signingSecret}})
	if err != nil {
		t.Fatal(err)
	}
	inboxConfig := func() *hookinbox.Config {
		return &hookinbox.Config{
			Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: verifier, Mode: hookinbox.ModeAsync}},
			Logger:    quiet,
			Worker: hookinbox.WorkerConfig{
				Concurrency: 2, BatchSize: 4, MaxAttempts: 2, PollInterval: 20 * time.Millisecond,
				Lease: 30 * time.Second, RetryDelayFunc: func(int) time.Duration { return 0 },
			},
		}
	}
	switch name {
	case "postgres":
		db := testdb.New(t)
		d := pgxdriver.New(db.Pool)
		if err := d.Migrate(b.ctx); err != nil {
			t.Fatal(err)
		}
		b.exec = d.Executor()
		b.count = func(t *testing.T, q string, args ...any) int {
			t.Helper()
			var n int
			if err := db.Pool.QueryRow(b.ctx, q, args...).Scan(&n); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return n
		}
		b.run = func(t *testing.T, q string) {
			t.Helper()
			if _, err := db.Pool.Exec(b.ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		b.work = func(t *testing.T, fail func(hookinbox.Event) error) { runWorkers(t, b, d, inboxConfig(), fail) }
	case "sqlite":
		sdb, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "console.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sdb.Close() })
		d := sqlitedriver.New(sdb)
		if err := d.Migrate(b.ctx); err != nil {
			t.Fatal(err)
		}
		b.exec = d.Executor()
		b.count = func(t *testing.T, q string, args ...any) int {
			t.Helper()
			var n int
			if err := sdb.QueryRowContext(b.ctx, sqliteParams(q), args...).Scan(&n); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return n
		}
		b.run = func(t *testing.T, q string) {
			t.Helper()
			if _, err := sdb.ExecContext(b.ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		b.work = func(t *testing.T, fail func(hookinbox.Event) error) { runWorkers(t, b, d, inboxConfig(), fail) }
	}
	exec := b.exec
	if o.wrap != nil {
		exec = o.wrap(exec)
	}
	if o.redact == nil {
		o.redact = []string{"card_number"}
	}
	if o.logger == nil {
		o.logger = quiet
	}
	c, err := console.New(exec, console.Config{
		Tokens: []console.Token{
			{Name: "alice", Secret: operatorToken},
			{Name: "rita", Secret: readerToken, ReadOnly: true},
		},
		Endpoints:   append([]console.Endpoint{{Name: "billing", Provider: "stripe"}}, o.endpoints...),
		Redact:      o.redact,
		MaxBulk:     o.maxBulk,
		LoginRate:   1000,
		Logger:      o.logger,
		RetriedFunc: o.retried,
	})
	if err != nil {
		t.Fatal(err)
	}
	b.console = c
	mux := http.NewServeMux()
	mux.Handle("/console/", c)
	if o.tls {
		b.srv = httptest.NewTLSServer(mux)
	} else {
		b.srv = httptest.NewServer(mux)
	}
	t.Cleanup(b.srv.Close)
	return b
}

// sqliteParams turns PostgreSQL's $n into SQLite's ?n, so one test query serves both.
func sqliteParams(q string) string { return strings.ReplaceAll(q, "$", "?") }

// runWorkers runs an inbox's real workers on d until no receipt of endpoint billing is
// pending: each failing attempt ends in the attempt history, and the last one puts
// the receipt to review.
func runWorkers[TTx any](t *testing.T, b *bundle, d driver.Driver[TTx], cfg *hookinbox.Config, fail func(hookinbox.Event) error) {
	t.Helper()
	inbox, err := hookinbox.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	inbox.Handle("billing", "invoice.paid", func(ctx context.Context, tx TTx, ev hookinbox.Event) error { return fail(ev) })
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = inbox.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	testwait.For(t, 30*time.Second, "the workers to finish", func() (bool, error) {
		n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE state = 'pending'`)
		return n == 0, fmt.Errorf("%d receipts still pending", n)
	})
}

// receive stores a pending receipt of endpoint billing with payload.
func (b *bundle) receive(t *testing.T, id, payload string) hookinboxtype.Key {
	t.Helper()
	k := hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: id}
	if _, err := b.exec.InboxInsert(b.ctx, &driver.InboxInsertParams{
		Key: k, EventType: "invoice.paid", Payload: []byte(payload), MaxAttempts: 2,
	}); err != nil {
		t.Fatal(err)
	}
	return k
}

// payload is an invoice event carrying a script tag and a redacted card number.
func payload(id string) string {
	return fmt.Sprintf(`{"id":%q,"type":"invoice.paid","data":{"object":{"id":"in_%s","description":"<script>alert('x')</script>","card_number":%q}}}`,
		id, id, cardCanary)
}

// client is a browser-like HTTP client with its own cookie jar, not following redirects.
type client struct {
	t    *testing.T
	b    *bundle
	http *http.Client
}

func (b *bundle) client(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{
		Transport: b.srv.Client().Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &client{t: t, b: b, http: hc}
}

// login logs in with token and returns the login's answer.
func (c *client) login(token string) *http.Response {
	c.t.Helper()
	return c.post("/console/login", url.Values{"token": {token}})
}

func (c *client) url(path string) string { return c.b.srv.URL + path }

func (c *client) get(path string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.url(path), nil)
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// post sends a same-origin form, as a browser does (Sec-Fetch-Site: same-origin).
func (c *client) post(path string, form url.Values) *http.Response {
	c.t.Helper()
	return c.postWith(path, form, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": c.b.srv.URL})
}

func (c *client) postWith(path string, form url.Values, headers map[string]string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url(path), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// newDefaultConsole serves a console on b's database with the default settings.
func newDefaultConsole(t *testing.T, b *bundle) *httptest.Server {
	t.Helper()
	c, err := console.New(b.exec, console.Config{Tokens: []console.Token{{Name: "alice", Secret: operatorToken}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", c)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}
