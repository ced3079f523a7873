package console_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/console"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// screenshotDir is where the browser test writes a PNG of every view when
// HOOKINBOX_SCREENSHOTS=1: the screenshots docs/CONSOLE.md and the README show.
// Ordinary runs write nothing.
const screenshotDir = "../../../../docs/console"

// browser is one Chromium session on a console, with the steps a test takes in it.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots bool
}

func newBrowser(t *testing.T, b *bundle) *browser {
	t.Helper()
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary on PATH (apt-get install -y chromium, or run scripts/test.sh as root): the browser test is skipped")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(b.ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(cancelTimeout)
	return &browser{t: t, ctx: ctx, shots: os.Getenv("HOOKINBOX_SCREENSHOTS") == "1"}
}

func (br *browser) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	br.t.Helper()
	if err := chromedp.Do(br.ctx, actions...); err != nil {
		br.t.Fatalf("browser, %s: %v", what, err)
	}
}

func (br *browser) text(sel string) string {
	br.t.Helper()
	s, err := chromedp.Run(br.ctx, chromedp.Text(sel))
	if err != nil {
		br.t.Fatalf("browser, reading %s: %v", sel, err)
	}
	return s
}

// shot writes the page as docs/console/<name>.png when screenshots are asked for: at
// most maxShotHeight pixels of it, in at most 256 colours, so that the docs' images
// stay small.
func (br *browser) shot(name string) {
	br.t.Helper()
	if !br.shots {
		return
	}
	raw, err := chromedp.Run(br.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		br.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		br.t.Fatalf("screenshot %s: %v", name, err)
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, reduce(img, maxShotHeight)); err != nil {
		br.t.Fatal(err)
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		br.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, name+".png"), out.Bytes(), 0o644); err != nil {
		br.t.Fatal(err)
	}
}

// maxShotHeight bounds a screenshot's height: a long list is shown by its top.
const maxShotHeight = 1200

// reduce crops img to height and maps it onto its 256 most frequent colours (a page
// of the console has few: the rest are text's anti-aliasing), dithered.
func reduce(img image.Image, height int) image.Image {
	b := img.Bounds()
	if b.Dy() > height {
		b.Max.Y = b.Min.Y + height
	}
	counts := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		colors = append(colors, c)
	}
	slices.SortFunc(colors, func(a, c color.RGBA) int { return counts[c] - counts[a] })
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(len(colors), 256)] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(image.Rect(0, 0, b.Dx(), b.Dy()), pal)
	draw.FloydSteinberg.Draw(out, out.Bounds(), img, b.Min)
	return out
}

