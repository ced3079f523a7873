package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// Hostile clients against the real server (Server.Run on a real listener, its
// timeouts and limits from the config's http block) on a real PostgreSQL. Every kind
// of request is answered with its status, or the connection is closed, and writes
// nothing: the tables are counted after each one. docs/RELIABILITY.md ("Hostile
// clients") lists the kinds.

const (
	hostileStripeSecret = "whsec_hostile_secret"
	hostileGitHubSecret = "gh_hostile_secret"
	// hostileGuard bounds every wait for an answer: a hang fails the test instead of
	// hanging it. It is far above every server timeout of hostileYAML.
	hostileGuard = 30 * time.Second
)

// hostileYAML is the test server's configuration. Its timeouts are short so that
// the slow clients are cut off quickly; what the tests assert is that they are cut
// off, never how fast.
const hostileYAML = `
listen: 127.0.0.1:0
http:
  read_header_timeout: 2s
  read_timeout: 4s
  write_timeout: 20s
  idle_timeout: 2s
  max_connections: %d
endpoints:
  - {name: billing, path: /webhooks/stripe, provider: stripe, secrets_env: [STRIPE_SECRET], handler: billing}
  - {name: github, path: /webhooks/github, provider: github, secrets_env: [GITHUB_SECRET], mode: async, handler: none}
  - {name: control, path: /control, provider: stripe, secrets_env: [STRIPE_SECRET], handler: none}
`

// hostileServer is a running server on its own schema.
type hostileServer struct {
	addr string
	db   *testdb.DB
	srv  *Server
	logs *syncBuffer
	// guard bounds every wait for an answer or a close; hostileGuard but in the
	// broken variants.
	guard time.Duration
	n     int // control requests sent, for their ids
	mu    sync.Mutex
	// restarting: the database is being stopped and started under the server, so
	// a control delivery may be answered 503 (it is sent again until 200).
	restarting bool
}

// syncBuffer is a log sink that tests may read while the server writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startHostileServer runs serve's server for hostileYAML on a fresh, migrated schema
// until the test ends. mutate, when not nil, changes the server before it runs: the
// broken variants.
func startHostileServer(t *testing.T, maxConns int, mutate func(*Server)) *hostileServer {
	t.Helper()
	return startServerWith(t, fmt.Sprintf(hostileYAML, maxConns), mutate)
}

// startServerWith is startHostileServer with the configuration yaml, which names the
// secrets as hostileYAML does.
func startServerWith(t *testing.T, yaml string, mutate func(*Server)) *hostileServer {
	t.Helper()
	db := testdb.New(t)
	env := map[string]string{"STRIPE_SECRET": hostileStripeSecret, "GITHUB_SECRET": hostileGitHubSecret}
	cfg, err := config.Parse("hostile.yaml", []byte(yaml), config.Options{
		ResolveSecrets: true,
		LookupEnv:      func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	metrics := NewMetrics()
	b, err := Open(context.Background(), schemaDatabase(t, db), cfg,
		OpenOptions{Logger: logger, Observer: metrics})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := New(cfg, b, metrics, logger)
	if mutate != nil {
		mutate(srv)
	}
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		// Nor the metrics, read as a scraper reads them.
		exposition := httptest.NewRecorder()
		metrics.Handler().ServeHTTP(exposition, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		b.Close()
		// Neither the secrets nor a payload reach the logs or the metrics, whatever was
		// sent.
		for what, text := range map[string]string{"log": logs.String(), "metrics": exposition.Body.String()} {
			if strings.Contains(text, hostileStripeSecret) || strings.Contains(text, hostileGitHubSecret) || strings.Contains(text, "in_hostile") {
				t.Errorf("the %s holds a secret or a payload", what)
			}
		}
	})

	h := &hostileServer{db: db, srv: srv, logs: logs, guard: hostileGuard}
	testwait.Until(t, hostileGuard, "the server to listen", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "hookinbox: listening" {
				h.addr = rec.Addr
			}
		}
		select {
		case err := <-done:
			t.Fatalf("Run = %v before listening", err)
		default:
		}
		return h.addr != ""
	})
	return h
}

