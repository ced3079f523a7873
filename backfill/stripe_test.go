package backfill_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/backfill"
)

// renamed is a broken source for the tests' broken variants: it feeds every event
// under another id than the webhook's, as a backfill keyed on its own ids would.
type renamed struct{ backfill.Source }

func (r renamed) Fetch(ctx context.Context, cursor string) (*backfill.Page, error) {
	p, err := r.Source.Fetch(ctx, cursor)
	if err != nil {
		return nil, err
	}
	for i := range p.Events {
		p.Events[i].ID = "backfill_" + p.Events[i].ID
	}
	return p, nil
}

// checkGapFilled holds the first run's promise: the missed events are processed and
// recorded as a backfill's, the received ones are duplicates and keep their origin.
func checkGapFilled(t *testing.T, b *bundle, res *backfill.Result, n, missed int) error {
	if got := res.Counts[hookinbox.OutcomeProcessed]; got != missed {
		return fmt.Errorf("processed %d, want the %d missed", got, missed)
	}
	if got := res.Counts[hookinbox.OutcomeDuplicate]; got != n-missed {
		return fmt.Errorf("%d duplicates, want the %d received", got, n-missed)
	}
	if got := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); got != n {
		return fmt.Errorf("%d receipts, want %d", got, n)
	}
	return nil
}

func TestStripe_FillsTheGapAndASecondRunProcessesNothingNew(t *testing.T) {
	t.Parallel()
	b := setup(t, hookinbox.ModeSync)
	gap := map[int]bool{3: true, 4: true, 5: true, 9: true}
	b.plant(t, 12, gap)
	if got := b.count(t, `SELECT count(*) FROM ledger_entries`); got != 8 {
		t.Fatalf("%d payments booked before the backfill, want 8", got)
	}

	// Pages of 5 across the gaps: [12..8], [7..3], [2, 1].
	res := b.run(t, b.source(t, 5, backfill.ClientConfig{}), &backfill.Config{Endpoint: endpoint})
	if err := checkGapFilled(t, b, res, 12, len(gap)); err != nil {
		t.Fatal(err)
	}
	if !res.Done || res.Pages != 3 || res.Resumed {
		t.Fatalf("done %t after %d pages (resumed %t), want done after 3", res.Done, res.Pages, res.Resumed)
	}
	if got := b.count(t, `SELECT count(*) FROM ledger_entries`); got != 12 {
		t.Fatalf("%d payments booked, want 12", got)
	}
	if got := b.count(t, `SELECT count(*) FROM invoices WHERE id = 'in_004' AND status = 'paid' AND amount_paid = 400`); got != 1 {
		t.Fatal("the missed in_004 is not paid with its amount")
	}
	for id, want := range map[string]string{"evt_004": backfill.Origin, "evt_009": backfill.Origin, "evt_001": "", "evt_012": ""} {
		if got := b.origin(t, id); got != want {
			t.Errorf("%s origin %q, want %q", id, got, want)
		}
	}
	outbox := b.count(t, `SELECT count(*) FROM hookinbox_outbox`)

	again := b.run(t, b.source(t, 5, backfill.ClientConfig{}), &backfill.Config{Endpoint: endpoint})
	if again.Counts[hookinbox.OutcomeDuplicate] != 12 || len(again.Counts) != 1 {
		t.Fatalf("second run: %v, want 12 duplicates and nothing else", again.Counts)
	}
	if got := b.count(t, `SELECT count(*) FROM ledger_entries`); got != 12 {
		t.Fatalf("%d payments booked after the second run, want 12", got)
	}
	if got := b.count(t, `SELECT count(*) FROM hookinbox_outbox`); got != outbox {
		t.Fatalf("%d outbox messages after the second run, want %d", got, outbox)
	}
}

// The broken variant: a backfill that keys events on ids of its own processes every
// event again, which checkGapFilled catches.
func TestStripe_BrokenVariantOtherKeyIsCaught(t *testing.T) {
	t.Parallel()
	b := setup(t, hookinbox.ModeSync)
	b.plant(t, 6, map[int]bool{2: true})
	res := b.run(t, renamed{b.source(t, 5, backfill.ClientConfig{})}, &backfill.Config{Endpoint: endpoint})
	if err := checkGapFilled(t, b, res, 6, 1); err == nil {
		t.Fatal("a backfill under other ids passed the check")
	}
}

