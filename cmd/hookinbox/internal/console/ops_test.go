package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The canaries of the redaction test: a customer's name without digits (which error
// fingerprints do not mask) and an email, under the redacted keys "customer" and
// "*email*".
const (
	nameCanary  = "Canary Quillfeather"
	emailCanary = "canary.quill@example.org"
)

// canaryPayload is an invoice event whose customer fields are redacted.
func canaryPayload(id string) string {
	return fmt.Sprintf(`{"id":%q,"customer":%q,"contact":{"customer_email":%q},"amount_paid":100}`, id, nameCanary, emailCanary)
}

// outboxMessage inserts an outbox message of source evt_<source> for destination.
func (b *bundle) outboxMessage(t *testing.T, source, destination, payload string) int64 {
	t.Helper()
	id, err := b.exec.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
		AggregateType: "Invoice", AggregateID: "in_" + source, EventType: "InvoicePaid", Payload: []byte(payload),
		Source: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: source}, Destination: destination,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// deliverOutbox claims every pending message of destination once and records each
// delivery: published when fail is "", else failed with fail (its last attempt).
func (b *bundle) deliverOutbox(t *testing.T, destination, fail string) {
	t.Helper()
	msgs, err := b.exec.OutboxClaim(b.ctx, &driver.OutboxClaimParams{Destinations: []string{destination}, Limit: 100, Lease: time.Minute, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if fail == "" {
			if ok, err := b.exec.OutboxMarkPublished(b.ctx, m.ID, m.FencingToken); err != nil || !ok {
				t.Fatalf("publish %d: %v %v", m.ID, ok, err)
			}
			continue
		}
		if err := b.exec.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: m.ID, ClaimToken: m.FencingToken,
			Error: fmt.Sprintf(fail, m.ID)}); err != nil {
			t.Fatal(err)
		}
	}
}

var hrefs = regexp.MustCompile(`href="(/console/[^"]*)"`)

// pageKey is a link's page: without its refresh period, and with any sealed group
// token (new at every rendering) as one.
func pageKey(p string) string {
	u, err := url.Parse(p)
	if err != nil {
		return p
	}
	q := u.Query()
	q.Del("refresh")
	if q.Has("fp") {
		q.Set("fp", "sealed")
	}
	return u.Path + "?" + q.Encode()
}

// crawl visits every console page reachable by links from start (not log out), at
// most limit, and returns each page's body by path.
func crawl(t *testing.T, c *client, limit int, start ...string) map[string]string {
	t.Helper()
	seen := map[string]string{}
	queue := start
	for len(queue) > 0 && len(seen) < limit {
		p := queue[0]
		queue = queue[1:]
		key := pageKey(p)
		if _, ok := seen[key]; ok || strings.HasPrefix(p, "/console/logout") || strings.HasPrefix(p, "/console/static/") {
			continue
		}
		code, body := c.get(p)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", p, code)
		}
		seen[key] = body
		for _, m := range hrefs.FindAllStringSubmatch(body, -1) {
			queue = append(queue, html.UnescapeString(m[1]))
		}
	}
	return seen
}

// seedCanaries puts three receipts to review with errors quoting their redacted
// values, fails an outbox message to review quoting them, publishes another, and
// takes two actions whose notes quote them.
func seedCanaries(t *testing.T, b *bundle, c *client) {
	t.Helper()
	for i := range 3 {
		b.receive(t, fmt.Sprintf("evt_c_%d", i), canaryPayload(fmt.Sprintf("evt_c_%d", i)))
	}
	b.work(t, func(ev hookinbox.Event) error {
		var p struct {
			Customer string
			Contact  struct {
				Email string `json:"customer_email"`
			}
		}
		_ = json.Unmarshal(ev.Payload, &p)
		return fmt.Errorf("customer %s <%s> has no account", p.Customer, p.Contact.Email)
	})
	b.outboxMessage(t, "evt_c_0", "crm", fmt.Sprintf(`{"customer_email":%q,"note":"for %s"}`, emailCanary, nameCanary))
	b.deliverOutbox(t, "crm", "crm refused "+emailCanary+": duplicate contact (message %d)")
	b.outboxMessage(t, "evt_c_1", "", fmt.Sprintf(`{"customer":%q}`, nameCanary))
	b.deliverOutbox(t, "", "")
	c.post("/console/event/resolve", url.Values{"provider": {"stripe"}, "endpoint": {"billing"}, "id": {"evt_c_2"},
		"note": {"asked by " + nameCanary + " (" + emailCanary + ") to drop it"}})
	c.post("/console/outbox/redeliver", url.Values{"id": {"2"}, "note": {"resent for " + emailCanary}})
}

