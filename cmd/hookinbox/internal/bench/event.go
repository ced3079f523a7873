package bench

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// TemplateEvent is what the generator asks a template for: the event bench sends,
// with placeholders for the ids that change per request.
type TemplateEvent struct {
	ID       string
	Invoice  string
	Customer string
	Amount   int64
	Currency string
	// Options are the endpoint's options (--option), which tell the hmac template
	// where the endpoint reads the id and type.
	Options map[string]string
}

// Template is a provider's event as built for a TemplateEvent.
type Template struct {
	// Type is the event's type; SignType the type the scheme signs in a header, when
	// it differs (github's X-GitHub-Event).
	Type     string
	SignType string
	Body     []byte
}

// TemplateFunc builds provider's event for e: send's templates, shaped like the
// provider's own events.
type TemplateFunc func(provider string, e TemplateEvent) (Template, error)

// Placeholders in a template body, replaced by each request's ids. Plain ASCII, so
// that JSON encoding leaves them as they are.
const (
	placeholderEvent   = "HOOKINBOXBENCHEVENTID"
	placeholderInvoice = "HOOKINBOXBENCHINVOICEID"
)

// The customer and amount of every event bench sends, which the pgbench scripts
// write as literals.
const (
	eventCustomer = "cus_hookinbox_bench"
	eventAmount   = 1000
	eventCurrency = "usd"
)

// event is one request's event, with the id and type that schemes carrying them in
// headers (github, shopify, standardwebhooks, hmac) send.
type event struct {
	id, typ string
	// signType, when set, is the type to send in the scheme's header instead of typ.
	signType string
	body     []byte
}

// eventGen builds the events of a run: the provider's template, built once, with a
// new event id (and, for stripe, invoice id) per sequence number. The same number
// always gives the same event, which is how a duplicate is resent.
type eventGen struct {
	run      string // random, so that runs on one database never share ids
	typ      string
	signType string
	body     []byte
	next     atomic.Int64
}

func newEventGen(build TemplateFunc, provider string, options map[string]string) (*eventGen, error) {
	t, err := build(provider, TemplateEvent{
		ID: placeholderEvent, Invoice: placeholderInvoice,
		Customer: eventCustomer, Amount: eventAmount, Currency: eventCurrency, Options: options,
	})
	if err != nil {
		return nil, err
	}
	return &eventGen{run: randomHex(4), typ: t.Type, signType: t.SignType, body: t.Body}, nil
}

// ids returns the event id and invoice id of sequence number seq.
func (g *eventGen) ids(seq int64) (event, invoice string) {
	n := strconv.FormatInt(seq, 10)
	return "evt_bench_" + g.run + "_" + n, "in_bench_" + g.run + "_" + n
}

// event returns the event of sequence number seq.
func (g *eventGen) event(seq int64) event {
	id, invoice := g.ids(seq)
	ev := event{id: id, typ: g.typ, body: g.sample(id, invoice)}
	if g.signType != g.typ {
		ev.signType = g.signType
	}
	return ev
}

// sample returns one event's body with the ids given, for pgbench's payload.
func (g *eventGen) sample(id, invoice string) []byte {
	body := bytes.ReplaceAll(g.body, []byte(placeholderEvent), []byte(id))
	return bytes.ReplaceAll(body, []byte(placeholderInvoice), []byte(invoice))
}

// randomHex returns the hex of n random bytes: schema names and run ids.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
