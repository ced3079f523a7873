package console_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium or Chrome binary; scripts/test.sh installs Debian's
// chromium when it runs as root and none is there.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestConsole_BrowserLogsInAndRetriesAGroup drives a real Chromium through the
// console: log in, find the group that needs review, confirm its retry, and read the
// audit entry the retry wrote.
func TestConsole_BrowserLogsInAndRetriesAGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, "postgres")
	br := newBrowser(t, b)
	seedReview(t, b, 3, 1)
	step, text := br.step, br.text
	const groupRow = `//tr[@class="group"][contains(., "not found")]`
	step("log in",
		chromedp.Navigate(b.srv.URL+"/console/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), operatorToken),
		chromedp.Submit(chromedp.CSS(`input[name="token"]`)),
		chromedp.WaitVisible(`//h1[text()="Overview"]`))
	overview := text(`//main`)
	step("open the review page",
		chromedp.Click(`//header/a[text()="Needs review"]`),
		chromedp.WaitVisible(groupRow))
	group := text(groupRow)
	step("ask to retry the group",
		chromedp.Click(groupRow+`//a[@class="retry-group"]`),
		chromedp.WaitVisible(chromedp.ID("confirm")))
	count := text(`//strong[@id="count"]`)
	step("confirm", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(`//h1[text()="Audit log"]`))
	audit := text(`//tr[@class="audit"]`)
	if !strings.Contains(overview, "billing") {
		t.Errorf("overview does not show the endpoint: %q", overview)
	}
	if !strings.Contains(group, "invoice # not found") || !strings.Contains(group, "3") {
		t.Errorf("group row %q: want the masked error and its 3 receipts", group)
	}
	if count != "3" {
		t.Errorf("confirmation count %q, want 3", count)
	}
	for _, want := range []string{"alice", "retry", "3 confirmed"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit entry %q lacks %q", audit, want)
		}
	}
	if n := groupState(t, b, "evt_nf_", "pending"); n != 3 {
		t.Errorf("retried receipts: %d, want 3", n)
	}
}