// canaryPages are the pages the crawl starts from.
var canaryPages = []string{"/console/", "/console/review", "/console/events?state=needs_review",
	"/console/outbox?state=needs_review", "/console/outbox?state=published", "/console/outbox", "/console/audit"}

// leaks returns the pages that show a canary, in any case or escaping.
func leaks(pages map[string]string) []string {
	var found []string
	for p, body := range pages {
		lower := strings.ToLower(html.UnescapeString(body))
		if u, err := url.QueryUnescape(lower); err == nil {
			lower += u
		}
		for _, canary := range []string{"quillfeather", "canary.quill"} {
			if strings.Contains(lower, canary) {
				found = append(found, p+" shows "+canary)
			}
		}
	}
	return found
}

func TestConsole_RedactedValuesAppearOnNoPage(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name, setupOpts{redact: []string{"customer", "*EMAIL*"}})
		c := b.client(t)
		c.login(operatorToken)
		seedCanaries(t, b, c)
		pages := crawl(t, c, 200, canaryPages...)
		t.Logf("crawled %d pages", len(pages))
		if len(pages) < 20 {
			t.Fatalf("the crawl reached %d pages, want every page of the console", len(pages))
		}
		redactedOn := 0
		for _, body := range pages {
			if strings.Contains(body, "[redacted]") {
				redactedOn++
			}
		}
		review := pages[pageKey("/console/review")]
		if redactedOn < 5 || !strings.Contains(review, `<tr class="group">`) || !strings.Contains(review, `<tr class="outbox-group">`) {
			t.Fatalf("[redacted] on %d pages, review groups missing: the test would show nothing", redactedOn)
		}
		for _, l := range leaks(pages) {
			t.Error(l)
		}
	})
}

// TestConsole_RedactingPayloadsOnlyIsCaught: the broken variant (payloads redacted,
// errors, examples and notes not) shows the canaries, so the test above can fail.
func TestConsole_RedactingPayloadsOnlyIsCaught(t *testing.T) {
	t.Parallel()
	b := setup(t, "postgres", setupOpts{redact: []string{"customer", "*email*"}})
	b.console.BreakForTest("redact-texts")
	c := b.client(t)
	c.login(operatorToken)
	seedCanaries(t, b, c)
	if l := leaks(crawl(t, c, 200, canaryPages...)); len(l) == 0 {
		t.Fatal("redacting payloads only leaked nothing: the canary test would not notice")
	}
}

// levels records the levels of the log records it receives.
type levels struct {
	errors atomic.Int32
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		l.errors.Add(1)
	}
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

func TestConsole_ErrorsArePagesWithAWayBackAndBadBytesAre400(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		logs := &levels{}
		b := setup(t, name, setupOpts{logger: slog.New(logs)})
		seedReview(t, b, 2, 0)
		c := b.client(t)
		c.login(operatorToken)
		for _, tc := range []struct {
			path string
			code int
			back string
		}{
			{"/console/events?state=bogus", 400, "the inbox"},
			{"/console/events?endpoint=%ff", 400, "the inbox"},
			{"/console/events?q=%00", 400, "the inbox"},
			{"/console/events?type=a%ffb&since=2026-01-01T00:00", 400, "the inbox"},
			{"/console/outbox?type=%00", 400, "the outbox"},
			{"/console/outbox?dest=%ff", 400, "the outbox"},
			{"/console/event?provider=stripe&endpoint=billing&id=%ff", 400, "the inbox"},
			{"/console/events?endpoint=%zz", 400, "the inbox"},
			{"/console/event?provider=stripe&endpoint=billing&id=absent", 404, "the inbox"},
			{"/console/outbox/message?id=999", 404, "the outbox"},
			{"/console/no-such-page", 404, "the overview"},
			{"/console/confirm?action=retry&endpoint=nope&state=needs_review", 400, "needs review"},
			{"/console/events?fp=forged", 400, "the inbox"},
		} {
			code, body := c.get(tc.path)
			if code != tc.code || !strings.Contains(body, "<header>") || !strings.Contains(body, "Back to "+tc.back) {
				t.Errorf("GET %s: %d, want %d as a page of the console with a way back to %s:\n%s", tc.path, code, tc.code, tc.back, body)
			}
		}
		// An action on an endpoint that is not configured is refused, and not audited.
		form := url.Values{"action": {"retry"}, "endpoint": {"nope"}, "state": {"needs_review"}, "expect": {"1"}}
		if resp := c.post("/console/bulk", form); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("bulk on an unknown endpoint: %d, want 400", resp.StatusCode)
		}
		if resp := c.post("/console/endpoint/pause", url.Values{"endpoint": {"nope"}}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("pausing an unknown endpoint: %d, want 400", resp.StatusCode)
		}
		if resp := c.post("/console/bulk", url.Values{"action": {"retry"}, "endpoint": {"billing\x00"}, "state": {"needs_review"}, "expect": {"1"}}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a form with a NUL: %d, want 400", resp.StatusCode)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_audit`); n != 0 {
			t.Errorf("refused actions wrote %d audit entries", n)
		}
		if n := logs.errors.Load(); n != 0 {
			t.Errorf("%d ERROR log lines for requests refused with 4xx", n)
		}
	})
}

