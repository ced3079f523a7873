// Package backfill recovers the events a receiver missed: it pages through a
// provider's API (Stripe's event list, a GitHub hook's deliveries) with the provider's
// official Go client and feeds each event through the inbox as a delivery would be
// fed, under the same key (provider, endpoint, event id).
//
// Providers give up after their retry window (Stripe after 3 days; GitHub never
// retries), so a receiver that was down or misconfigured for longer has a gap that no
// inbox can see. A backfill closes it:
//
//   - an event already received is a duplicate and nothing is written;
//   - a missed event is received as a delivery would be: processed in the receive
//     transaction on a sync endpoint, stored pending for the workers on an async one;
//   - its receipt records that it came from a backfill (origin "backfill", shown by
//     hookinbox events show);
//   - after each event the position is stored in a checkpoint in the database
//     (hookinbox_backfill_checkpoint), in the same transaction as the origin, so a run
//     that was stopped resumes after the last event it fed;
//   - requests are paced (NewHTTPClient's rate) and a 429 waits for Retry-After.
//
// Events fetched from the API are not signed webhook deliveries. They need no
// signature: they are the answer to a request this process made itself, over TLS to
// the provider's API host (the certificate authenticates the provider), with the
// provider's secret API key (which only the account's holder has). The key is the
// caller's to read from the environment; nothing here logs it.
//
//	client := backfill.NewHTTPClient(backfill.ClientConfig{Rate: 10})
//	sc := stripe.NewClient(os.Getenv("STRIPE_SECRET_KEY"), stripe.WithBackends(backfill.StripeBackends(client, "")))
//	src, err := backfill.NewStripe(sc, backfill.StripeConfig{Types: []string{"invoice.*"}, Since: since})
//	res, err := backfill.Run(ctx, inbox, inbox.Driver().Executor(), src, &backfill.Config{Endpoint: "billing"})
package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Origin is the origin a backfill records on the receipts it inserts.
const Origin = "backfill"

// ErrNoProgress means the provider's list answered a page that does not move past
// the position asked for (a test double that ignores the cursor): paging on would
// never end.
var ErrNoProgress = errors.New("the provider's list does not move past the cursor")

// Receiver is what a backfill feeds: a *hookinbox.Inbox of any driver.
type Receiver interface {
	Receive(ctx context.Context, ev hookinbox.Event) (hookinbox.Outcome, error)
}

// Source lists a provider's past events, a page at a time.
type Source interface {
	// Provider is the provider name of the events, the first part of their key:
	// "stripe", "github".
	Provider() string

	// Name identifies what the source lists (its filter, never a secret), for the
	// checkpoint's name.
	Name() string

	// Fetch returns the events after cursor ("" for the start of the list), in the
	// order they are to be fed, each with the cursor that resumes after it.
	Fetch(ctx context.Context, cursor string) (*Page, error)
}

// Page is one page of a Source.
type Page struct {
	// Events are the page's events to feed.
	Events []Event
	// Cursor resumes after the whole page, which may end with events the source left
	// out (a GitHub delivery that succeeded, with FailedOnly).
	Cursor string
	// More is false when the list has nothing after this page.
	More bool
}

// Event is one event fetched from a provider.
type Event struct {
	ID      string
	Type    string
	Payload json.RawMessage
	// Created is when the provider created the event, for progress.
	Created time.Time
	// Cursor resumes after this event.
	Cursor string
}

// Config tunes Run.
type Config struct {
	// Endpoint is the inbox endpoint the events are fed to: the one that receives
	// the provider's webhooks. Required.
	Endpoint string

	// Restart ignores an unfinished checkpoint and starts from the beginning of the
	// list. Events fed before are duplicates.
	Restart bool

	// ProgressFunc, when set, is called after each event and at the end of each page,
	// from Run's goroutine.
	ProgressFunc func(Progress)
}

// Progress is where a run stands.
type Progress struct {
	// Checkpoint is the checkpoint's name.
	Checkpoint string
	// Resumed is set when the run continued an unfinished checkpoint.
	Resumed bool
	// Pages counts the pages fetched by this run.
	Pages int
	// Fed counts the events of the checkpoint fed so far, by earlier runs included.
	Fed int64
	// Counts are this run's outcomes, by outcome.
	Counts map[hookinbox.Outcome]int
	// Last is the last event fed and its outcome; nil at the end of a page without
	// events.
	Last *Fed
	// Done is set on the last call of a run that reached the end of the list.
	Done bool
}

// Fed is one event fed and its outcome.
type Fed struct {
	ID      string
	Type    string
	Created time.Time
	Outcome hookinbox.Outcome
}

// Result is what Run did.
type Result struct {
	Progress
}

// advanceTimeout bounds storing the checkpoint after an event was received. It runs
// even when the run's context is cancelled: the event is committed, and the checkpoint
// and its origin should follow it.
const advanceTimeout = 10 * time.Second