// rows counts what the hostile requests could have written: every receipt outside
// the control endpoint, the outbox, the effects and billing's tables.
func (h *hostileServer) rows(t *testing.T) int {
	t.Helper()
	var n int
	err := h.db.Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM hookinbox_inbox WHERE endpoint <> 'control') +
		(SELECT count(*) FROM hookinbox_outbox) + (SELECT count(*) FROM hookinbox_effect) +
		(SELECT count(*) FROM invoices) + (SELECT count(*) FROM ledger_entries) +
		(SELECT count(*) FROM billing_anomalies)`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// control sends a well-formed, signed delivery to the control endpoint and fails the
// test unless it is answered 200: the server still serves others.
func (h *hostileServer) control(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	h.n++
	id := fmt.Sprintf("evt_control_%d", h.n)
	h.mu.Unlock()
	body := stripeBody(id, "invoice.paid")
	deadline := time.Now().Add(hostileGuard)
	for {
		got := h.exchange(t, request("POST", "/control", stripeSigned(body, time.Now()), body))
		if got == "200" {
			return
		}
		if !h.restarting || got != "503" || time.Now().After(deadline) {
			t.Fatalf("control delivery answered %s, want 200: the server stopped serving others", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dial opens a connection to the server.
func (h *hostileServer) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", h.addr, hostileGuard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// exchange writes raw on a new connection and returns the answer's status code, or
// "closed" when the server closed the connection without answering.
func (h *hostileServer) exchange(t *testing.T, raw []byte) string {
	t.Helper()
	c := h.dial(t)
	defer c.Close()
	if _, err := c.Write(raw); err != nil && !isClosed(err) {
		t.Fatalf("write: %v", err)
	}
	return h.answer(t, c)
}

// answer reads one response from c within h.guard: its status code, "closed" when
// the server closed the connection without answering, or "open" when the guard ran
// out first.
func (h *hostileServer) answer(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(h.guard))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		var ne net.Error
		switch {
		case isClosed(err):
			return "closed"
		case errors.As(err, &ne) && ne.Timeout():
			return "open"
		}
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return fmt.Sprint(resp.StatusCode)
}

// isClosed reports whether err means the peer closed (or reset) the connection, as
// opposed to our own guard running out.
func isClosed(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe")
}

// waitClosed polls c until the server has closed it, failing after hostileGuard.
func (h *hostileServer) waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(h.guard))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue // an answer the server wrote before closing
		}
		if isClosed(err) {
			return
		}
		t.Fatalf("%s: the server did not close the connection: %v", what, err)
	}
}

// dribble writes next(0), next(1), ... to c every 100 ms until the returned stop is
// called or a write fails: a slow client.
func dribble(c net.Conn, next func(i int) []byte) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := c.Write(next(i)); err != nil {
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// header is one header line, in order; a list of them may repeat a name.
type header struct{ name, value string }

// request formats an HTTP/1.1 request with Content-Length, Host and Connection:
// close unless hs sets them.
func request(method, target string, hs []header, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	has := map[string]bool{}
	for _, h := range hs {
		has[strings.ToLower(h.name)] = true
		fmt.Fprintf(&b, "%s: %s\r\n", h.name, h.value)
	}
	if !has["host"] {
		b.WriteString("Host: hookinbox.test\r\n")
	}
	if !has["content-length"] && !has["transfer-encoding"] && body != nil {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	if !has["connection"] {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// stripeBody is an invoice event that billing would book: written, unless refused.
func stripeBody(id, typ string) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "type": typ, "data": map[string]any{"object": map[string]any{
		"id": "in_hostile", "object": "invoice", "status": "paid", "amount_paid": 1000, "currency": "eur",
	}}})
	return b
}

// stripeSigned returns a JSON content type and a Stripe-Signature of body at at.
func stripeSigned(body []byte, at time.Time) []header {
	h, _ := hookinboxtest.Stripe(hostileStripeSecret).Sign(body, at)
	return []header{{"Content-Type", "application/json"}, {"Stripe-Signature", h.Get("Stripe-Signature")}}
}

// githubSigned returns GitHub's headers for body, with id and event verbatim.
func githubSigned(body []byte, id, event string) []header {
	mac := hmac.New(sha256.New, []byte(hostileGitHubSecret))
	mac.Write(body)
	return []header{
		{"Content-Type", "application/json"},
		{"X-Hub-Signature-256", "sha256=" + hex.EncodeToString(mac.Sum(nil))},
		{"X-GitHub-Delivery", id}, {"X-GitHub-Event", event},
	}
}

func gzipOf(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for i := 0; i < n>>20; i++ {
		_, _ = zw.Write(zero)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func nested(depth int) []byte {
	return []byte(`{"id":"evt_hostile_nested","type":"invoice.paid","data":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
}

