package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// StripeBackends returns stripe-go backends that send through client (NewHTTPClient's,
// which paces requests and waits out 429s) to url ("" for Stripe's API), with
// stripe-go's own retries and logging off: the client retries, and nothing of a
// request is logged.
//
//	sc := stripe.NewClient(os.Getenv("STRIPE_SECRET_KEY"), stripe.WithBackends(backfill.StripeBackends(client, "")))
func StripeBackends(client *http.Client, url string) *stripe.Backends {
	cfg := &stripe.BackendConfig{
		HTTPClient:        client,
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		EnableTelemetry:   stripe.Bool(false),
	}
	if url != "" {
		cfg.URL = stripe.String(url)
	}
	return stripe.NewBackendsWithConfig(cfg)
}

// StripeConfig selects the events a Stripe backfill lists.
type StripeConfig struct {
	// Types are the event types to list: one type ("invoice.paid") or group with a
	// wildcard ("invoice.*"), or up to 20 types without wildcards (Stripe's type and
	// types parameters). Empty lists every type.
	Types []string

	// Since lists only events created at or after it. Stripe lists events of the
	// last 30 days; zero lists all of them.
	Since time.Time

	// PageSize is the events fetched per request, at most 100.
	//
	// Defaults to 100.
	PageSize int64
}

// Stripe is a Source of a Stripe account's events, listed with stripe-go
// (GET /v1/events), newest first. Its cursor is the id of the last event fed, which
// is Stripe's own pagination cursor (starting_after).
type Stripe struct {
	client *stripe.Client
	config StripeConfig
}

// NewStripe returns a Source of the events of the account client's key belongs to.
func NewStripe(client *stripe.Client, config StripeConfig) (*Stripe, error) {
	if len(config.Types) > 20 {
		return nil, fmt.Errorf("backfill: %d Stripe event types, at most 20", len(config.Types))
	}
	for _, t := range config.Types {
		if len(config.Types) > 1 && strings.Contains(t, "*") {
			return nil, fmt.Errorf("backfill: Stripe takes a wildcard (%s) only as the one type listed", t)
		}
	}
	if config.PageSize <= 0 || config.PageSize > 100 {
		config.PageSize = 100
	}
	return &Stripe{client: client, config: config}, nil
}

// Provider returns "stripe".
func (*Stripe) Provider() string { return "stripe" }

// Name names the types listed: "types=invoice.*,charge.refunded", or "types=*".
// Since is not part of it, so that a run with a relative --since resumes the
// checkpoint of the run before.
func (s *Stripe) Name() string {
	if len(s.config.Types) == 0 {
		return "types=*"
	}
	return "types=" + strings.Join(s.config.Types, ",")
}

// Fetch lists one page of events after the event cursor.
func (s *Stripe) Fetch(ctx context.Context, cursor string) (*Page, error) {
	params := &stripe.EventListParams{}
	params.Limit = stripe.Int64(s.config.PageSize)
	// One request per Fetch: the checkpoint moves a page at a time at least.
	params.Single = true
	if cursor != "" {
		params.StartingAfter = stripe.String(cursor)
	}
	if !s.config.Since.IsZero() {
		params.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: s.config.Since.Unix()}
	}
	switch len(s.config.Types) {
	case 0:
	case 1:
		params.Type = stripe.String(s.config.Types[0])
	default:
		params.Types = stripe.StringSlice(s.config.Types)
	}
	page := &Page{Cursor: cursor}
	for ev, err := range s.client.V1Events.List(ctx, params) {
		if err != nil {
			return nil, err
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("error encoding event %s: %w", ev.ID, err)
		}
		page.Events = append(page.Events, Event{
			ID: ev.ID, Type: string(ev.Type), Payload: payload,
			Created: time.Unix(ev.Created, 0), Cursor: ev.ID,
		})
		page.Cursor = ev.ID
	}
	// A full page may have more after it; a short one is the end of the list.
	page.More = int64(len(page.Events)) == s.config.PageSize
	return page, nil
}
