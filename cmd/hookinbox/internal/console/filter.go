package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// states a receipt list may filter on.
var states = []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview, hookinboxtype.StateProcessed, hookinboxtype.StateDiscarded}

// outboxStates an outbox list may filter on.
var outboxStates = []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview, hookinboxtype.StatePublished, hookinboxtype.StateDiscarded}

// actionable are the states a retry or a resolve starts from.
var actionable = []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview}

// defaultDestination stands in a filter for the default sink's messages (those with
// no destination), so that an empty value can mean "any".
const defaultDestination = "(default)"

// searchWindow is how far back a payload search reaches when no start is given: a
// search reads each receipt's payload, so it is bounded by time unless told otherwise.
const searchWindow = 24 * time.Hour

// maxParam bounds any one value of a query or form.
const maxParam = 2000

// checkText refuses a query or form that is not what any page sends: a value that is
// not UTF-8 or holds a NUL (the database would refuse it), or is overlong.
func checkText(v url.Values) error {
	for k, vs := range v {
		for _, s := range append([]string{k}, vs...) {
			switch {
			case !utf8.ValidString(s):
				return fmt.Errorf("%s: not UTF-8 text", safeName(k))
			case strings.ContainsRune(s, 0):
				return fmt.Errorf("%s: holds a NUL character", safeName(k))
			case len(s) > maxParam:
				return fmt.Errorf("%s: longer than %d bytes", safeName(k), maxParam)
			}
		}
	}
	return nil
}

// safeName is a parameter's name as an error may quote it.
func safeName(k string) string {
	if utf8.ValidString(k) && !strings.ContainsRune(k, 0) && len(k) <= 40 {
		return strconv.Quote(k)
	}
	return "a parameter"
}

// timeForms are the accepted forms of a time in a filter (a datetime-local input, in
// UTC, or RFC 3339).
var timeForms = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano}

func parseTime(key, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, f := range timeForms {
		if t, err := time.ParseInLocation(f, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s: %q is not a time (want 2006-01-02T15:04, UTC)", key, s)
}

// sealer turns a fingerprint into an opaque token for URLs and forms and back: a
// fingerprint may hold what the console redacts (a customer's name in an error), and
// a URL is shown in the page. Tokens are sealed with a key of this process, so they
// last as long as its sessions do.
type sealer struct {
	aead cipher.AEAD
}

func newSealer() *sealer {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	return &sealer{aead: aead}
}

func (s *sealer) seal(fingerprint string) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(fingerprint), nil))
}

var errBadToken = errors.New("fp: not a group of this console (groups' links last as long as the process that made them: open the review page again)")

func (s *sealer) open(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", errBadToken
	}
	n := s.aead.NonceSize()
	fp, err := s.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return "", errBadToken
	}
	return string(fp), nil
}

// knownEndpoint reports whether name is a configured endpoint (any name when none
// is configured, as a library user may run the console).
func (c *Console) knownEndpoint(name string) bool {
	return len(c.cfg.Endpoints) == 0 || slices.ContainsFunc(c.cfg.Endpoints, func(e Endpoint) bool { return e.Name == name })
}

func (c *Console) checkEndpoint(name string) error {
	if name != "" && !c.knownEndpoint(name) {
		return fmt.Errorf("endpoint: %q is not a configured endpoint", name)
	}
	return nil
}

// groupAndRange reads what both lists' filters share: a group's sealed fingerprint
// and a time range.
func (c *Console) groupAndRange(q url.Values) (fingerprint string, since, until time.Time, err error) {
	if fingerprint, err = c.sealer.open(q.Get("fp")); err != nil {
		return "", since, until, err
	}
	if since, err = parseTime("since", q.Get("since")); err != nil {
		return "", since, until, err
	}
	until, err = parseTime("until", q.Get("until"))
	return fingerprint, since, until, err
}

// receiptFilter reads a list's or an action's filter from q, refusing what it does
// not understand.
func (c *Console) receiptFilter(q url.Values) (*driver.ReceiptFilter, error) {
	f := &driver.ReceiptFilter{
		Endpoint: q.Get("endpoint"), Provider: q.Get("provider"), EventType: q.Get("type"),
		State: hookinboxtype.State(q.Get("state")), EventID: q.Get("id"), Search: strings.TrimSpace(q.Get("q")),
	}
	if f.State != "" && !slices.Contains(states, f.State) {
		return nil, fmt.Errorf("state: %q is not one of %v", f.State, states)
	}
	if err := c.checkEndpoint(f.Endpoint); err != nil {
		return nil, err
	}
	var err error
	if f.Fingerprint, f.Since, f.Until, err = c.groupAndRange(q); err != nil {
		return nil, err
	}
	for _, side := range []string{"after", "before"} {
		if q.Get(side+"_t") == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, q.Get(side+"_t"))
		if err != nil {
			return nil, fmt.Errorf("%s_t: not a cursor", side)
		}
		cur := &driver.Cursor{ReceivedAt: t, Key: hookinboxtype.Key{
			Provider: q.Get(side + "_p"), Endpoint: q.Get(side + "_e"), EventID: q.Get(side + "_id")}}
		if side == "after" {
			f.After = cur
		} else {
			f.Before = cur
		}
	}
	if f.EventID != "" {
		for _, ep := range c.cfg.Endpoints {
			if (f.Endpoint == "" || f.Endpoint == ep.Name) && (f.Provider == "" || f.Provider == ep.Provider) {
				f.Keys = append(f.Keys, hookinboxtype.Key{Provider: ep.Provider, Endpoint: ep.Name})
			}
		}
	}
	return f, nil
}

