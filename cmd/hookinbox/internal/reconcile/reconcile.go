// Package reconcile compares the billing domain's invoices with Stripe's and repairs
// the drift through the inbox: hookinbox reconcile.
//
// A backfill recovers the events Stripe still lists (30 days). A reconcile compares
// state instead: each invoice changed since a time, as Stripe has it now, against the
// local invoices table. With Repair, each drifted invoice's state is fed through the
// inbox as a synthetic event of the type that state stands for (paid: invoice.paid),
// with a key derived from the invoice and the state (reconcile_in_123_paid_1200), so
// the billing handlers apply it with their guards and a repeat run is a duplicate.
// What the handlers cannot resolve (a payment for a void invoice, a second amount for
// a paid one) stays as a billing anomaly for a person.
package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/backfill"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// Origin is the origin a reconcile records on the receipts of its synthetic events.
const Origin = "reconcile"

// Remote is an invoice as Stripe has it now.
type Remote struct {
	ID         string
	Status     string
	AmountPaid int64
	Currency   string
	// Raw is the invoice object as stripe-go decoded it, re-encoded: the synthetic
	// event's data.object.
	Raw json.RawMessage
}

// Kind is what differs.
type Kind string

// Kinds of drift.
const (
	MissingLocally Kind = "missing_locally"
	StatusDiffers  Kind = "status_differs"
	AmountDiffers  Kind = "amount_differs"
)

// Drift is one invoice that differs, and what the repair did.
type Drift struct {
	Kind   Kind
	Remote Remote
	// Local is the invoice before the repair; nil when it is missing.
	Local *billing.Invoice

	// EventID and EventType are the synthetic event's (with Repair).
	EventID   string
	EventType string
	// Outcome is the synthetic event's: processed, accepted (an async endpoint's
	// workers apply it), or duplicate (an earlier repair fed it).
	Outcome hookinbox.Outcome
	// Resolved is set when the invoice matches Stripe's after the repair.
	Resolved bool
	// Anomaly is the kind of the billing anomaly that holds the invoice for review,
	// when the repair could not resolve it.
	Anomaly string
}

// Config tunes Run.
type Config struct {
	// Endpoint is the billing endpoint that receives Stripe's webhooks. Required.
	Endpoint string
	// Since selects the invoices created since, and those named by an invoice event
	// since (Stripe has no filter by update time). Zero selects every invoice (and
	// the events of the 30 days Stripe keeps).
	Since time.Time
	// Repair feeds each drifted invoice's state through the inbox.
	Repair bool

	// idFunc replaces syntheticID in the tests' broken variant.
	idFunc func(Remote) string
}

// Result is what Run found and did.
type Result struct {
	// Compared counts the invoices listed from Stripe.
	Compared int
	// Drift lists the invoices that differed, by invoice id.
	Drift []Drift
}

// Local is what a reconcile needs of the local database: the billing store, the inbox
// that receives (a *hookinbox.Inbox) and its driver's executor (for the receipts and
// their origin).
type Local struct {
	Billing  billing.Store
	Inbox    backfill.Receiver
	Executor driver.Executor
}

// Run lists Stripe's invoices, compares them with the local ones and, with Repair,
// repairs the drift.
func Run(ctx context.Context, sc *stripe.Client, local Local, cfg *Config) (*Result, error) {
	if cfg == nil || cfg.Endpoint == "" {
		return nil, errors.New("reconcile: no endpoint")
	}
	remote, err := List(ctx, sc, cfg.Since)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(remote))
	for i, r := range remote {
		ids[i] = r.ID
	}
	before, err := local.Billing.Invoices(ctx, ids)
	if err != nil {
		return nil, err
	}
	res := &Result{Compared: len(remote), Drift: Compare(remote, before)}
	if !cfg.Repair || len(res.Drift) == 0 {
		return res, nil
	}
	return res, repair(ctx, local, cfg, res.Drift)
}

