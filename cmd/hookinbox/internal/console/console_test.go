package console_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// seedReview puts receipts to review through the real workers: n failing with a
// "not found" error naming each invoice (one fingerprint), m with a timeout.
func seedReview(t *testing.T, b *bundle, n, m int) {
	t.Helper()
	for i := range n {
		b.receive(t, fmt.Sprintf("evt_nf_%d", i), payload(fmt.Sprintf("nf_%d", i)))
	}
	for i := range m {
		b.receive(t, fmt.Sprintf("evt_to_%d", i), payload(fmt.Sprintf("to_%d", i)))
	}
	b.work(t, func(ev hookinbox.Event) error {
		if strings.HasPrefix(ev.ID, "evt_nf_") {
			return fmt.Errorf("invoice in_%s not found (ledger row %d)", ev.ID[4:], len(ev.ID)*7)
		}
		return errors.New("dial tcp 10.0.0.7:5432: i/o timeout after 30s")
	})
}

func groupState(t *testing.T, b *bundle, prefix, state string) int {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id LIKE $1 AND state = $2`, prefix+"%", state)
}

// getPages are every page of the console, for a seeded database.
func getPages(b *bundle) []string {
	ev := url.Values{"provider": {"stripe"}, "endpoint": {"billing"}, "id": {"evt_nf_0"}}
	confirm := url.Values{"action": {"retry"}, "endpoint": {"billing"}, "state": {"needs_review"}}
	return []string{
		"/console/", "/console/?window=day", "/console/review", "/console/events",
		"/console/events?state=needs_review&endpoint=billing", "/console/event?" + ev.Encode(),
		"/console/outbox", "/console/outbox/message?id=1", "/console/audit", "/console/confirm?" + confirm.Encode(),
	}
}

var postPaths = []string{"/console/event/retry", "/console/event/resolve", "/console/outbox/retry", "/console/bulk"}

func TestConsole_EveryPageAndActionNeedsASession(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 2, 0)
		c := b.client(t)
		for _, p := range getPages(b) {
			if code, body := c.get(p); code != http.StatusUnauthorized || !strings.Contains(body, `name="token"`) {
				t.Errorf("GET %s without a session: %d, want 401 with the login form", p, code)
			}
		}
		for _, p := range postPaths {
			form := url.Values{"provider": {"stripe"}, "endpoint": {"billing"}, "id": {"evt_nf_0"}, "note": {"x"}}
			if resp := c.post(p, form); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("POST %s without a session: %d, want 401", p, resp.StatusCode)
			}
		}
		// A made-up cookie is no session either.
		c.http.Jar.SetCookies(mustURL(t, b.srv.URL+"/console/"), []*http.Cookie{{Name: "hookinbox_console", Value: operatorToken}})
		if code, _ := c.get("/console/"); code != http.StatusUnauthorized {
			t.Errorf("the token itself as the cookie: %d, want 401", code)
		}
		if n := groupState(t, b, "evt_nf_", "needs_review"); n != 2 {
			t.Errorf("needs review after refused actions: %d, want 2", n)
		}
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestConsole_LoginSetsAStrictHttpOnlySessionCookieThatIsNotTheToken(t *testing.T) {
	t.Parallel()
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			t.Parallel()
			b := setup(t, "postgres", setupOpts{tls: tls})
			c := b.client(t)
			resp := c.login(operatorToken)
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("login: %d, want 303", resp.StatusCode)
			}
			cookies := resp.Cookies()
			if len(cookies) != 1 {
				t.Fatalf("cookies %v", cookies)
			}
			ck := cookies[0]
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != tls || ck.Path != "/console/" {
				t.Errorf("cookie flags: HttpOnly=%v SameSite=%v Secure=%v Path=%q", ck.HttpOnly, ck.SameSite, ck.Secure, ck.Path)
			}
			if ck.Value == "" || strings.Contains(ck.Value, operatorToken) || len(ck.Value) < 40 {
				t.Errorf("cookie value %q: want a long random id, not the token", ck.Value)
			}
			for _, h := range []string{"Set-Cookie"} {
				if strings.Contains(strings.Join(resp.Header.Values(h), ""), operatorToken) {
					t.Errorf("%s carries the token", h)
				}
			}
			if code, _ := c.get("/console/"); code != http.StatusOK {
				t.Errorf("overview with the session: %d", code)
			}
			// A wrong token: no cookie.
			other := b.client(t)
			if resp := other.login("not-" + operatorToken); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
				t.Errorf("wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
			}
			// Logging out ends the session on the server, not only in the browser.
			id := ck.Value
			if code, _ := c.get("/console/logout"); code != http.StatusSeeOther {
				t.Errorf("logout: %d", code)
			}
			c.http.Jar.SetCookies(mustURL(t, b.srv.URL+"/console/"), []*http.Cookie{{Name: "hookinbox_console", Value: id}})
			if code, _ := c.get("/console/"); code != http.StatusUnauthorized {
				t.Errorf("after logout: %d, want 401", code)
			}
		})
	}
}

func TestConsole_EveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, "postgres")
	seedReview(t, b, 1, 0)
	c := b.client(t)
	check := func(path string, resp *http.Response) {
		t.Helper()
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q", path, cc)
		}
	}
	check("/console/login", c.login(operatorToken))
	for _, p := range append(getPages(b), "/console/login", "/console/static/console.css") {
		resp, err := c.http.Get(c.url(p))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		check(p, resp)
	}
}

func TestConsole_CrossSitePostIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, "postgres")
	seedReview(t, b, 3, 0)
	c := b.client(t)
	c.login(operatorToken)
	form := url.Values{"action": {"retry"}, "endpoint": {"billing"}, "state": {"needs_review"}, "expect": {"3"}}
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "https://evil.example"},
		{"Sec-Fetch-Site": "same-site", "Origin": "https://sub.evil.example"},
	} {
		if resp := c.postWith("/console/bulk", form, h); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with %v: %d, want 403", h, resp.StatusCode)
		}
	}
	if n := groupState(t, b, "evt_nf_", "needs_review"); n != 3 {
		t.Fatalf("needs review after cross-site posts: %d, want 3", n)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_audit`); n != 0 {
		t.Fatalf("audit entries: %d", n)
	}
	// The same form from the console's own origin is carried out.
	if resp := c.post("/console/bulk", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("same-origin POST: %d", resp.StatusCode)
	}
	if n := groupState(t, b, "evt_nf_", "pending"); n != 3 {
		t.Fatalf("pending after the same-origin retry: %d, want 3", n)
	}
}

