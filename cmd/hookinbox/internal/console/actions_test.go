package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// unguarded is a broken variant of the console's queries: a bulk action that takes
// its filter alone, without the confirmed count or the state it was shown in.
type unguarded struct {
	driver.Executor
}

func (u *unguarded) ConsoleApply(ctx context.Context, a *driver.ConsoleAction) (int, error) {
	if a.Filter != nil {
		a.Limit, a.FromStates = 1<<30, []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview}
	}
	return u.Executor.ConsoleApply(ctx, a)
}

func breakGuard(e driver.Executor) driver.Executor {
	return &unguarded{Executor: e}
}

var confirmCount = regexp.MustCompile(`<strong id="count">(\d+)</strong>`)

// confirmForm reads the confirmation page of a group's action: the count it shows and
// the fields its form posts.
func confirmForm(t *testing.T, c *client, path string) (int, url.Values) {
	t.Helper()
	code, body := c.get(path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", path, code)
	}
	m := confirmCount.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no count on the confirmation page:\n%s", body)
	}
	n, _ := strconv.Atoi(m[1])
	form := url.Values{}
	for _, f := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(body, -1) {
		form.Add(f[1], html.UnescapeString(f[2]))
	}
	return n, form
}

// groupLink returns the link labelled label in the row of page that holds text.
func groupLink(t *testing.T, c *client, page, text, label string) string {
	t.Helper()
	_, body := c.get("/console/" + page)
	for _, row := range regexp.MustCompile(`(?s)<tr class="[a-z-]*group">.*?</tr>`).FindAllString(body, -1) {
		if !strings.Contains(row, text) {
			continue
		}
		if m := regexp.MustCompile(`<a[^>]* href="([^"]+)">` + regexp.QuoteMeta(label) + `</a>`).FindStringSubmatch(row); m != nil {
			return html.UnescapeString(m[1])
		}
	}
	t.Fatalf("no %q link in a row holding %q of /console/%s:\n%s", label, text, page, body)
	return ""
}

func retryGroupURL(t *testing.T, c *client) string {
	t.Helper()
	_, body := c.get("/console/review")
	m := regexp.MustCompile(`<a class="retry-group" href="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no retry link on the review page:\n%s", body)
	}
	return html.UnescapeString(m[1])
}

func lastAudit(t *testing.T, b *bundle) *driver.AuditEntry {
	t.Helper()
	list, err := b.exec.ConsoleAudit(b.ctx, driver.IDPage{}, 1)
	if err != nil || len(list) != 1 {
		t.Fatalf("audit: %v %v", list, err)
	}
	return list[0]
}

// TestConsole_BulkRetryChangesExactlyTheConfirmedRows: the confirmation shows 4; two
// more receipts join the group before the operator confirms; the retry changes the 4
// it showed (the oldest), and the audit entry says 4. The unguarded variant changes 6.
func TestConsole_BulkRetryChangesExactlyTheConfirmedRows(t *testing.T) {
	t.Parallel()
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("unguarded=%v", broken), func(t *testing.T) {
			t.Parallel()
			drivers(t, func(t *testing.T, name string) {
				var o setupOpts
				if broken {
					o.wrap = breakGuard
				}
				b := setup(t, name, o)
				seedReview(t, b, 4, 2)
				c := b.client(t)
				c.login(operatorToken)
				shown, form := confirmForm(t, c, retryGroupURL(t, c))
				if shown != 4 {
					t.Fatalf("confirmation shows %d, want 4", shown)
				}
				// Two more receipts fail the same way meanwhile.
				for i := 4; i < 6; i++ {
					b.receive(t, fmt.Sprintf("evt_nf_%d", i), payload(fmt.Sprintf("nf_%d", i)))
				}
				b.work(t, func(ev hookinbox.Event) error {
					return fmt.Errorf("invoice in_%s not found (ledger row %d)", ev.ID[4:], len(ev.ID)*7)
				})
				if resp := c.post("/console/bulk", form); resp.StatusCode != http.StatusSeeOther {
					t.Fatalf("bulk: %d", resp.StatusCode)
				}
				changed := groupState(t, b, "evt_nf_", "pending")
				entry := lastAudit(t, b)
				if broken {
					if changed == shown {
						t.Fatalf("the unguarded variant changed %d = the confirmed count; the test cannot tell", changed)
					}
					return
				}
				if changed != shown || entry.Rows != shown {
					t.Fatalf("confirmed %d, changed %d, audit says %d", shown, changed, entry.Rows)
				}
				if entry.Actor != "alice" || entry.Action != "retry" || !strings.Contains(entry.Target, "4 confirmed") {
					t.Errorf("audit entry %+v", entry)
				}
				// The two newest stay in review, and the other group is untouched.
				if n := groupState(t, b, "evt_nf_", "needs_review"); n != 2 {
					t.Errorf("still in review: %d, want 2", n)
				}
				if n := groupState(t, b, "evt_to_", "needs_review"); n != 2 {
					t.Errorf("the other group: %d in review, want 2", n)
				}
				if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE state = 'pending' AND attempts <> 0`); n != 0 {
					t.Errorf("%d retried receipts kept their attempts", n)
				}
			})
		})
	}
}

func TestConsole_BulkActionIsCappedAndSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t, "postgres", setupOpts{maxBulk: 3})
	seedReview(t, b, 5, 0)
	c := b.client(t)
	c.login(operatorToken)
	shown, form := confirmForm(t, c, retryGroupURL(t, c))
	_, body := c.get(retryGroupURL(t, c))
	if shown != 3 || !strings.Contains(body, "more than 3") {
		t.Fatalf("capped confirmation shows %d:\n%s", shown, body)
	}
	c.post("/console/bulk", form)
	if n := groupState(t, b, "evt_nf_", "pending"); n != 3 {
		t.Fatalf("changed %d, want the cap 3", n)
	}
	// A forged count above the cap is refused.
	form.Set("expect", "4")
	if resp := c.post("/console/bulk", form); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("expect over the cap: %d", resp.StatusCode)
	}
}

func TestConsole_BulkResolveKeepsTheRowsAndTheNote(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 3, 1)
		c := b.client(t)
		c.login(operatorToken)
		shown, form := confirmForm(t, c, groupLink(t, c, "review", "not found", "resolve group…"))
		if resp := c.post("/console/bulk", form); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("resolve without a note: %d, want 400", resp.StatusCode)
		}
		form.Set("note", "invoices were deleted upstream")
		c.post("/console/bulk", form)
		if n := groupState(t, b, "evt_nf_", "discarded"); n != shown || n != 3 {
			t.Fatalf("discarded %d, shown %d, want 3", n, shown)
		}
		if e := lastAudit(t, b); e.Note != "invoices were deleted upstream" || e.Rows != 3 || e.Action != "resolve" {
			t.Errorf("audit %+v", e)
		}
	})
}

