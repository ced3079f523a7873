package probe

import (
	"sync"
	"time"
)

// Role is what an event does in its fact's life.
type Role int

const (
	// RoleStep is an event before the outcome, which the outcome may depend on
	// (invoice.created before invoice.paid).
	RoleStep Role = iota
	// RoleOutcome is the event whose effect the receiver must apply exactly once
	// (invoice.paid): what the check's applied counts.
	RoleOutcome
	// RoleSecond is a second Event object for the outcome, with an id of its own
	// (invoice.payment_succeeded beside invoice.paid). Applying it as well doubles
	// the fact.
	RoleSecond
)

// Fact is one thing that happened at the provider, which the receiver must apply
// once: a Stripe invoice's payment or voiding, a GitHub pull request's merge. Its id
// is the one the check returns as fact_id.
type Fact struct {
	ID       string
	Scenario string
	// Life names the life the fact takes ("paid", "voided").
	Life string
	// Events are the fact's Event objects in the order the provider sends them. The
	// second Event object, when the provider has one, is last.
	Events []*Event

	mu         sync.Mutex
	deliveries []*Delivery
}

// Event is one Event object about a fact: one id, one type, one body. Every copy and
// every retry of it carries the same id and body (Linear's body timestamp aside),
// signed anew when sent.
type Event struct {
	Fact *Fact
	// ID is the provider's event or delivery id, "" for providers whose receivers
	// derive one from the body (Twilio, Zoom).
	ID   string
	Type string
	Role Role

	// signType is the type sent in a header when it is not Type: GitHub's event name
	// (pull_request for pull_request.closed), GitLab's hook name.
	signType string
	// body is the body as built; restamp, when set, returns it with the time of the
	// attempt where the provider signs a timestamp inside the body (Linear).
	body    []byte
	restamp func(body []byte, at time.Time) []byte
}

// bodyAt is the body of an attempt sent at at.
func (e *Event) bodyAt(at time.Time) []byte {
	if e.restamp != nil {
		return e.restamp(e.body, at)
	}
	return e.body
}

// label names the event in reports: its type and id.
func (e *Event) label() string {
	if e.ID == "" {
		return e.Type
	}
	return e.Type + " " + e.ID
}

// addDelivery records d as one of the fact's deliveries.
func (f *Fact) addDelivery(d *Delivery) {
	f.mu.Lock()
	f.deliveries = append(f.deliveries, d)
	f.mu.Unlock()
}

// Deliveries returns the fact's deliveries, in the order they started.
func (f *Fact) Deliveries() []*Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Delivery(nil), f.deliveries...)
}

// lifeWithout returns the events of f but those of role.
func (f *Fact) eventsWithout(role Role) []*Event {
	var out []*Event
	for _, e := range f.Events {
		if e.Role != role {
			out = append(out, e)
		}
	}
	return out
}