// filterQuery writes f back as query parameters (without the cursor).
func (c *Console) filterQuery(f *driver.ReceiptFilter) url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("endpoint", f.Endpoint)
	set("provider", f.Provider)
	set("type", f.EventType)
	set("state", string(f.State))
	if f.Fingerprint != "" {
		q.Set("fp", c.sealer.seal(f.Fingerprint))
	}
	set("q", f.Search)
	set("id", f.EventID)
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// describe is a filter in words, for the confirmation page and the audit log, with
// its fingerprint as the page may show it.
func describe(pairs [][2]string, all string) string {
	var parts []string
	for _, p := range pairs {
		if p[1] != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", p[0], p[1]))
		}
	}
	if len(parts) == 0 {
		return all
	}
	return strings.Join(parts, " ")
}

// rangeWords is a time range's ends as a description shows them ("" when open).
func rangeWords(since, until time.Time) (string, string) {
	var s, u string
	if !since.IsZero() {
		s = since.UTC().Format(time.RFC3339)
	}
	if !until.IsZero() {
		u = until.UTC().Format(time.RFC3339)
	}
	return s, u
}

func describeReceipts(f *driver.ReceiptFilter, t *textRedactor) string {
	since, until := rangeWords(f.Since, f.Until)
	return describe([][2]string{{"endpoint", f.Endpoint}, {"provider", f.Provider}, {"type", f.EventType},
		{"state", string(f.State)}, {"error", t.text(f.Fingerprint)}, {"search", t.text(f.Search)},
		{"since", since}, {"until", until}}, "all receipts")
}

// outboxFilter reads an outbox list's or action's filter from q.
func (c *Console) outboxFilter(q url.Values) (*driver.OutboxFilter, error) {
	f := &driver.OutboxFilter{State: hookinboxtype.State(q.Get("state")), Endpoint: q.Get("endpoint"), EventType: q.Get("type")}
	if f.State != "" && !slices.Contains(outboxStates, f.State) {
		return nil, fmt.Errorf("state: %q is not one of %v", f.State, outboxStates)
	}
	if err := c.checkEndpoint(f.Endpoint); err != nil {
		return nil, err
	}
	if d := q.Get("dest"); d != "" {
		if d == defaultDestination {
			d = ""
		}
		f.Destination = &d
	}
	var err error
	if f.Fingerprint, f.Since, f.Until, err = c.groupAndRange(q); err != nil {
		return nil, err
	}
	for k, dst := range map[string]*int64{"before": &f.BeforeID, "after": &f.AfterID} {
		if s := q.Get(k); s != "" {
			if *dst, err = strconv.ParseInt(s, 10, 64); err != nil || *dst < 1 {
				return nil, fmt.Errorf("%s: not an outbox id", k)
			}
		}
	}
	return f, nil
}

// destinationParam is a destination as the filter's dest parameter holds it.
func destinationParam(d string) string {
	if d == "" {
		return defaultDestination
	}
	return d
}

// outboxQuery writes f back as query parameters (without the page).
func (c *Console) outboxQuery(f *driver.OutboxFilter) url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("state", string(f.State))
	if f.Destination != nil {
		q.Set("dest", destinationParam(*f.Destination))
	}
	set("endpoint", f.Endpoint)
	set("type", f.EventType)
	if f.Fingerprint != "" {
		q.Set("fp", c.sealer.seal(f.Fingerprint))
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	return q
}

func describeOutbox(f *driver.OutboxFilter, t *textRedactor) string {
	var dest string
	if f.Destination != nil {
		dest = destinationParam(*f.Destination)
	}
	since, until := rangeWords(f.Since, f.Until)
	return describe([][2]string{{"state", string(f.State)}, {"destination", dest}, {"endpoint", f.Endpoint},
		{"type", f.EventType}, {"error", t.text(f.Fingerprint)}, {"since", since}, {"until", until}}, "all outbox messages")
}