// List returns the invoices changed since since, with their current state: those
// created since (GET /v1/invoices), and those named by an invoice.* event since
// (GET /v1/events), fetched one by one. Sorted by id.
func List(ctx context.Context, sc *stripe.Client, since time.Time) ([]Remote, error) {
	byID := map[string]Remote{}
	params := &stripe.InvoiceListParams{}
	params.Limit = stripe.Int64(100)
	if !since.IsZero() {
		params.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: since.Unix()}
	}
	for inv, err := range sc.V1Invoices.List(ctx, params) {
		if err != nil {
			return nil, fmt.Errorf("error listing Stripe invoices: %w", err)
		}
		r, err := remoteOf(inv)
		if err != nil {
			return nil, err
		}
		byID[r.ID] = r
	}
	events := &stripe.EventListParams{Type: stripe.String("invoice.*")}
	events.Limit = stripe.Int64(100)
	if !since.IsZero() {
		events.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: since.Unix()}
	}
	var changed []string
	for ev, err := range sc.V1Events.List(ctx, events) {
		if err != nil {
			return nil, fmt.Errorf("error listing Stripe invoice events: %w", err)
		}
		var obj struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		}
		if ev.Data == nil || json.Unmarshal(ev.Data.Raw, &obj) != nil || obj.Object != "invoice" || obj.ID == "" {
			continue
		}
		if _, ok := byID[obj.ID]; !ok && !slices.Contains(changed, obj.ID) {
			changed = append(changed, obj.ID)
		}
	}
	for _, id := range changed {
		inv, err := sc.V1Invoices.Retrieve(ctx, id, nil)
		if err != nil {
			return nil, fmt.Errorf("error fetching Stripe invoice %s: %w", id, err)
		}
		r, err := remoteOf(inv)
		if err != nil {
			return nil, err
		}
		byID[r.ID] = r
	}
	list := make([]Remote, 0, len(byID))
	for _, r := range byID {
		list = append(list, r)
	}
	slices.SortFunc(list, func(a, b Remote) int { return strings.Compare(a.ID, b.ID) })
	return list, nil
}

func remoteOf(inv *stripe.Invoice) (Remote, error) {
	raw, err := json.Marshal(inv)
	if err != nil {
		return Remote{}, fmt.Errorf("error encoding Stripe invoice %s: %w", inv.ID, err)
	}
	return Remote{ID: inv.ID, Status: string(inv.Status), AmountPaid: inv.AmountPaid, Currency: string(inv.Currency), Raw: raw}, nil
}

// Compare returns the invoices of remote that differ from local: missing, another
// status, or (both paid) another amount.
func Compare(remote []Remote, local map[string]billing.Invoice) []Drift {
	var drift []Drift
	for _, r := range remote {
		if k, ok := differs(r, local); ok {
			d := Drift{Kind: k, Remote: r}
			if l, found := local[r.ID]; found {
				d.Local = &l
			}
			drift = append(drift, d)
		}
	}
	return drift
}

func differs(r Remote, local map[string]billing.Invoice) (Kind, bool) {
	l, ok := local[r.ID]
	switch {
	case !ok:
		return MissingLocally, true
	case l.Status != r.Status:
		return StatusDiffers, true
	case l.Status == "paid" && l.AmountPaid != r.AmountPaid:
		return AmountDiffers, true
	}
	return "", false
}

// eventTypes is the billing event that stands for each Stripe invoice status.
var eventTypes = map[string]string{
	"draft":         billing.TypeInvoiceCreated,
	"open":          billing.TypeInvoiceFinalized,
	"paid":          billing.TypeInvoicePaid,
	"void":          billing.TypeInvoiceVoided,
	"uncollectible": billing.TypeInvoiceMarkedUncollectible,
}

// syntheticID is the synthetic event's id: the invoice and the state it carries, so
// that the same state fed again is a duplicate and a later state is a new event.
func syntheticID(r Remote) string {
	return fmt.Sprintf("reconcile_%s_%s_%d", r.ID, r.Status, r.AmountPaid)
}

