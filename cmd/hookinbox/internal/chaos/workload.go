package chaos

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// PayloadMarker is in every event's payload, and must never be in a server's log.
const PayloadMarker = "CHAOS-PAYLOAD-MARKER-never-logged"

// Scripts are the lives of an invoice the workload draws from. Each one's final state
// is the same whatever order its events arrive in, which is what makes the final
// state checkable: billing's handlers are state transitions (G6).
const (
	ScriptPaid          = "paid"          // created, finalized, paid
	ScriptVoid          = "void"          // created, finalized, voided
	ScriptUncollectible = "uncollectible" // created, finalized, marked_uncollectible
	ScriptRecovered     = "recovered"     // created, marked_uncollectible, paid
)

var scripts = []string{ScriptPaid, ScriptPaid, ScriptVoid, ScriptUncollectible, ScriptRecovered}

// Fact is one invoice and the events that tell its life; on a SendGrid endpoint, one
// email message and the events of its delivery (processed, delivered, open, click),
// whose order does not matter to the forward handler.
type Fact struct {
	// Invoice is the invoice's id, or the message's.
	Invoice  string
	Customer string
	Endpoint *Endpoint
	Script   string
	Amount   int64
	Events   []*Event
}

// FinalStatus is the invoice's status once every event is applied.
func (f *Fact) FinalStatus() string {
	switch f.Script {
	case ScriptPaid, ScriptRecovered:
		return "paid"
	case ScriptVoid:
		return "void"
	default:
		return "uncollectible"
	}
}

// Paid reports whether the fact books a payment.
func (f *Fact) Paid() bool { return f.FinalStatus() == "paid" }

// Event is one Stripe Event object, or one SendGrid event. A second Event object for
// the same fact has its own id and is an Event of its own.
type Event struct {
	ID   string
	Type string
	Fact *Fact
	// Applies is the invoice status the billing handler of Type inserts (its upsert's
	// VALUES): the audit trigger counts applications by it.
	Applies string
	Body    []byte
	// Copies is how many times the event is delivered (1 to 3): a SendGrid event, as
	// often as its batch.
	Copies int
}

// Delivery is one copy of a request, sent at At after the workload starts: a Stripe
// event, or a SendGrid batch of several events in one JSON array, which a provider
// retries as a whole.
type Delivery struct {
	Events []*Event
	Copy   int
	At     time.Duration
	// Body is the request's body: the event, or the batch's array.
	Body []byte
}

// Endpoint is where the delivery goes.
func (d *Delivery) Endpoint() *Endpoint { return d.Events[0].Fact.Endpoint }

// Workload is the facts of one run and their deliveries in sending order.
type Workload struct {
	Facts      []*Fact
	Events     []*Event
	Deliveries []*Delivery
}

// WorkloadConfig sizes a workload.
type WorkloadConfig struct {
	// Prefix makes the run's ids unique ("sync", "multi").
	Prefix string
	// Invoices is the number of facts.
	Invoices int
	// Endpoints are where facts are sent; each fact goes to one, drawn at random.
	Endpoints []*Endpoint
	// SecondObjectShare is the share of events also sent as a second Event object
	// with another id (invoice.payment_succeeded beside invoice.paid).
	SecondObjectShare float64
	// Spread is the time over which deliveries are spread.
	Spread time.Duration
	// Rand draws everything; a seed makes a run repeatable.
	Rand *rand.Rand
	// MaxBatch is the most events a SendGrid request carries.
	//
	// Defaults to 5.
	MaxBatch int
}