// reviewFormsAndConfirm follows the review page's link labelled label in the row
// holding text to its confirmation, and posts it with note.
func confirmAndPost(t *testing.T, c *client, link, note string) (int, *http.Response) {
	t.Helper()
	shown, form := confirmForm(t, c, link)
	form.Set("note", note)
	return shown, c.postForm(t, form)
}

func (c *client) postForm(t *testing.T, form url.Values) *http.Response {
	t.Helper()
	path := "/console/bulk"
	if strings.HasSuffix(form.Get("action"), "_outbox") || form.Get("action") == "redeliver" {
		path = "/console/outbox/bulk"
	}
	return c.post(path, form)
}

func TestConsole_OutboxFailuresAreRetriedAndResolvedFromNeedsReview(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		for i := range 3 {
			b.outboxMessage(t, fmt.Sprint("evt_", i), "crm", `{}`)
		}
		b.deliverOutbox(t, "crm", "crm answered 500 (message %d)")
		for i := range 2 {
			b.outboxMessage(t, fmt.Sprint("evt_d_", i), "", `{}`)
		}
		b.deliverOutbox(t, "", "dial tcp 10.0.0.9:443: connection refused (message %d)")
		c := b.client(t)
		c.login(operatorToken)
		if _, body := c.get("/console/"); !strings.Contains(body, `state=needs_review">5</a>`) {
			t.Errorf("the overview does not count the 5 outbox messages that need review apart:\n%s", body)
		}
		shown, resp := confirmAndPost(t, c, groupLink(t, c, "review", "crm answered", "retry group…"), "")
		if shown != 3 || resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("outbox group retry: shown %d, answer %d", shown, resp.StatusCode)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE destination = 'crm' AND state = 'pending' AND attempts = 0`); n != 3 {
			t.Fatalf("retried %d of the crm group, want 3", n)
		}
		if e := lastAudit(t, b); e.Action != driver.ActionRetryOutbox || e.Rows != 3 || e.Actor != "alice" {
			t.Errorf("audit %+v", e)
		}
		link := groupLink(t, c, "review", "connection refused", "resolve group…")
		_, form := confirmForm(t, c, link)
		if resp := c.postForm(t, form); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("resolving without a note: %d, want 400", resp.StatusCode)
		}
		if _, resp := confirmAndPost(t, c, link, "the old endpoint is gone"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("outbox group resolve: %d", resp.StatusCode)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'discarded'`); n != 2 {
			t.Fatalf("discarded %d, want 2", n)
		}
		if _, body := c.get("/console/review"); strings.Contains(body, `class="outbox-group"`) {
			t.Error("the review page still shows outbox groups")
		}
		// One message resolved on its own page.
		b.outboxMessage(t, "evt_x", "crm", `{}`)
		b.deliverOutbox(t, "crm", "crm answered 400 (message %d)")
		if resp := c.post("/console/outbox/resolve", url.Values{"id": {"6"}, "note": {"bad data"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("resolve one: %d", resp.StatusCode)
		}
		if e := lastAudit(t, b); e.Action != driver.ActionResolveOutbox || e.Rows != 1 || e.Note != "bad data" {
			t.Errorf("audit %+v", e)
		}
	})
}