// hostileKind is one kind of hostile request: what it sends, and the answers that
// are right for it.
type hostileKind struct {
	name string
	want string // a status code, "closed", or several separated by |
	send func(t *testing.T, h *hostileServer) string
}

// simple is a kind that sends one raw request.
func simple(name, want string, raw func(t *testing.T) []byte) hostileKind {
	return hostileKind{name: name, want: want, send: func(t *testing.T, h *hostileServer) string {
		return h.exchange(t, raw(t))
	}}
}

func hostileKinds() []hostileKind {
	now := time.Now
	valid := stripeBody("evt_hostile_valid", "invoice.paid")
	stripeWith := func(body []byte) func(*testing.T) []byte {
		return func(*testing.T) []byte { return request("POST", "/webhooks/stripe", stripeSigned(body, now()), body) }
	}
	githubWith := func(id, event string, body []byte) func(*testing.T) []byte {
		return func(*testing.T) []byte {
			return request("POST", "/webhooks/github", githubSigned(body, id, event), body)
		}
	}
	ghBody := []byte(`{"action":"opened","issue":{"number":1,"title":"in_hostile"}}`)
	withContentType := func(ct string) func(*testing.T) []byte {
		return func(*testing.T) []byte {
			hs := stripeSigned(valid, now())
			hs[0].value = ct
			return request("POST", "/webhooks/stripe", hs, valid)
		}
	}

	kinds := []hostileKind{
		// Slow and idle connections: cut off by the server's timeouts, while a
		// well-formed delivery from someone else is answered.
		{name: "slowloris headers (a header line every 100 ms, never finished)", want: "closed", send: func(t *testing.T, h *hostileServer) string {
			c := h.dial(t)
			fmt.Fprintf(c, "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\n")
			defer dribble(c, func(i int) []byte { return fmt.Appendf(nil, "X-Slow-%d: 1\r\n", i) })()
			h.control(t)
			return h.answer(t, c)
		}},
		{name: "slow body (Content-Length 4096, a byte every 100 ms)", want: "408|closed", send: func(t *testing.T, h *hostileServer) string {
			c := h.dial(t)
			hs := append(stripeSigned(valid, now()), header{"Content-Length", "4096"})
			raw := request("POST", "/webhooks/stripe", hs, nil)
			_, _ = c.Write(raw)
			defer dribble(c, func(int) []byte { return []byte(" ") })()
			h.control(t)
			return h.answer(t, c)
		}},
		{name: "body that stops half-way and stays open", want: "408|closed", send: func(t *testing.T, h *hostileServer) string {
			c := h.dial(t)
			raw := request("POST", "/webhooks/stripe", stripeSigned(valid, now()), valid)
			_, _ = c.Write(raw[:len(raw)-len(valid)/2])
			h.control(t)
			return h.answer(t, c)
		}},
		{name: "connection that never sends a byte", want: "closed", send: func(t *testing.T, h *hostileServer) string {
			c := h.dial(t)
			h.control(t)
			return h.answer(t, c)
		}},
		{name: "keep-alive connection left idle after a request", want: "400|closed", send: func(t *testing.T, h *hostileServer) string {
			c := h.dial(t)
			// A first request (refused, unsigned) that keeps the connection open.
			_, _ = c.Write(request("POST", "/webhooks/stripe", []header{{"Connection", "keep-alive"}, {"Content-Type", "application/json"}}, valid))
			br := bufio.NewReader(c)
			_ = c.SetReadDeadline(time.Now().Add(hostileGuard))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("first answer: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			h.control(t)
			h.waitClosed(t, c, "idle keep-alive")
			return fmt.Sprint(resp.StatusCode)
		}},

		// Sizes and framing.
		simple("one header of 100 KiB", "431", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"X-Big", strings.Repeat("a", 100<<10)}), valid)
		}),
		simple("2,000 small headers (96 KiB in all)", "431", func(*testing.T) []byte {
			hs := stripeSigned(valid, now())
			for i := range 2000 {
				hs = append(hs, header{fmt.Sprintf("X-H%04d", i), strings.Repeat("b", 40)})
			}
			return request("POST", "/webhooks/stripe", hs, valid)
		}),
		simple("request line of 100 KiB", "431", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe?"+strings.Repeat("q", 100<<10), stripeSigned(valid, now()), valid)
		}),
		simple("signature header over the verifier's 8 KiB", "400", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", []header{{"Stripe-Signature", "t=1," + strings.Repeat("v1=00,", 2000)}}, valid)
		}),
		simple("Content-Length shorter than the body", "401", func(*testing.T) []byte {
			raw := request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Content-Length", "20"}), nil)
			return append(raw, valid...)
		}),
		{name: "Content-Length longer than the body, then the client half-closes", want: "400", send: func(t *testing.T, h *hostileServer) string {
			c := h.dial(t)
			raw := request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Content-Length", fmt.Sprint(len(valid) + 100)}), nil)
			_, _ = c.Write(append(raw, valid...))
			_ = c.(*net.TCPConn).CloseWrite()
			return h.answer(t, c)
		}},
		simple("Content-Length over the limit (2 MiB declared, nothing sent)", "413", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Content-Length", fmt.Sprint(2 << 20)}), nil)
		}),
		simple("body over the limit (1 MiB + 1 byte)", "413", func(*testing.T) []byte {
			body := append(bytes.Repeat([]byte(" "), 1<<20), '{', '}')
			return request("POST", "/webhooks/stripe", stripeSigned(body, now()), body)
		}),
		simple("chunked body over the limit (2 MiB in 64 KiB chunks)", "413", func(*testing.T) []byte {
			var b bytes.Buffer
			chunk := bytes.Repeat([]byte(" "), 64<<10)
			for range 32 {
				fmt.Fprintf(&b, "%x\r\n%s\r\n", len(chunk), chunk)
			}
			b.WriteString("0\r\n\r\n")
			return append(request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Transfer-Encoding", "chunked"}), nil), b.Bytes()...)
		}),
		simple("chunked body with a malformed chunk size", "400", func(*testing.T) []byte {
			return append(request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Transfer-Encoding", "chunked"}), nil),
				"zz\r\nabc\r\n0\r\n\r\n"...)
		}),
		simple("two different Content-Length headers (smuggling)", "400", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()),
				header{"Content-Length", fmt.Sprint(len(valid))}, header{"Content-Length", "5"}), valid)
		}),
		simple("Transfer-Encoding gzip", "501", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Transfer-Encoding", "gzip, chunked"}), nil)
		}),
		simple("Content-Encoding gzip bomb (64 MiB of zeros), signed over the compressed bytes", "415", func(t *testing.T) []byte {
			bomb := gzipOf(t, 64<<20)
			return request("POST", "/webhooks/stripe", append(stripeSigned(bomb, now()), header{"Content-Encoding", "gzip"}), bomb)
		}),
		simple("Content-Encoding gzip of a valid event", "415", func(t *testing.T) []byte {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = zw.Write(valid)
			_ = zw.Close()
			return request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Content-Encoding", "gzip"}), b.Bytes())
		}),
		simple("Content-Encoding br", "415", func(*testing.T) []byte {
			body := stripeBody("evt_hostile_br", "invoice.paid")
			return request("POST", "/webhooks/stripe", append(stripeSigned(body, now()), header{"Content-Encoding", "br"}), body)
		}),

		// Content types.
		simple("Content-Type text/plain on a signed event", "415", withContentType("text/plain")),
		simple("Content-Type application/x-www-form-urlencoded (GitHub's form mode)", "415", func(*testing.T) []byte {
			body := []byte("payload=" + url.QueryEscape(string(ghBody)))
			hs := githubSigned(body, "delivery-form", "issues")
			hs[0].value = "application/x-www-form-urlencoded"
			return request("POST", "/webhooks/github", hs, body)
		}),
		simple("Content-Type multipart/form-data", "415", withContentType("multipart/form-data; boundary=x")),
		simple("Content-Type malformed", "415", withContentType("application/json; ;;==")),
		simple("two Content-Type headers", "415", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Content-Type", "text/plain"}), valid)
		}),

		// Signed, but not an event hookinbox can record.
		simple("invalid UTF-8 in a signed body", "400", stripeWith([]byte(`{"id":"evt_hostile_utf8","type":"invoice.paid","data":{"object":{"id":"in_hostile","note":"`+"\xff\xfe\xc3"+`"}}}`))),
		simple("invalid UTF-8 in the event id (JSON)", "400", stripeWith([]byte(`{"id":"evt_`+"\xff\xfe"+`","type":"invoice.paid"}`))),
		simple("JSON nested 100,000 deep in a signed body", "400", stripeWith(nested(100_000))),
		simple("JSON nested 20,000 deep in a signed GitHub body", "400", githubWith("delivery-nested", "issues", []byte(`{"action":"opened","x":`+strings.Repeat("[", 20_000)+strings.Repeat("]", 20_000)+`}`))),
		simple("signed body that is a JSON array", "400", stripeWith([]byte(`[{"id":"evt_hostile_array","type":"invoice.paid"}]`))),
		simple("signed empty body", "400", stripeWith([]byte{})),
		simple("signed body that is not JSON", "400", stripeWith([]byte(`id=evt_hostile_form&type=invoice.paid`))),
		simple("event id of 600 bytes (JSON)", "400", stripeWith(stripeBody("evt_"+strings.Repeat("x", 596), "invoice.paid"))),
		simple("event id of 600 bytes (GitHub header)", "400", githubWith(strings.Repeat("d", 600), "issues", ghBody)),
		simple("event id of 7 KiB (GitHub header, under the verifier's 8 KiB)", "400", githubWith(strings.Repeat("d", 7<<10), "issues", ghBody)),
		simple("empty event id (JSON)", "400", stripeWith(stripeBody("", "invoice.paid"))),
		simple("empty event id (GitHub header)", "400", githubWith("", "issues", ghBody)),
		simple("event id that is a number", "400", stripeWith([]byte(`{"id":12345,"type":"invoice.paid"}`))),
		simple("event id of control characters (JSON \\u0001\\n\\r)", "400", stripeWith(stripeBody("evt_\x01\x02\n\r\x1b[2J", "invoice.paid"))),
		simple("event id with NUL (JSON \\u0000)", "400", stripeWith(stripeBody("evt_\x00hostile", "invoice.paid"))),
		simple("event id with DEL and C1 controls (JSON)", "400", stripeWith(stripeBody("evt_\x7f\u0085\u009b", "invoice.paid"))),
		simple("event id with a tab (GitHub header)", "400", githubWith("delivery\twith-tab", "issues", ghBody)),
		simple("event id with raw control bytes (GitHub header)", "400", githubWith("delivery\x01\x02", "issues", ghBody)),
		simple("event id with invalid UTF-8 (GitHub header)", "400", githubWith("delivery-\xff\xfe", "issues", ghBody)),
		simple("event type with a line break (JSON)", "400", stripeWith(stripeBody("evt_hostile_type_nl", "invoice.paid\nX-Injected: 1"))),
		simple("event type of 300 bytes (JSON)", "400", stripeWith(stripeBody("evt_hostile_type_long", strings.Repeat("t", 300)))),
		simple("empty event type (GitHub header)", "400", githubWith("delivery-no-type", "", ghBody)),

		// Signatures.
		simple("replayed signature with a changed body", "401", func(*testing.T) []byte {
			changed := stripeBody("evt_hostile_valid", "invoice.voided")
			return request("POST", "/webhooks/stripe", stripeSigned(valid, now()), changed)
		}),
		simple("replayed GitHub signature with a changed body", "401", func(*testing.T) []byte {
			return request("POST", "/webhooks/github", githubSigned(ghBody, "delivery-replay", "issues"), []byte(`{"action":"deleted"}`))
		}),
		simple("replayed signature, body changed by one trailing space", "401", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", stripeSigned(valid, now()), append(append([]byte{}, valid...), ' '))
		}),
		simple("signature replayed after the tolerance (10 min old)", "401", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", stripeSigned(valid, now().Add(-10*time.Minute)), valid)
		}),
		simple("signature from the future (10 min ahead)", "401", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", stripeSigned(valid, now().Add(10*time.Minute)), valid)
		}),
		simple("signature made with another secret", "401", func(*testing.T) []byte {
			h, _ := hookinboxtest.Stripe("whsec_other").Sign(valid, now())
			return request("POST", "/webhooks/stripe", []header{{"Stripe-Signature", h.Get("Stripe-Signature")}}, valid)
		}),
		simple("no signature", "400", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", []header{{"Content-Type", "application/json"}}, valid)
		}),
		simple("malformed signature header", "400", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", []header{{"Stripe-Signature", "t=abc,v1=zz"}}, valid)
		}),
		simple("two signature headers", "400", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"Stripe-Signature", "t=1,v1=00"}), valid)
		}),
		simple("GitHub SHA-1 signature only (downgrade)", "400", func(*testing.T) []byte {
			return request("POST", "/webhooks/github", []header{{"X-Hub-Signature", "sha1=0000000000000000000000000000000000000000"},
				{"X-GitHub-Delivery", "delivery-sha1"}, {"X-GitHub-Event", "issues"}}, ghBody)
		}),
		simple("two GitHub delivery ids", "400", func(*testing.T) []byte {
			return request("POST", "/webhooks/github", append(githubSigned(ghBody, "delivery-a", "issues"), header{"X-GitHub-Delivery", "delivery-b"}), ghBody)
		}),
		simple("header value with a NUL byte", "400", func(*testing.T) []byte {
			return request("POST", "/webhooks/stripe", append(stripeSigned(valid, now()), header{"X-Nul", "a\x00b"}), valid)
		}),

		// Methods and paths.
		simple("absolute-form target for another host, unsigned", "400", func(*testing.T) []byte {
			return request("POST", "http://evil.example/webhooks/stripe", []header{{"Content-Type", "application/json"}}, valid)
		}),
		simple("HTTP/1.1 without Host", "400", func(*testing.T) []byte {
			return []byte("POST /webhooks/stripe HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
		}),
		simple("not HTTP at all", "400", func(*testing.T) []byte { return []byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 hello\r\n\r\n") }),
		simple("HTTP/2 preface without h2c", "400", func(*testing.T) []byte { return []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") }),
		simple("unsupported HTTP version", "505", func(*testing.T) []byte {
			return []byte("POST /webhooks/stripe HTTP/3.7\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
		}),
	}
	for _, m := range []string{"GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "BREW"} {
		method := m
		kinds = append(kinds, simple(method+" on an endpoint, signed", "405", func(*testing.T) []byte {
			return request(method, "/webhooks/stripe", stripeSigned(valid, now()), valid)
		}))
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		path := p
		kinds = append(kinds, simple("POST "+path+" with a signed event", "405", func(*testing.T) []byte {
			return request("POST", path, stripeSigned(valid, now()), valid)
		}))
	}
	for _, p := range []string{"/", "/webhooks", "/webhooks/stripe/", "/webhooks/STRIPE", "/webhooks/stripe2", "/admin",
		"/webhooks/stripe%2F", "/webhooks/stripe;x", "/.env", "/webhooks/github/../stripe", "//webhooks/stripe"} {
		path := p
		want := "404"
		if strings.Contains(path, "..") || strings.HasPrefix(path, "//") {
			want = "307" // the mux redirects to the clean path, where the signature is checked
		}
		kinds = append(kinds, simple("POST "+path+" (not an endpoint), signed", want, func(*testing.T) []byte {
			return request("POST", path, stripeSigned(valid, now()), valid)
		}))
	}
	return kinds
}

// Every kind of hostile request is answered with its status (or cut off) and writes
// nothing, and the server keeps serving a well-formed delivery afterwards.
func TestHostile_EveryKindAnsweredAndNothingWritten(t *testing.T) {
	t.Parallel()
	h := startHostileServer(t, config.DefaultMaxConnections, nil)
	kinds := hostileKinds()
	t.Logf("%d kinds", len(kinds))
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			before := h.rows(t)
			got := k.send(t, h)
			t.Logf("answered %s", got)
			if !strings.Contains("|"+k.want+"|", "|"+got+"|") {
				t.Errorf("answered %s, want %s", got, k.want)
			}
			if n := h.rows(t) - before; n != 0 {
				t.Errorf("%d rows written", n)
			}
		})
	}
	if n := h.rows(t); n != 0 {
		t.Errorf("%d rows written in all", n)
	}
	h.control(t)
	// The control deliveries were received: the counting above would have seen rows.
	var controls int
	if err := h.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM hookinbox_inbox WHERE endpoint = 'control'`).Scan(&controls); err != nil || controls == 0 {
		t.Errorf("control receipts = %d, %v", controls, err)
	}
}

// Every kind of hostile request, sent while PostgreSQL is stopped (in immediate
// mode) and started again under the server, over and over: each is answered as when
// the database is up, or 503, and none writes anything. scripts/outage.sh runs it on
// a private server (TEST_DATABASE_URL, HOOKINBOX_OUTAGE_STOP and _START); without the
// commands it is skipped, so that the shared server is never stopped.
func TestHostile_EveryKindWhileTheDatabaseRestarts(t *testing.T) {
	stopCmd, startCmd := os.Getenv("HOOKINBOX_OUTAGE_STOP"), os.Getenv("HOOKINBOX_OUTAGE_START")
	if stopCmd == "" || startCmd == "" {
		t.Skip("needs a private PostgreSQL it may stop: run scripts/outage.sh")
	}
	h := startHostileServer(t, config.DefaultMaxConnections, nil)
	h.restarting = true
	restarts := 0
	ctx, stopRestarting := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, cmd := range []string{stopCmd, startCmd} {
				if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
					done <- fmt.Errorf("%s: %v: %s", cmd, err, out)
					return
				}
				time.Sleep(time.Second)
			}
			restarts++
		}
	}()
	answers := map[string]int{}
	for _, k := range hostileKinds() {
		got := k.send(t, h)
		answers[got]++
		if !strings.Contains("|"+k.want+"|503|", "|"+got+"|") {
			t.Errorf("%s: answered %s, want %s or 503", k.name, got, k.want)
		}
	}
	stopRestarting()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The database is up again: the loop ends with a start.
	if n := h.rows(t); n != 0 {
		t.Errorf("%d rows written by the hostile requests", n)
	}
	if restarts == 0 {
		t.Error("the database was never stopped and started again while the kinds were sent")
	}
	t.Logf("%d kinds while the database was stopped and started %d times; answers %v", len(hostileKinds()), restarts, answers)
}

// The kinds' well-formed twins are accepted: a refusal above is the server's
// judgement of the hostile part, not of the request as a whole.
func TestHostile_WellFormedTwinsAreAccepted(t *testing.T) {
	t.Parallel()
	h := startHostileServer(t, config.DefaultMaxConnections, nil)
	valid := stripeBody("evt_hostile_twin", "invoice.paid")
	ghBody := []byte(`{"action":"opened","issue":{"number":1}}`)
	for name, raw := range map[string][]byte{
		"stripe":                          request("POST", "/webhooks/stripe", stripeSigned(valid, time.Now()), valid),
		"github":                          request("POST", "/webhooks/github", githubSigned(ghBody, "delivery-twin", "issues"), ghBody),
		"no Content-Type":                 request("POST", "/webhooks/github", githubSigned(ghBody, "delivery-twin-2", "issues")[1:], ghBody),
		"application/json; charset=utf-8": request("POST", "/webhooks/github", append([]header{{"Content-Type", "application/json; charset=utf-8"}}, githubSigned(ghBody, "delivery-twin-3", "issues")[1:]...), ghBody),
		"application/cloudevents+json":    request("POST", "/webhooks/github", append([]header{{"Content-Type", "application/cloudevents+json"}}, githubSigned(ghBody, "delivery-twin-4", "issues")[1:]...), ghBody),
		"Content-Encoding identity":       request("POST", "/webhooks/github", append(githubSigned(ghBody, "delivery-twin-5", "issues"), header{"Content-Encoding", "identity"}), ghBody),
		"unicode id and nested 500 deep":  request("POST", "/webhooks/github", githubSigned(nested(500), "délivery-ü-日本", "issues"), nested(500)),
		"id of 512 bytes":                 request("POST", "/webhooks/github", githubSigned(ghBody, strings.Repeat("d", 512), "issues"), ghBody),
	} {
		if got := h.exchange(t, raw); got != "200" {
			t.Errorf("%s: answered %s, want 200", name, got)
		}
	}
}

// Two thousand connections that send nothing do not stop the server from serving
// others, and are all closed by it (read_header_timeout).
func TestHostile_TwoThousandIdleConnectionsAreBoundedAndOthersServed(t *testing.T) {
	t.Parallel()
	h := startHostileServer(t, config.DefaultMaxConnections, nil)
	const n = 2000
	conns := make([]net.Conn, 0, n)
	for range n {
		conns = append(conns, h.dial(t))
	}
	h.control(t)
	for i, c := range conns {
		h.waitClosed(t, c, fmt.Sprintf("idle connection %d", i))
	}
	h.control(t)
	if n := h.rows(t); n != 0 {
		t.Fatalf("%d rows written", n)
	}
}

// Five hundred slow clients at once, half dribbling headers and half a body, do not
// stop the server from serving others; each is cut off by its timeout, and nothing
// is written.
func TestHostile_FiveHundredSlowClientsAreCutOffAndOthersServed(t *testing.T) {
	t.Parallel()
	h := startHostileServer(t, config.DefaultMaxConnections, nil)
	const n = 500
	body := stripeBody("evt_hostile_slow_many", "invoice.paid")
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c := h.dial(t)
		if i%2 == 0 {
			fmt.Fprintf(c, "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\n")
			defer dribble(c, func(j int) []byte { return fmt.Appendf(nil, "X-Slow-%d: 1\r\n", j) })()
		} else {
			_, _ = c.Write(request("POST", "/webhooks/stripe", append(stripeSigned(body, time.Now()), header{"Content-Length", "4096"}), nil))
			defer dribble(c, func(int) []byte { return []byte(" ") })()
		}
		conns = append(conns, c)
	}
	for range 3 {
		h.control(t)
	}
	for i, c := range conns {
		want := "closed"
		if i%2 == 1 {
			want = "408"
		}
		if got := h.answer(t, c); got != want && got != "closed" {
			t.Errorf("slow client %d answered %s, want %s", i, got, want)
		}
	}
	h.control(t)
	if n := h.rows(t); n != 0 {
		t.Fatalf("%d rows written", n)
	}
}

// kindNamed returns the hostile kind whose name starts with prefix.
func kindNamed(t *testing.T, prefix string) hostileKind {
	t.Helper()
	for _, k := range hostileKinds() {
		if strings.HasPrefix(k.name, prefix) {
			return k
		}
	}
	t.Fatalf("no hostile kind %q", prefix)
	return hostileKind{}
}

// Broken variant: a server without its read timeouts (net/http's zero values) keeps
// a slowloris connection open past every timeout the real one has: the test above
// would see "open" where it wants "closed".
func TestBrokenServerWithoutTimeouts_SlowlorisHoldsTheConnection(t *testing.T) {
	t.Parallel()
	h := startHostileServer(t, config.DefaultMaxConnections, func(s *Server) {
		s.srv.ReadHeaderTimeout, s.srv.ReadTimeout = 0, 0
	})
	h.guard = 6 * time.Second // three times hostileYAML's read_header_timeout
	for _, prefix := range []string{"slowloris headers", "connection that never sends a byte"} {
		if got := kindNamed(t, prefix).send(t, h); got != "open" {
			t.Errorf("%s: answered %s without timeouts, want the connection still open", prefix, got)
		}
	}
}

// Broken variant: an endpoint that ignores Content-Type and Content-Encoding (the
// handler before the check, simulated by removing both headers in front of it)
// records a signed event whatever representation it claims.
func TestBrokenEndpointIgnoringRepresentation_RecordsTheEvent(t *testing.T) {
	t.Parallel()
	h := startHostileServer(t, config.DefaultMaxConnections, func(s *Server) {
		next := s.srv.Handler
		s.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Content-Type")
			r.Header.Del("Content-Encoding")
			next.ServeHTTP(w, r)
		})
	})
	for _, prefix := range []string{"Content-Type text/plain", "Content-Encoding br"} {
		before := h.rows(t)
		got := kindNamed(t, prefix).send(t, h)
		if got != "200" || h.rows(t) == before {
			t.Errorf("%s: answered %s and wrote %d rows without the check, want 200 and rows", prefix, got, h.rows(t)-before)
		}
	}
}