var postForm = regexp.MustCompile(`(?i)<form[^>]*method="post"`)

func TestConsole_ReadOnlySessionSeesNoFormsAndIsRefusedEveryAction(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 2, 1)
		if _, err := b.exec.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: "in_1", EventType: "InvoicePaid", Payload: []byte(`{}`),
			Source: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_nf_0"},
		}); err != nil {
			t.Fatal(err)
		}
		c := b.client(t)
		c.login(readerToken)
		for _, p := range getPages(b) {
			code, body := c.get(p)
			want := http.StatusOK
			if strings.HasPrefix(p, "/console/confirm") {
				want = http.StatusForbidden // an action's first step
			}
			if code != want {
				t.Errorf("GET %s: %d, want %d", p, code, want)
			}
			if postForm.MatchString(body) || strings.Contains(body, "retry group") {
				t.Errorf("GET %s shows a read-only session an action", p)
			}
		}
		for _, p := range append(postPaths, "/console/login") {
			if p == "/console/login" {
				continue
			}
			form := url.Values{"provider": {"stripe"}, "endpoint": {"billing"}, "id": {"evt_nf_0"}, "note": {"x"},
				"action": {"retry"}, "state": {"needs_review"}, "expect": {"2"}}
			if resp := c.post(p, form); resp.StatusCode != http.StatusForbidden {
				t.Errorf("read-only POST %s: %d, want 403", p, resp.StatusCode)
			}
		}
		for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
			req, _ := http.NewRequest(m, c.url("/console/bulk"), nil)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			resp, err := c.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("read-only %s: %d, want 403", m, resp.StatusCode)
			}
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE state = 'needs_review'`); n != 3 {
			t.Errorf("needs review: %d, want 3", n)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_audit`); n != 0 {
			t.Errorf("audit entries: %d", n)
		}
	})
}