// NewWorkload draws a workload: each fact's events, a share of them as second Event
// objects, 1 to 3 copies of each, every copy at a random time (so in any order, and
// copies of one event sometimes at the same instant). The events of SendGrid
// endpoints are sent in batches of 1 to MaxBatch events drawn across messages, each
// batch 1 to 3 times.
func NewWorkload(c WorkloadConfig) *Workload {
	r := c.Rand
	if c.MaxBatch == 0 {
		c.MaxBatch = 5
	}
	w := &Workload{}
	batched := map[*Endpoint][]*Event{}
	for n := range c.Invoices {
		f := &Fact{
			Invoice:  fmt.Sprintf("in_%s_%05d", c.Prefix, n),
			Customer: fmt.Sprintf("cus_%s_%05d", c.Prefix, n%97),
			Endpoint: c.Endpoints[r.IntN(len(c.Endpoints))],
			Script:   scripts[r.IntN(len(scripts))],
			Amount:   int64(100 + r.IntN(100000)),
		}
		if f.Endpoint.Batched() {
			f.Invoice = fmt.Sprintf("msg_%s_%05d", c.Prefix, n)
			for _, typ := range sendgridTypes[:2+r.IntN(len(sendgridTypes)-1)] {
				f.addSendGridEvent(typ, r)
			}
			w.Facts = append(w.Facts, f)
			w.Events = append(w.Events, f.Events...)
			batched[f.Endpoint] = append(batched[f.Endpoint], f.Events...)
			continue
		}
		var types []string
		switch f.Script {
		case ScriptPaid:
			types = []string{"invoice.created", "invoice.finalized", "invoice.paid"}
		case ScriptVoid:
			types = []string{"invoice.created", "invoice.finalized", "invoice.voided"}
		case ScriptUncollectible:
			types = []string{"invoice.created", "invoice.finalized", "invoice.marked_uncollectible"}
		case ScriptRecovered:
			types = []string{"invoice.created", "invoice.marked_uncollectible", "invoice.paid"}
		}
		for _, typ := range types {
			f.addEvent(typ, r)
			if r.Float64() < c.SecondObjectShare {
				second := typ
				if typ == "invoice.paid" {
					second = "invoice.payment_succeeded" // Stripe's second Event object for a payment
				}
				f.addEvent(second, r)
			}
		}
		w.Facts = append(w.Facts, f)
		w.Events = append(w.Events, f.Events...)
	}
	at := func() time.Duration { return time.Duration(r.Int64N(int64(c.Spread) + 1)) }
	for _, ev := range w.Events {
		if ev.Fact.Endpoint.Batched() {
			continue
		}
		for k := range ev.Copies {
			w.Deliveries = append(w.Deliveries, &Delivery{Events: []*Event{ev}, Copy: k, At: at(), Body: ev.Body})
		}
	}
	for _, ep := range c.Endpoints { // in order: the draws repeat with the seed
		evs := batched[ep]
		r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		for len(evs) > 0 {
			batch := evs[:min(len(evs), 1+r.IntN(c.MaxBatch))]
			evs = evs[len(batch):]
			items := make([][]byte, len(batch))
			for k, ev := range batch {
				items[k] = ev.Body
			}
			body := append(append([]byte("["), bytes.Join(items, []byte(","))...), ']')
			copies := 1 + r.IntN(3)
			for k := range copies {
				w.Deliveries = append(w.Deliveries, &Delivery{Events: batch, Copy: k, At: at(), Body: body})
			}
			for _, ev := range batch {
				ev.Copies = copies
			}
		}
	}
	sort.Slice(w.Deliveries, func(i, j int) bool { return w.Deliveries[i].At < w.Deliveries[j].At })
	return w
}

// applies is the status billing's handler of each type writes in its upsert.
var applies = map[string]string{
	"invoice.created":              "draft",
	"invoice.finalized":            "open",
	"invoice.paid":                 "paid",
	"invoice.payment_succeeded":    "paid",
	"invoice.voided":               "void",
	"invoice.marked_uncollectible": "uncollectible",
}

func (f *Fact) addEvent(typ string, r *rand.Rand) {
	ev := &Event{
		ID:      fmt.Sprintf("evt_%s_%d", f.Invoice[3:], len(f.Events)),
		Type:    typ,
		Fact:    f,
		Applies: applies[typ],
		Copies:  1 + r.IntN(3),
	}
	status := ev.Applies // what the invoice object says at the time of the event
	paid := int64(0)
	if status == "paid" {
		paid = f.Amount
	}
	ev.Body = fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":%d,"livemode":false,`+
		`"data":{"object":{"id":%q,"object":"invoice","customer":%q,"status":%q,"amount_paid":%d,"currency":"usd","description":%q}}}`,
		ev.ID, typ, time.Now().Unix(), f.Invoice, f.Customer, status, paid, PayloadMarker)
	f.Events = append(f.Events, ev)
}

// sendgridTypes are the events of a message's delivery, in the order they happen; a
// message has the first two to all of them.
var sendgridTypes = []string{"processed", "delivered", "open", "click"}

func (f *Fact) addSendGridEvent(typ string, r *rand.Rand) {
	ev := &Event{ID: fmt.Sprintf("sg_%s_%d", f.Invoice[4:], len(f.Events)), Type: typ, Fact: f}
	ev.Body = fmt.Appendf(nil, `{"email":"chaos@example.com","timestamp":%d,"event":%q,"sg_event_id":%q,"sg_message_id":%q,"category":%q}`,
		time.Now().Unix(), typ, ev.ID, f.Invoice, PayloadMarker)
	f.Events = append(f.Events, ev)
}

// ExpectedApplies returns how many times billing's handlers should have applied an
// event of each status to the fact's invoice: once per Event object.
func (f *Fact) ExpectedApplies() map[string]int {
	m := map[string]int{}
	for _, ev := range f.Events {
		m[ev.Applies]++
	}
	return m
}