// seedWorld fills the database with what an operator sees at 2 a.m.: an hour of
// traffic on three endpoints, receipts that need review for two causes, outbox
// messages delivered, failing and waiting, and a delivery's request record.
func seedWorld(t *testing.T, b *bundle) {
	t.Helper()
	var batch []*driver.InboxInsertParams
	for i := range 240 {
		ep, prov := []string{"billing", "github-ci", "shop"}[i%3], []string{"stripe", "github", "shopify"}[i%3]
		batch = append(batch, &driver.InboxInsertParams{
			Key:       hookinboxtype.Key{Provider: prov, Endpoint: ep, EventID: fmt.Sprintf("evt_%04d", i)},
			EventType: []string{"invoice.paid", "workflow_run", "orders/create"}[i%3], Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Processed: true, Outcome: "processed",
		})
	}
	if _, err := b.exec.InboxInsertMany(b.ctx, batch); err != nil {
		t.Fatal(err)
	}
	// Spread over the last day, half of it in the last hour, as traffic comes.
	b.run(t, `UPDATE hookinbox_inbox SET received_at = now() - (abs(hashtext(event_id)) % CASE WHEN event_id < 'evt_0120' THEN 3500 ELSE 85000 END) * interval '1 second'`)
	b.run(t, `UPDATE hookinbox_inbox SET processed_at = received_at + interval '80 milliseconds'`)
	body := []byte(`{"id":"evt_1QbZ7rL2eZvKYlo2","type":"invoice.paid","data":{"object":{"id":"in_1QbZ7r","customer":"cus_R2x","amount_paid":4200,"currency":"eur","card_number":"4242-canary-card-0000"}}}`)
	first, other := sha256.Sum256(body), sha256.Sum256(append(body, ' '))
	key := hookinboxtype.Key{Provider: "stripe", Endpoint: "billing", EventID: "evt_1QbZ7rL2eZvKYlo2"}
	if _, err := b.exec.InboxInsert(b.ctx, &driver.InboxInsertParams{
		Key: key, EventType: "invoice.paid", Payload: body, MaxAttempts: 2, BodySHA256: first[:],
		Request: []byte(`{"method":"POST","path":"/webhooks/stripe","remote_addr":"54.187.174.169:44510","content_length":4182,"secret_slot":0,
			"headers":{"Content-Type":["application/json; charset=utf-8"],"Stripe-Signature":["t=1733130000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"],"User-Agent":["Stripe/1.0 (+https://stripe.com/docs/webhooks)"]}}`),
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.exec.InboxNoteDuplicate(b.ctx, key, other[:]); err != nil {
		t.Fatal(err)
	}
	seedReview(t, b, 6, 3)
	for i := range 4 {
		b.outboxMessage(t, fmt.Sprintf("evt_%04d", i*3), "crm", fmt.Sprintf(`{"invoice":"in_%d","status":"paid"}`, i))
	}
	b.deliverOutbox(t, "crm", "crm answered 503 Service Unavailable (message %d)")
	for i := range 5 {
		b.outboxMessage(t, fmt.Sprintf("evt_%04d", 30+i*3), "ledger", fmt.Sprintf(`{"invoice":"in_%d","booked":true}`, 30+i))
	}
	b.deliverOutbox(t, "ledger", "")
	b.outboxMessage(t, "evt_0099", "ledger", `{"invoice":"in_99","booked":true}`)
}

// TestConsole_BrowserPausesRetriesTheOutboxAndRedelivers drives a real Chromium
// through the console's new actions: pause and resume an endpoint from the overview,
// retry a group of failed outbox messages from Needs review, redeliver published
// messages by filter and one from its page, reading the database after each. With
// HOOKINBOX_SCREENSHOTS=1 it writes a PNG of every view to docs/console/.
func TestConsole_BrowserPausesRetriesTheOutboxAndRedelivers(t *testing.T) {
	t.Parallel()
	b := setup(t, "postgres", setupOpts{endpoints: []console.Endpoint{
		{Name: "github-ci", Provider: "github"}, {Name: "shop", Provider: "shopify", Sync: true}}})
	br := newBrowser(t, b)
	seedWorld(t, b)
	base := b.srv.URL + "/console"

	br.step("open the login page", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	br.shot("login")
	br.step("log in",
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), operatorToken),
		chromedp.Submit(chromedp.CSS(`input[name="token"]`)),
		chromedp.WaitVisible(`//h1[text()="Overview"]`))
	br.shot("overview")

	// Pause billing from the overview, with a note; the overview says so.
	br.step("pause billing",
		chromedp.SendKeys(`//tr[td[1][text()="billing"]]//input[@name="note"]`, "ledger migration"),
		chromedp.Click(`//tr[td[1][text()="billing"]]//button[@class="pause"]`),
		chromedp.WaitVisible(`//tr[td[1][text()="billing"]]//span[@class="paused"]`))
	br.shot("overview-paused")
	states, err := b.exec.ConsoleEndpointStates(b.ctx)
	if err != nil || len(states) != 1 || !states[0].Paused || states[0].ChangedBy != "alice" {
		t.Fatalf("after the pause: %+v %v", states, err)
	}
	br.step("resume billing",
		chromedp.Click(`//tr[td[1][text()="billing"]]//button[@class="resume"]`),
		chromedp.WaitVisible(`//tr[td[1][text()="billing"]]//button[@class="pause"]`))
	if states, _ := b.exec.ConsoleEndpointStates(b.ctx); states[0].Paused {
		t.Fatal("still paused after the resume")
	}
	br.step("the day's overview", chromedp.Navigate(base+"/?window=day"), chromedp.WaitVisible(`//h2[starts-with(text(), "Arrivals")]`))
	br.shot("overview-day")

	// Retry the failing outbox group from Needs review, through its confirmation.
	const outboxRow = `//tr[@class="outbox-group"][contains(., "crm answered")]`
	br.step("open needs review", chromedp.Navigate(base+"/review"), chromedp.WaitVisible(outboxRow))
	br.shot("review")
	br.step("ask to retry the outbox group", chromedp.Click(outboxRow+`//a[@class="retry-outbox-group"]`), chromedp.WaitVisible(chromedp.ID("confirm")))
	br.shot("confirm-outbox")
	if n := br.text(`//strong[@id="count"]`); n != "4" {
		t.Fatalf("outbox confirmation count %q, want 4", n)
	}
	br.step("confirm", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(`//h1[text()="Audit log"]`))
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE destination = 'crm' AND state = 'pending' AND attempts = 0`); n != 4 {
		t.Fatalf("crm messages retried: %d, want 4", n)
	}

	// Redeliver the ledger's published messages by filter, then one more from its page.
	br.step("list published messages", chromedp.Navigate(base+"/outbox?state=published&dest=ledger"),
		chromedp.WaitVisible(`//a[@class="redeliver-outbox"]`))
	br.shot("outbox")
	br.step("ask to redeliver them", chromedp.Click(`//a[@class="redeliver-outbox"]`), chromedp.WaitVisible(chromedp.ID("confirm")))
	if n := br.text(`//strong[@id="count"]`); n != "5" {
		t.Fatalf("redelivery confirmation count %q, want 5", n)
	}
	br.step("confirm the redelivery",
		chromedp.SendKeys(`//input[@name="note"]`, "the ledger restored yesterday's backup"),
		chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(`//h1[text()="Audit log"]`))
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE destination = 'ledger' AND state = 'pending' AND published_at IS NULL`); n != 6 {
		t.Fatalf("ledger messages pending after the redelivery: %d, want 6 (5 redelivered, 1 never sent)", n)
	}
	b.deliverOutbox(t, "ledger", "")
	br.step("open a published message", chromedp.Navigate(base+"/outbox/message?id=5"), chromedp.WaitVisible(chromedp.ID("redeliver")))
	br.shot("message")
	br.step("redeliver it", chromedp.Click(chromedp.ID("redeliver")), chromedp.WaitVisible(`//dd[@class="state-pending"]`))
	if n := b.count(t, `SELECT count(*) FROM hookinbox_outbox WHERE id = 5 AND state = 'pending' AND attempts = 0`); n != 1 {
		t.Fatal("message 5 was not redelivered")
	}
	br.step("the audit log", chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(`//tr[@class="audit"]`))
	br.shot("audit")
	audit := br.text(`//table`)
	for _, want := range []string{"pause", "resume", "retry_outbox", "redeliver", "ledger restored"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %q", want)
		}
	}

	// The other views, for the docs: the inbox, an event, a receipts group's
	// confirmation, and an error page.
	br.step("the inbox", chromedp.Navigate(base+"/events"), chromedp.WaitVisible(`//h1[text()="Inbox"]`))
	br.shot("events")
	br.step("an event", chromedp.Navigate(base+"/event?provider=stripe&endpoint=billing&id=evt_1QbZ7rL2eZvKYlo2"),
		chromedp.WaitVisible(`//h2[text()="Request"]`))
	br.shot("event")
	br.step("a receipts group's confirmation", chromedp.Navigate(base+"/review"), chromedp.Click(`//a[@class="retry-group"]`),
		chromedp.WaitVisible(chromedp.ID("confirm")))
	br.shot("confirm")
	br.step("an error", chromedp.Navigate(base+"/events?state=bogus"), chromedp.WaitVisible(chromedp.ID("problem")))
	br.shot("error")
	if got := br.text(`//main`); !strings.Contains(got, "Back to the inbox") {
		t.Errorf("the error page has no way back: %q", got)
	}
}