// checkResumed holds a resumed run's promise: its first request starts after the
// checkpoint, and the two runs together processed each missed event once.
func checkResumed(t *testing.T, b *bundle, requestsBefore int, checkpoint string, first, second *backfill.Result, missed int) error {
	reqs := b.fake.Requests()[requestsBefore:]
	if len(reqs) == 0 || reqs[0].StartingAfter != checkpoint {
		return fmt.Errorf("second run's first request %+v, want one starting after %s", reqs, checkpoint)
	}
	if !second.Resumed {
		return errors.New("second run did not resume")
	}
	if got := first.Counts[hookinbox.OutcomeProcessed] + second.Counts[hookinbox.OutcomeProcessed]; got != missed {
		return fmt.Errorf("the two runs processed %d, want the %d missed", got, missed)
	}
	return nil
}

func TestStripe_ACancelledRunResumesFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%t", broken), func(t *testing.T) {
			t.Parallel()
			b := setup(t, hookinbox.ModeSync)
			gap := map[int]bool{2: true, 5: true, 6: true, 7: true, 10: true, 11: true}
			b.plant(t, 12, gap)

			// Killed after the sixth event, evt_007, in the middle of the second page.
			ctx, cancel := context.WithCancel(b.ctx)
			defer cancel()
			first, err := backfill.Run(ctx, b.inbox, b.ex, b.source(t, 4, backfill.ClientConfig{}), &backfill.Config{
				Endpoint: endpoint,
				ProgressFunc: func(p backfill.Progress) {
					if p.Fed == 6 {
						cancel()
					}
				},
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled run: %v, want context.Canceled", err)
			}
			cp, err := b.ex.BackfillCheckpoint(b.ctx, first.Checkpoint)
			if err != nil {
				t.Fatal(err)
			}
			if cp == nil || cp.Cursor != "evt_007" || cp.Events != 6 || cp.Done {
				t.Fatalf("checkpoint %+v, want after evt_007, 6 events, not done", cp)
			}
			if first.Counts[hookinbox.OutcomeProcessed] != 3 {
				t.Fatalf("first run processed %d, want 3 (evt_011, evt_010, evt_007)", first.Counts[hookinbox.OutcomeProcessed])
			}
			if got := b.origin(t, "evt_007"); got != backfill.Origin {
				t.Fatalf("evt_007, the last event before the cancel, has origin %q", got)
			}

			before := len(b.fake.Requests())
			second := b.run(t, b.source(t, 4, backfill.ClientConfig{}), &backfill.Config{Endpoint: endpoint, Restart: broken})
			err = checkResumed(t, b, before, "evt_007", first, second, len(gap))
			switch {
			case broken && err == nil:
				t.Fatal("a run that ignores the checkpoint passed the check")
			case !broken && err != nil:
				t.Fatal(err)
			}
			if second.Fed != 12 || !second.Done {
				t.Fatalf("checkpoint counts %d events (done %t), want 12", second.Fed, second.Done)
			}
			if got := b.count(t, `SELECT count(*) FROM ledger_entries`); got != 12 {
				t.Fatalf("%d payments booked, want 12", got)
			}
		})
	}
}

