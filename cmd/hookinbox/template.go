package main

import (
	"crypto/rand"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// templateEvent is a test event built from send's flags.
type templateEvent struct {
	ID       string
	Type     string
	Invoice  string
	Customer string
	Amount   int64
	Currency string
}

// invoiceStatus is the status of the invoice an invoice.* event carries.
var invoiceStatus = map[string]string{
	"invoice.created":              "draft",
	"invoice.finalized":            "open",
	"invoice.paid":                 "paid",
	"invoice.payment_succeeded":    "paid",
	"invoice.voided":               "void",
	"invoice.marked_uncollectible": "uncollectible",
}

// invoiceTypes lists the invoice templates, for help texts.
const invoiceTypes = "invoice.created, invoice.finalized, invoice.paid, invoice.payment_succeeded,\n  invoice.voided, invoice.marked_uncollectible"

// body returns the event as the provider would send it: a Slack Events API envelope
// for slack (event_id, event.type), and otherwise an event shaped like Stripe's, whose
// top-level id and type the other schemes' signers also send in their headers.
func (e templateEvent) body(provider string, created time.Time) ([]byte, error) {
	if provider == "slack" {
		return json.Marshal(map[string]any{
			"type": "event_callback", "event_id": e.ID, "event_time": created.Unix(),
			"event": map[string]any{"type": e.Type, "event_ts": strconv.FormatInt(created.Unix(), 10)},
		})
	}
	return e.stripeBody(created)
}

// stripeBody is the Stripe envelope and, for invoice.* types, an invoice object in
// the state the event implies, with what the billing handlers read (data.object.id,
// customer, status, amount_paid, currency). Other types get a minimal object, e.g. to
// see an endpoint answer "ignored".
func (e templateEvent) stripeBody(created time.Time) ([]byte, error) {
	var object map[string]any
	if status, ok := invoiceStatus[e.Type]; ok {
		paid := int64(0)
		if status == "paid" {
			paid = e.Amount
		}
		object = map[string]any{
			"id": e.Invoice, "object": "invoice", "customer": e.Customer, "status": status,
			"amount_due": e.Amount, "amount_paid": paid, "currency": e.Currency, "livemode": false,
		}
	} else {
		kind, _, _ := strings.Cut(e.Type, ".")
		object = map[string]any{"id": randomID(objectPrefix(kind)), "object": kind, "livemode": false}
	}
	return json.Marshal(map[string]any{
		"id":               e.ID,
		"object":           "event",
		"api_version":      "2024-06-20",
		"created":          created.Unix(),
		"type":             e.Type,
		"livemode":         false,
		"pending_webhooks": 1,
		"request":          map[string]any{"id": nil, "idempotency_key": nil},
		"data":             map[string]any{"object": object},
	})
}

func objectPrefix(kind string) string {
	switch kind {
	case "customer":
		return "cus_"
	case "invoice":
		return "in_"
	case "charge":
		return "ch_"
	case "payment_intent":
		return "pi_"
	}
	return "obj_"
}

// randomID returns prefix and 24 random letters and digits, like Stripe's ids.
func randomID(prefix string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}