func TestConsole_RedeliverPublishedMessagesKeepsTheirKeys(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		for i := range 3 {
			b.outboxMessage(t, fmt.Sprint("evt_", i), "crm", `{}`)
		}
		b.deliverOutbox(t, "crm", "")
		c := b.client(t)
		c.login(operatorToken)
		if _, body := c.get("/console/outbox/message?id=1"); !strings.Contains(body, `id="redeliver"`) || !strings.Contains(body, "hookinbox:stripe:billing:evt_0:1") {
			t.Fatalf("message page: no redeliver button or idempotency key:\n%s", body)
		}
		if resp := c.post("/console/outbox/redeliver", url.Values{"id": {"1"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("redeliver: %d", resp.StatusCode)
		}
		m, err := b.exec.ConsoleOutboxGet(b.ctx, 1)
		if err != nil || m.State != hookinboxtype.StatePending || m.Attempts != 0 || m.IdempotencyKey() != "hookinbox:stripe:billing:evt_0:1" {
			t.Fatalf("after redeliver: %+v %v", m, err)
		}
		_, body := c.get("/console/outbox?state=published&dest=crm")
		link := regexp.MustCompile(`<a class="redeliver-outbox" href="([^"]+)"`).FindStringSubmatch(body)
		if link == nil {
			t.Fatalf("no redeliver link on the published list:\n%s", body)
		}
		shown, resp := confirmAndPost(t, c, html.UnescapeString(link[1]), "the crm lost a day")
		if shown != 2 || resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("redeliver these: shown %d, answer %d", shown, resp.StatusCode)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE state = 'pending'`); n != 3 {
			t.Fatalf("pending after the redeliveries: %d, want 3", n)
		}
		if e := lastAudit(t, b); e.Action != driver.ActionRedeliver || e.Rows != 2 || !strings.Contains(e.Target, "2 confirmed") {
			t.Errorf("audit %+v", e)
		}
		reader := b.client(t)
		reader.login(readerToken)
		if resp := reader.post("/console/outbox/redeliver", url.Values{"id": {"1"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("read-only redeliver: %d", resp.StatusCode)
		}
	})
}

func TestConsole_PauseAndResumeFromTheOverview(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		var woken atomic.Int32
		b := setup(t, name, setupOpts{retried: func() { woken.Add(1) }})
		b.receive(t, "evt_1", payload("1"))
		c := b.client(t)
		c.login(operatorToken)
		if resp := c.post("/console/endpoint/pause", url.Values{"endpoint": {"billing"}, "note": {"the ledger is migrating"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("pause: %d", resp.StatusCode)
		}
		_, body := c.get("/console/")
		if !strings.Contains(body, `<span class="paused">paused</span>`) || !strings.Contains(body, `action="/console/endpoint/resume"`) {
			t.Fatalf("the overview does not show billing paused with a resume button:\n%s", body)
		}
		if e := lastAudit(t, b); e.Action != driver.ActionPause || e.Target != "endpoint billing" || e.Note != "the ledger is migrating" || e.Rows != 1 {
			t.Errorf("audit %+v", e)
		}
		if r, _ := b.exec.InboxGet(b.ctx, hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_1"}); !r.AvailableAt.Equal(driver.ParkedAt) {
			t.Errorf("the pending receipt is not parked: %v", r.AvailableAt)
		}
		if _, body := c.get("/console/event?provider=stripe&endpoint=billing&id=evt_1"); !strings.Contains(body, "when its endpoint is resumed") {
			t.Error("the event page does not say the receipt waits for the resume")
		}
		if woken.Load() != 0 {
			t.Error("a pause woke the workers")
		}
		if resp := c.post("/console/endpoint/resume", url.Values{"endpoint": {"billing"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("resume: %d", resp.StatusCode)
		}
		if woken.Load() != 1 {
			t.Errorf("the resume woke the workers %d times, want 1", woken.Load())
		}
		if _, body := c.get("/console/"); strings.Contains(body, `class="paused"`) {
			t.Error("still shown paused after the resume")
		}
		reader := b.client(t)
		reader.login(readerToken)
		if resp := reader.post("/console/endpoint/pause", url.Values{"endpoint": {"billing"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("read-only pause: %d", resp.StatusCode)
		}
		if _, body := reader.get("/console/"); strings.Contains(body, "endpoint/pause") {
			t.Error("a read-only session is shown the pause form")
		}
	})
}

func TestConsole_AutoRefreshNewerPagesAndSearch(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		for i := range 120 {
			b.receive(t, fmt.Sprintf("evt_%03d", i), fmt.Sprintf(`{"n":%d,"customer":"cus_%03d"}`, i, i))
		}
		c := b.client(t)
		c.login(operatorToken)
		if _, body := c.get("/console/?refresh=10"); !strings.Contains(body, `<meta http-equiv="refresh" content="10">`) {
			t.Error("no refresh on the overview with refresh=10")
		}
		if _, body := c.get("/console/"); strings.Contains(body, `http-equiv="refresh"`) {
			t.Error("the overview refreshes by default")
		}
		_, first := c.get("/console/events")
		older := html.UnescapeString(nextLink.FindStringSubmatch(first)[1])
		_, second := c.get(older)
		m := regexp.MustCompile(`<a href="([^"]+)">← Newer`).FindStringSubmatch(second)
		if m == nil {
			t.Fatalf("no newer link on the second page")
		}
		_, back := c.get(html.UnescapeString(m[1]))
		ids := func(body string) string { return fmt.Sprint(eventLink.FindAllStringSubmatch(body, -1)) }
		if ids(back) != ids(first) {
			t.Fatalf("the newer page is not the first page again")
		}
		if _, body := c.get("/console/events?q=cus_042"); strings.Count(body, "/console/event?") != 1 || !strings.Contains(body, "evt_042") {
			t.Errorf("search for cus_042 did not find exactly evt_042")
		}
	})
}