func TestConsole_RetryAndResolveOneEventAndRetryAnOutboxMessage(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 2, 0)
		id, err := b.exec.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: "in_1", EventType: "InvoicePaid", Payload: []byte(`{}`),
			Source: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_nf_0"},
		})
		if err != nil {
			t.Fatal(err)
		}
		c := b.client(t)
		c.login(operatorToken)
		key := url.Values{"provider": {"stripe"}, "endpoint": {"billing"}, "id": {"evt_nf_0"}}
		if resp := c.post("/console/event/retry", key); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("retry: %d", resp.StatusCode)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_nf_0' AND state = 'pending' AND attempts = 0`); n != 1 {
			t.Fatal("the event was not retried")
		}
		key.Set("id", "evt_nf_1")
		key.Set("note", "duplicate of evt_nf_0")
		c.post("/console/event/resolve", key)
		if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_nf_1' AND state = 'discarded'`); n != 1 {
			t.Fatal("the event was not resolved (or was deleted)")
		}
		c.post("/console/outbox/retry", url.Values{"id": {strconv.FormatInt(id, 10)}})
		_, body := c.get("/console/audit")
		for _, want := range []string{"retry_outbox", "outbox " + strconv.FormatInt(id, 10), "event stripe/billing/evt_nf_0", "duplicate of evt_nf_0", "alice"} {
			if !strings.Contains(body, want) {
				t.Errorf("audit log lacks %q", want)
			}
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_audit`); n != 3 {
			t.Errorf("audit entries: %d, want 3", n)
		}
		// A processed or resolved event is not retried, and the audit says 0 rows.
		c.post("/console/event/retry", key)
		if e := lastAudit(t, b); e.Rows != 0 {
			t.Errorf("retrying a resolved event changed %d rows", e.Rows)
		}
	})
}

var eventLink = regexp.MustCompile(`<a href="/console/event\?[^"]*id=([^"&]+)`)
var nextLink = regexp.MustCompile(`<a href="([^"]+)">Older`)

// TestConsole_InboxPagesVisitEveryReceiptOnce: key-set pages over receipts that share
// their received_at (a group commit's) list each exactly once, newest first.
func TestConsole_InboxPagesVisitEveryReceiptOnce(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		ps := make([]*driver.InboxInsertParams, 0, 130)
		for i := range 130 {
			ps = append(ps, &driver.InboxInsertParams{
				Key:       hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: fmt.Sprintf("evt_%03d", i)},
				EventType: "invoice.paid", Payload: []byte(`{}`), Processed: true, Outcome: "processed",
			})
		}
		// One statement: on PostgreSQL every row gets the same received_at.
		if _, err := b.exec.InboxInsertMany(b.ctx, ps); err != nil {
			t.Fatal(err)
		}
		c := b.client(t)
		c.login(operatorToken)
		seen := map[string]int{}
		path, pages := "/console/events?endpoint=billing", 0
		for path != "" {
			pages++
			_, body := c.get(path)
			for _, m := range eventLink.FindAllStringSubmatch(body, -1) {
				seen[m[1]]++
			}
			path = ""
			if m := nextLink.FindStringSubmatch(body); m != nil {
				path = html.UnescapeString(m[1])
			}
			if pages > 10 {
				t.Fatal("paging does not end")
			}
		}
		if len(seen) != 130 || pages != 3 {
			t.Fatalf("%d distinct receipts on %d pages, want 130 on 3", len(seen), pages)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s listed %d times", id, n)
			}
		}
		// Filters: an exact id, a type, a time range that excludes everything.
		if _, body := c.get("/console/events?id=evt_007"); strings.Count(body, "/console/event?") != 1 {
			t.Error("exact event id did not find exactly one receipt")
		}
		if _, body := c.get("/console/events?type=other.type"); strings.Contains(body, "/console/event?") {
			t.Error("type filter let other types through")
		}
		until := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04")
		if _, body := c.get("/console/events?until=" + until); strings.Contains(body, "/console/event?") {
			t.Error("time range let later receipts through")
		}
		if code, _ := c.get("/console/events?state=bogus"); code != http.StatusBadRequest {
			t.Errorf("bad state: %d, want 400", code)
		}
		if code, _ := c.get("/console/events?since=yesterday"); code != http.StatusBadRequest {
			t.Errorf("bad time: %d, want 400", code)
		}
	})
}

func TestConsole_LoginAttemptsAreRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, "postgres")
	// setup allows 1000 a minute; a console of its own with the default 10.
	b2 := newDefaultConsole(t, b)
	c := &client{t: t, b: &bundle{srv: b2}, http: b.client(t).http}
	limited := 0
	for range 12 {
		if resp := c.login("wrong"); resp.StatusCode == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited != 2 {
		t.Fatalf("%d of 12 attempts refused with 429, want 2 (10 a minute)", limited)
	}
	// Even the right token waits.
	if resp := c.login(operatorToken); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right token while limited: %d", resp.StatusCode)
	}
}