func repair(ctx context.Context, local Local, cfg *Config, drift []Drift) error {
	store := local.Executor
	idOf := syntheticID
	if cfg.idFunc != nil {
		idOf = cfg.idFunc
	}
	var ids []string
	for i := range drift {
		d := &drift[i]
		typ, ok := eventTypes[d.Remote.Status]
		if !ok {
			return fmt.Errorf("invoice %s has status %q, which no billing event stands for", d.Remote.ID, d.Remote.Status)
		}
		d.EventID, d.EventType = idOf(d.Remote), typ
		payload, err := json.Marshal(map[string]any{
			"id": d.EventID, "object": "event", "type": typ,
			"data": map[string]any{"object": d.Remote.Raw},
		})
		if err != nil {
			return fmt.Errorf("error encoding the synthetic event of %s: %w", d.Remote.ID, err)
		}
		key := hookinboxtype.Key{Provider: "stripe", Endpoint: cfg.Endpoint, EventID: d.EventID}
		existing, err := local.Executor.InboxGet(ctx, key)
		if err != nil {
			return fmt.Errorf("error reading the receipt of %s: %w", d.EventID, err)
		}
		d.Outcome = hookinbox.OutcomeDuplicate
		if existing == nil {
			d.Outcome, err = local.Inbox.Receive(ctx, hookinbox.Event{
				Provider: "stripe", Endpoint: cfg.Endpoint, ID: d.EventID, Type: typ, Payload: payload,
			})
			if err != nil {
				return fmt.Errorf("error receiving the synthetic %s of invoice %s: %w", typ, d.Remote.ID, err)
			}
			// The origin, and the last invoice repaired in the checkpoint
			// "stripe:ENDPOINT:reconcile".
			if err := store.BackfillAdvance(context.WithoutCancel(ctx), &driver.BackfillAdvanceParams{
				Name: "stripe:" + cfg.Endpoint + ":reconcile", Cursor: d.Remote.ID, Done: true, Origin: Origin, Key: key,
			}); err != nil {
				return fmt.Errorf("error recording the origin of %s: %w", d.EventID, err)
			}
		}
		ids = append(ids, d.Remote.ID)
	}
	return settle(ctx, local, drift, ids)
}

// settle compares the repaired invoices again and leaves what is still different as
// an anomaly, unless one holds the invoice already (the handler's
// payment_for_void_invoice, or an earlier reconcile's). An invoice whose event is
// pending for an async endpoint's workers is not judged yet.
func settle(ctx context.Context, local Local, drift []Drift, ids []string) error {
	after, err := local.Billing.Invoices(ctx, ids)
	if err != nil {
		return err
	}
	anomalies, err := local.Billing.Anomalies(ctx)
	if err != nil {
		return err
	}
	held := map[string]string{}
	for _, a := range anomalies {
		if _, ok := held[a.InvoiceID]; !ok {
			held[a.InvoiceID] = a.Kind
		}
	}
	for i := range drift {
		d := &drift[i]
		kind, still := differs(d.Remote, after)
		if !still {
			d.Resolved = true
			continue
		}
		if d.Outcome == hookinbox.OutcomeAccepted {
			continue
		}
		if k, ok := held[d.Remote.ID]; ok {
			d.Anomaly = k
			continue
		}
		a := billing.Anomaly{InvoiceID: d.Remote.ID, EventID: d.EventID, EventType: d.EventType, Kind: billing.AnomalyReconcileStatus}
		l := after[d.Remote.ID]
		switch kind {
		case AmountDiffers:
			a.Kind = billing.AnomalyReconcileAmount
			a.Detail = fmt.Sprintf("paid %d %s here, %d %s at Stripe", l.AmountPaid, l.Currency, d.Remote.AmountPaid, d.Remote.Currency)
		case MissingLocally:
			a.Detail = fmt.Sprintf("missing here, %s at Stripe", d.Remote.Status)
		default:
			a.Detail = fmt.Sprintf("%s here, %s at Stripe", l.Status, d.Remote.Status)
		}
		if _, err := local.Billing.RecordAnomaly(ctx, a); err != nil {
			return err
		}
		d.Anomaly = a.Kind
	}
	return nil
}