func TestConsole_NoPageShowsASecretARedactedFieldOrRawMarkup(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 2, 1)
		if _, err := b.exec.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: "<b>in_1</b>", EventType: "InvoicePaid",
			Payload: []byte(fmt.Sprintf(`{"card_number":%q,"note":"<script>alert(2)</script>"}`, cardCanary)),
			Source:  hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_nf_0"},
		}); err != nil {
			t.Fatal(err)
		}
		c := b.client(t)
		c.login(operatorToken)
		// An action, so the audit log has an entry to show.
		c.post("/console/event/resolve", url.Values{"provider": {"stripe"}, "endpoint": {"billing"}, "id": {"evt_to_0"}, "note": {"<i>dup</i>"}})
		sawPayload := false
		for _, p := range getPages(b) {
			code, body := c.get(p)
			if code != http.StatusOK {
				t.Errorf("GET %s: %d", p, code)
			}
			for _, canary := range []string{operatorToken, readerToken, signingSecret, cardCanary, "<script>", "<b>in_1", "<i>dup"} {
				if strings.Contains(body, canary) {
					t.Errorf("GET %s shows %q", p, canary)
				}
			}
			if strings.Contains(body, "&lt;script&gt;alert") {
				sawPayload = true
			}
		}
		if !sawPayload {
			t.Error("no page showed the payload's script tag as text")
		}
	})
}

func TestConsole_NeedsReviewGroupsByMaskedError(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 5, 2)
		c := b.client(t)
		c.login(operatorToken)
		_, body := c.get("/console/review")
		groups := strings.Count(body, `<tr class="group">`)
		if groups != 2 {
			t.Fatalf("groups: %d, want 2 (one per cause, ids and numbers masked)\n%s", groups, body)
		}
		if !strings.Contains(body, "invoice # not found (ledger row #)") || !strings.Contains(body, `<td class="n">5</td>`) {
			t.Errorf("the not-found group with 5 receipts is missing:\n%s", body)
		}
	})
}

func TestConsole_EventPageShowsAttemptsPayloadAndOutbox(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, name string) {
		b := setup(t, name)
		seedReview(t, b, 1, 0)
		if _, err := b.exec.OutboxInsert(b.ctx, &driver.OutboxInsertParams{
			AggregateType: "Invoice", AggregateID: "in_nf_0", EventType: "InvoicePaymentBooked", Payload: []byte(`{"a":1}`),
			Source: hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_nf_0"},
		}); err != nil {
			t.Fatal(err)
		}
		c := b.client(t)
		c.login(operatorToken)
		_, body := c.get(getPages(b)[5])
		// Two attempts (max_attempts 2), each with its error; the last has no next retry.
		if n := strings.Count(body, "invoice in_nf_0 not found"); n < 2 {
			t.Errorf("attempt errors shown %d times, want the two attempts and the last error", n)
		}
		for _, want := range []string{"InvoicePaymentBooked", "[redacted]", "bytes as stored", "needs_review"} {
			if !strings.Contains(body, want) {
				t.Errorf("event page lacks %q", want)
			}
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_attempt WHERE event_id = 'evt_nf_0' AND error IS NOT NULL`); n != 2 {
			t.Errorf("attempt rows: %d, want 2", n)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_attempt WHERE event_id = 'evt_nf_0' AND next_retry_at IS NULL`); n != 1 {
			t.Errorf("attempts without a next retry: %d, want 1 (the last)", n)
		}
	})
}

// TestConsole_BrokenProtectionsAreCaught turns each protection off and shows that the
// request its test sends then gets through: the tests above can fail.
func TestConsole_BrokenProtectionsAreCaught(t *testing.T) {
	t.Parallel()
	t.Run("cross-origin", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "postgres")
		seedReview(t, b, 2, 0)
		b.console.BreakForTest("cross-origin")
		c := b.client(t)
		c.login(operatorToken)
		form := url.Values{"action": {"retry"}, "endpoint": {"billing"}, "state": {"needs_review"}, "expect": {"2"}}
		if resp := c.postWith("/console/bulk", form, map[string]string{"Sec-Fetch-Site": "cross-site"}); resp.StatusCode == http.StatusForbidden {
			t.Fatal("a cross-site POST was refused without the protection: the test would not notice its loss")
		}
		if n := groupState(t, b, "evt_nf_", "pending"); n != 2 {
			t.Fatalf("pending %d after an unprotected cross-site retry, want 2", n)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "postgres")
		seedReview(t, b, 2, 0)
		b.console.BreakForTest("read-only")
		c := b.client(t)
		c.login(readerToken)
		form := url.Values{"provider": {"stripe"}, "endpoint": {"billing"}, "id": {"evt_nf_0"}}
		if resp := c.post("/console/event/retry", form); resp.StatusCode == http.StatusForbidden {
			t.Fatal("a read-only POST was refused without the check")
		}
		if n := groupState(t, b, "evt_nf_", "pending"); n != 1 {
			t.Fatalf("pending %d, want 1", n)
		}
	})
}