func TestConsole_EventPageShowsTheRequestAndBothBodies(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name, setupOpts{redact: []string{"*email*"}})
		k := hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_1"}
		request := `{"method":"POST","path":"/webhooks/stripe","remote_addr":"10.1.2.3:5555","content_length":42,"secret_slot":1,
			"headers":{"Stripe-Signature":["t=1,v1=abc"],"X-Customer-Email":["ada@example.org"],"User-Agent":["Stripe/1.0"]}}`
		if _, err := b.exec.InboxInsert(b.ctx, &driver.InboxInsertParams{Key: k, EventType: "invoice.paid", Payload: []byte(`{"a":1}`),
			MaxAttempts: 2, BodySHA256: bytes.Repeat([]byte{0xab}, 32), Request: []byte(request)}); err != nil {
			t.Fatal(err)
		}
		if _, conflict, err := b.exec.InboxNoteDuplicate(b.ctx, k, bytes.Repeat([]byte{0xcd}, 32)); err != nil || !conflict {
			t.Fatalf("duplicate: %v %v", conflict, err)
		}
		c := b.client(t)
		c.login(operatorToken)
		_, body := c.get("/console/event?provider=stripe&endpoint=billing&id=evt_1")
		for _, want := range []string{"10.1.2.3:5555", "Stripe-Signature", "t=1,v1=abc", "secret 1", strings.Repeat("ab", 32),
			strings.Repeat("cd", 32), "deliveries with another body</dt><dd>1"} {
			if !strings.Contains(body, want) {
				t.Errorf("event page lacks %q", want)
			}
		}
		if strings.Contains(body, "ada@example.org") {
			t.Error("a header named by a redacted pattern is shown")
		}
	})
}

// TestConsole_OverviewCountsComeFromTheRollupAndLive: the same numbers before and
// after the roll-up.
func TestConsole_OverviewCountsComeFromTheRollupAndLive(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 3, 2)
		c := b.client(t)
		c.login(operatorToken)
		cells := regexp.MustCompile(`(?s)<tr class="endpoint">.*?</tr>`)
		_, before := c.get("/console/")
		if _, err := b.exec.ConsoleRollup(b.ctx, time.Now().Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, after := c.get("/console/")
		totals := regexp.MustCompile(`\d+ received, \d+ processed, \d+ failed attempts, \d+ put to review`)
		if cells.FindString(before) != cells.FindString(after) || totals.FindString(before) != totals.FindString(after) {
			t.Fatalf("before the roll-up:\n%s\n%s\nafter:\n%s\n%s", cells.FindString(before), totals.FindString(before),
				cells.FindString(after), totals.FindString(after))
		}
		if got := totals.FindString(after); got != "5 received, 0 processed, 10 failed attempts, 5 put to review" {
			t.Errorf("chart totals %q", got)
		}
		if n, _ := strconv.Atoi(regexp.MustCompile(`<td class="n">(\d+)</td>`).FindStringSubmatch(cells.FindString(after))[1]); n != 5 {
			t.Errorf("received in the overview: %d, want 5", n)
		}
	})
}