func TestConsole_CleanupDeletesHistoryPastRetention(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 2, 0)
		if n := b.count(t, `SELECT count(*) FROM hookinbox_attempt`); n != 4 {
			t.Fatalf("attempts: %d, want 4", n)
		}
		old := `UPDATE hookinbox_attempt SET finished_at = finished_at - interval '100 hours' WHERE event_id = 'evt_nf_0'`
		if name == "sqlite" {
			old = `UPDATE hookinbox_attempt SET finished_at = finished_at - 360000000000 WHERE event_id = 'evt_nf_0'`
		}
		b.run(t, old)
		delivery := `INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token, finished_at) VALUES (1, 1, 1, now() - interval '100 hours'), (1, 2, 2, now())`
		if name == "sqlite" {
			delivery = `INSERT INTO hookinbox_delivery (outbox_id, attempt, claim_token, finished_at) VALUES (1, 1, 1, unixepoch('now') * 1000000 - 360000000000), (1, 2, 2, unixepoch('now') * 1000000)`
		}
		b.run(t, delivery)
		res, err := hookinbox.NewOperator(b.exec, nil).Cleanup(b.ctx, hookinbox.CleanupParams{OlderThan: 96 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deliveries != 1 || b.count(t, `SELECT count(*) FROM hookinbox_delivery`) != 1 {
			t.Errorf("cleanup deleted %d deliveries, want the old one", res.Deliveries)
		}
		if res.Attempts != 2 || b.count(t, `SELECT count(*) FROM hookinbox_attempt`) != 2 {
			t.Fatalf("cleanup deleted %d attempts, left %d; want 2 and 2", res.Attempts, b.count(t, `SELECT count(*) FROM hookinbox_attempt`))
		}
	})
}

// TestConsole_MessagePageShowsEveryFencedDelivery: a failed delivery, a stale
// dispatcher's late result (fenced: not recorded), then a delivery that succeeded.
func TestConsole_MessagePageShowsEveryFencedDelivery(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		id, err := b.exec.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: "in_1", EventType: "InvoicePaid", Payload: []byte(`{}`),
			Source: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_1"},
		})
		if err != nil {
			t.Fatal(err)
		}
		claim := func() *hookinboxtype.OutboxMessage {
			t.Helper()
			msgs, err := b.exec.OutboxClaim(b.ctx, &driver.OutboxClaimParams{Destinations: []string{""}, Limit: 1, Lease: time.Minute, MaxAttempts: 5})
			if err != nil || len(msgs) != 1 {
				t.Fatalf("claim: %v %v", msgs, err)
			}
			return msgs[0]
		}
		first := claim()
		if err := b.exec.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: id, ClaimToken: first.FencingToken, Error: "sink answered 503"}); err != nil {
			t.Fatal(err)
		}
		second := claim()
		if err := b.exec.OutboxRecordFailure(b.ctx, &driver.OutboxFailureParams{ID: id, ClaimToken: first.FencingToken, Error: "late and stale"}); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.exec.OutboxMarkPublished(b.ctx, id, second.FencingToken); err != nil || !ok {
			t.Fatalf("publish: %v %v", ok, err)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_delivery WHERE outbox_id = $1`, id); n != 2 {
			t.Fatalf("deliveries recorded: %d, want 2 (the stale result is fenced)", n)
		}
		c := b.client(t)
		c.login(operatorToken)
		_, body := c.get("/console/outbox/message?id=" + strconv.FormatInt(id, 10))
		if !strings.Contains(body, "sink answered 503") || !strings.Contains(body, "delivered") || strings.Contains(body, "late and stale") {
			t.Errorf("message page deliveries wrong:\n%s", body)
		}
	})
}
