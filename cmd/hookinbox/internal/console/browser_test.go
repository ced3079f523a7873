package console_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

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
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary on PATH (apt-get install -y chromium, or run scripts/test.sh as root): the browser test is skipped")
	}
	b := setup(t, "postgres")
	seedReview(t, b, 3, 1)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(b.ctx, opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("browser, %s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("browser, reading %s: %v", sel, err)
		}
		return s
	}
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