// Run feeds src's events to the endpoint cfg.Endpoint of recv, resuming at the
// checkpoint of an unfinished earlier run, until the list ends, ctx is done or an
// event cannot be received. ex is the inbox's executor (inbox.Driver().Executor()):
// it must implement driver.BackfillStore.
//
// An event whose receipt exists is counted as a duplicate without being received
// again, so that its body, which the API renders differently from the webhook's, is
// not recorded as a conflict. An event that cannot be received (a handler failure on
// a sync endpoint, a database error) stops the run before the checkpoint passes it: the
// next run starts with it. Run returns what it did with its error; after ctx was
// cancelled the error wraps ctx.Err() and the checkpoint is where it stopped.
func Run(ctx context.Context, recv Receiver, ex driver.Executor, src Source, cfg *Config) (*Result, error) {
	if cfg == nil || cfg.Endpoint == "" {
		return nil, errors.New("backfill: no endpoint")
	}
	r := &runner{
		recv: recv, ex: ex, store: ex, src: src, cfg: cfg,
		res: &Result{Progress{
			Checkpoint: src.Provider() + ":" + cfg.Endpoint + ":" + src.Name(),
			Counts:     map[hookinbox.Outcome]int{},
		}},
	}
	err := r.run(ctx)
	return r.res, err
}

type runner struct {
	recv  Receiver
	ex    driver.Executor
	store driver.BackfillStore
	src   Source
	cfg   *Config
	res   *Result
}

func (r *runner) run(ctx context.Context) error {
	p := &r.res.Progress
	cp, err := r.store.BackfillCheckpoint(ctx, p.Checkpoint)
	if err != nil {
		return err
	}
	cursor := ""
	if cp != nil && !cp.Done && !r.cfg.Restart {
		cursor, p.Fed, p.Resumed = cp.Cursor, cp.Events, true
	} else if err := r.advance(ctx, &driver.BackfillAdvanceParams{Restart: true}); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("backfill stopped: %w", err)
		}
		page, err := r.src.Fetch(ctx, cursor)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("backfill stopped: %w", ctx.Err())
			}
			return fmt.Errorf("error listing %s events: %w", r.src.Provider(), err)
		}
		if page.More && page.Cursor == cursor {
			// A list that answers the position it was asked to list after would be
			// paged forever.
			return fmt.Errorf("%w: %s listed nothing after %q", ErrNoProgress, r.src.Provider(), cursor)
		}
		p.Pages++
		for _, ev := range page.Events {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("backfill stopped: %w", err)
			}
			if err := r.feed(ctx, ev); err != nil {
				return err
			}
			cursor = ev.Cursor
		}
		p.Last = nil
		if page.Cursor != cursor || !page.More {
			cursor = page.Cursor
			if err := r.advance(ctx, &driver.BackfillAdvanceParams{Cursor: cursor, Done: !page.More}); err != nil {
				return err
			}
		}
		p.Done = !page.More
		r.progress()
		if p.Done {
			return nil
		}
	}
}

// feed receives one event unless its receipt exists, then moves the checkpoint past
// it, recording the origin on a receipt this run inserted.
func (r *runner) feed(ctx context.Context, ev Event) error {
	key := hookinboxtype.Key{Provider: r.src.Provider(), Endpoint: r.cfg.Endpoint, EventID: ev.ID}
	existing, err := r.ex.InboxGet(ctx, key)
	if err != nil {
		return fmt.Errorf("error reading the receipt of %s: %w", ev.ID, err)
	}
	out := hookinbox.OutcomeDuplicate
	if existing == nil {
		out, err = r.recv.Receive(ctx, hookinbox.Event{
			Provider: key.Provider, Endpoint: key.Endpoint, ID: ev.ID, Type: ev.Type, Payload: ev.Payload,
		})
		if err != nil {
			return fmt.Errorf("error receiving %s %s (the next run starts with it): %w", ev.Type, ev.ID, err)
		}
	}
	p := &r.res.Progress
	adv := &driver.BackfillAdvanceParams{Cursor: ev.Cursor, Events: p.Fed + 1}
	if out != hookinbox.OutcomeDuplicate {
		adv.Origin, adv.Key = Origin, key
	}
	if err := r.advance(ctx, adv); err != nil {
		return err
	}
	p.Fed++
	p.Counts[out]++
	p.Last = &Fed{ID: ev.ID, Type: ev.Type, Created: ev.Created, Outcome: out}
	r.progress()
	return nil
}

// advance stores the checkpoint, even after ctx was cancelled: what it records is
// committed already.
func (r *runner) advance(ctx context.Context, p *driver.BackfillAdvanceParams) error {
	p.Name = r.res.Checkpoint
	if !p.Restart && p.Events == 0 {
		p.Events = r.res.Fed
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), advanceTimeout)
	defer cancel()
	if err := r.store.BackfillAdvance(actx, p); err != nil {
		return fmt.Errorf("error storing the backfill checkpoint: %w", err)
	}
	return nil
}

func (r *runner) progress() {
	if r.cfg.ProgressFunc != nil {
		r.cfg.ProgressFunc(r.res.Progress)
	}
}

// ReceiptOrigin returns the origin recorded on a receipt: "" for a webhook delivery,
// Origin for a backfill's, "reconcile" for a reconcile's.
func ReceiptOrigin(ctx context.Context, ex driver.Executor, key hookinboxtype.Key) (string, error) {
	return ex.InboxOrigin(ctx, key)
}