// On an async endpoint a missed event is stored pending for the workers, and marked
// as a backfill's.
func TestStripe_AsyncEndpointGetsPendingReceipts(t *testing.T) {
	t.Parallel()
	b := setup(t, hookinbox.ModeAsync)
	b.plant(t, 0, nil)
	for i := 1; i <= 3; i++ {
		b.fake.AddEvent(fakeInvoicePaid(i))
	}
	res := b.run(t, b.source(t, 100, backfill.ClientConfig{}), &backfill.Config{Endpoint: endpoint})
	if res.Counts[hookinbox.OutcomeAccepted] != 3 {
		t.Fatalf("outcomes %v, want 3 accepted", res.Counts)
	}
	if got := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE state = 'pending' AND origin = 'backfill'`); got != 3 {
		t.Fatalf("%d pending backfill receipts, want 3", got)
	}
	if got := b.count(t, `SELECT count(*) FROM ledger_entries`); got != 0 {
		t.Fatalf("%d payments booked before any worker ran", got)
	}
}

// A 429 is waited out (Retry-After: 0 asks for no wait) and the request sent again;
// the broken variant, a client that does not retry, fails the run.
func TestStripe_RateLimitIsWaitedOut(t *testing.T) {
	t.Parallel()
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("noretry=%t", broken), func(t *testing.T) {
			t.Parallel()
			b := setup(t, hookinbox.ModeSync)
			b.plant(t, 3, map[int]bool{2: true})
			b.fake.Limit(2, "0")
			cc := backfill.ClientConfig{}
			if broken {
				cc.MaxRetries = -1
			}
			var waits int
			cc.WaitFunc = func(_ time.Duration, status int) {
				if status == 429 {
					waits++
				}
			}
			res, err := backfill.Run(b.ctx, b.inbox, b.ex, b.source(t, 100, cc), &backfill.Config{Endpoint: endpoint})
			if broken {
				if err == nil {
					t.Fatal("a client that does not retry got past the 429s")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts[hookinbox.OutcomeProcessed] != 1 || waits != 2 {
				t.Fatalf("outcomes %v after %d waits, want 1 processed after 2", res.Counts, waits)
			}
			var limited int
			for _, r := range b.fake.Requests() {
				if r.Status == 429 {
					limited++
				}
			}
			if limited != 2 {
				t.Fatalf("%d requests answered 429, want 2", limited)
			}
		})
	}
}

// A missed event whose sync handler fails stops the run before the checkpoint passes
// it: nothing of it is committed, and the next run starts with it.
func TestStripe_AHandlerFailureStopsBeforeTheEvent(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	failing.Store(true)
	b := setupWrapped(t, hookinbox.ModeSync, func(fn hookinbox.HandlerFunc[pgx.Tx]) hookinbox.HandlerFunc[pgx.Tx] {
		return func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
			if ev.ID == "evt_004" && failing.Load() {
				return errors.New("the ledger is locked for maintenance")
			}
			return fn(ctx, tx, ev)
		}
	})
	b.plant(t, 6, map[int]bool{2: true, 4: true, 5: true})
	first, err := backfill.Run(b.ctx, b.inbox, b.ex, b.source(t, 100, backfill.ClientConfig{}), &backfill.Config{Endpoint: endpoint})
	if err == nil || !strings.Contains(err.Error(), "evt_004") {
		t.Fatalf("run over a failing handler: %v, want an error naming evt_004", err)
	}
	// Newest first: evt_006 (duplicate) and evt_005 (processed) went before it.
	if first.Fed != 2 || first.Counts[hookinbox.OutcomeProcessed] != 1 {
		t.Fatalf("first run fed %d (%v), want 2 with evt_005 processed", first.Fed, first.Counts)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_004'`); n != 0 {
		t.Fatal("the failed event's receipt was committed")
	}

	failing.Store(false)
	second := b.run(t, b.source(t, 100, backfill.ClientConfig{}), &backfill.Config{Endpoint: endpoint})
	if !second.Resumed || second.Counts[hookinbox.OutcomeProcessed] != 2 {
		t.Fatalf("second run: %v (resumed %t), want evt_004 and evt_002 processed", second.Counts, second.Resumed)
	}
	if got := b.count(t, `SELECT count(*) FROM ledger_entries`); got != 6 {
		t.Fatalf("%d payments booked, want 6", got)
	}
}

// stuck is a source whose every page after the first repeats the cursor it was asked
// with, as a double that ignores the cursor does.
type stuck struct{}

func (stuck) Provider() string { return "stripe" }
func (stuck) Name() string     { return "stuck" }
func (stuck) Fetch(_ context.Context, cursor string) (*backfill.Page, error) {
	ev := backfill.Event{ID: "evt_stuck", Type: "invoice.paid", Payload: []byte(`{"data":{"object":{"id":"in_stuck"}}}`), Cursor: "evt_stuck"}
	return &backfill.Page{Events: []backfill.Event{ev}, Cursor: "evt_stuck", More: true}, nil
}

func TestRun_AListThatDoesNotMoveStops(t *testing.T) {
	t.Parallel()
	b := setup(t, hookinbox.ModeSync)
	res, err := backfill.Run(b.ctx, b.inbox, b.ex, stuck{}, &backfill.Config{Endpoint: endpoint})
	if !errors.Is(err, backfill.ErrNoProgress) || res.Pages != 1 || res.Fed != 1 {
		t.Fatalf("%v after %d pages, %d events; want ErrNoProgress after 1 page", err, res.Pages, res.Fed)
	}
}
