package console

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// pageSize is the rows of one list page.
const pageSize = 50

// windows are the overview's chart spans: the bucket and how many.
var windows = map[string]struct {
	bucket time.Duration
	n      int
}{
	"hour": {time.Minute, 60},
	"day":  {30 * time.Minute, 48},
}

type overviewRow struct {
	*driver.EndpointSummary
	// Known says whether the endpoint is configured (only those can be paused here);
	// Sync whether its handler runs in the request, which a pause does not hold.
	Known, Sync bool
	EventsURL   string
	OutboxURL   string
}

type overviewData struct {
	Window    string
	Endpoints []overviewRow
	Chart     *chart
	// CountedAt is when the roll-up counted the backlog shown, when it was too large
	// to count at this view; zero when counted live.
	CountedAt  time.Time
	CountLimit int
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	window := r.URL.Query().Get("window")
	if window == "" {
		window = "hour"
	}
	win, ok := windows[window]
	if !ok {
		c.problem(w, r, http.StatusBadRequest, "window: want hour or day.")
		return
	}
	now := time.Now()
	since := now.Truncate(win.bucket).Add(-time.Duration(win.n-1) * win.bucket)
	list, err := c.db.ConsoleEndpoints(r.Context(), since)
	if err != nil {
		c.fail(w, r, "error reading the overview", err)
		return
	}
	// Configured endpoints without rows are shown with zeros.
	for _, ep := range c.cfg.Endpoints {
		if !slices.ContainsFunc(list, func(s *driver.EndpointSummary) bool { return s.Endpoint == ep.Name }) {
			list = append(list, &driver.EndpointSummary{Endpoint: ep.Name})
		}
	}
	slices.SortFunc(list, func(a, b *driver.EndpointSummary) int { return cmp.Compare(a.Endpoint, b.Endpoint) })
	d := &overviewData{Window: window, CountLimit: driver.LiveCountLimit}
	for _, s := range list {
		if !s.CountedAt.IsZero() {
			d.CountedAt = s.CountedAt
		}
		row := overviewRow{EndpointSummary: s, Known: c.knownEndpoint(s.Endpoint),
			EventsURL: c.cfg.Path + "/events?" + url.Values{"endpoint": {s.Endpoint}, "state": {"pending"}}.Encode(),
			OutboxURL: c.cfg.Path + "/outbox?" + url.Values{"endpoint": {s.Endpoint}, "state": {"needs_review"}}.Encode()}
		if i := slices.IndexFunc(c.cfg.Endpoints, func(e Endpoint) bool { return e.Name == s.Endpoint }); i >= 0 {
			row.Sync = c.cfg.Endpoints[i].Sync
		}
		d.Endpoints = append(d.Endpoints, row)
	}
	points, err := c.db.ConsoleSeries(r.Context(), since, win.bucket)
	if err != nil {
		c.fail(w, r, "error reading the chart", err)
		return
	}
	d.Chart = newChart(points, win.bucket, now)
	c.render(w, r, http.StatusOK, "overview", d)
}

type reviewRow struct {
	*driver.ReviewGroup
	// Fingerprint and Example as shown: redacted with the example's payload.
	Fingerprint, Example          string
	ListURL, RetryURL, ResolveURL string
}

type reviewData struct {
	Receipts []reviewRow
	Outbox   []reviewRow
}

func (c *Console) review(w http.ResponseWriter, r *http.Request) {
	groups, err := c.db.ConsoleReviewGroups(r.Context(), 200)
	if err != nil {
		c.fail(w, r, "error grouping receipts for review", err)
		return
	}
	outbox, err := c.db.ConsoleOutboxReviewGroups(r.Context(), 200)
	if err != nil {
		c.fail(w, r, "error grouping outbox messages for review", err)
		return
	}
	d := &reviewData{}
	for _, g := range groups {
		row := c.reviewRow(g)
		q := url.Values{"endpoint": {g.Endpoint}, "fp": {c.sealer.seal(g.Fingerprint)}, "state": {string(hookinboxtype.StateNeedsReview)}}
		row.ListURL = c.cfg.Path + "/events?" + q.Encode()
		q.Set("action", driver.ActionRetry)
		row.RetryURL = c.cfg.Path + "/confirm?" + q.Encode()
		q.Set("action", driver.ActionResolve)
		row.ResolveURL = c.cfg.Path + "/confirm?" + q.Encode()
		d.Receipts = append(d.Receipts, row)
	}
	for _, g := range outbox {
		row := c.reviewRow(g)
		q := url.Values{"dest": {destinationParam(g.Destination)}, "fp": {c.sealer.seal(g.Fingerprint)}, "state": {string(hookinboxtype.StateNeedsReview)}}
		row.ListURL = c.cfg.Path + "/outbox?" + q.Encode()
		q.Set("action", driver.ActionRetryOutbox)
		row.RetryURL = c.cfg.Path + "/outbox/confirm?" + q.Encode()
		q.Set("action", driver.ActionResolveOutbox)
		row.ResolveURL = c.cfg.Path + "/outbox/confirm?" + q.Encode()
		d.Outbox = append(d.Outbox, row)
	}
	c.render(w, r, http.StatusOK, "review", d)
}

func (c *Console) reviewRow(g *driver.ReviewGroup) reviewRow {
	t := c.redact.texts(g.ExamplePayload)
	return reviewRow{ReviewGroup: g, Fingerprint: t.text(g.Fingerprint), Example: t.text(g.Example)}
}

type receiptRow struct {
	*hookinboxtype.Receipt
	URL       string
	LastError string
}

type eventsData struct {
	Filter      *driver.ReceiptFilter
	Fingerprint string // the filter's, as shown
	FP          string // its token, for the form
	Since       string
	Until       string
	SearchFrom  bool // the search was bounded to searchWindow
	Endpoints   []Endpoint
	States      []hookinboxtype.State
	Rows        []receiptRow
	NextURL     string
	NewerURL    string
	RetryURL    string
	ResolveURL  string
}

func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	f, err := c.receiptFilter(r.URL.Query())
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	d := &eventsData{Filter: f, Endpoints: c.cfg.Endpoints, States: states, FP: r.URL.Query().Get("fp")}
	if f.Search != "" && f.Since.IsZero() && f.EventID == "" {
		f.Since, d.SearchFrom = time.Now().Add(-searchWindow).Truncate(time.Minute), true
	}
	list, err := c.db.ConsoleReceipts(r.Context(), f, pageSize)
	if err != nil {
		c.fail(w, r, "error listing receipts", err)
		return
	}
	if !f.Since.IsZero() {
		d.Since = f.Since.UTC().Format("2006-01-02T15:04")
	}
	if !f.Until.IsZero() {
		d.Until = f.Until.UTC().Format("2006-01-02T15:04")
	}
	var payloads [][]byte
	for _, rc := range list {
		d.Rows = append(d.Rows, receiptRow{Receipt: rc, URL: c.eventURL(rc.Key), LastError: c.redact.texts(rc.Payload).text(rc.LastError)})
		payloads = append(payloads, rc.Payload)
	}
	d.Fingerprint = c.redact.texts(payloads...).text(f.Fingerprint)
	q := c.filterQuery(f)
	if f.EventID == "" && len(list) > 0 {
		cursor := func(side string, rc *hookinboxtype.Receipt) string {
			pq := c.filterQuery(f)
			pq.Set(side+"_t", rc.ReceivedAt.UTC().Format(time.RFC3339Nano))
			pq.Set(side+"_p", rc.Provider)
			pq.Set(side+"_e", rc.Endpoint)
			pq.Set(side+"_id", rc.EventID)
			return c.cfg.Path + "/events?" + pq.Encode()
		}
		if len(list) == pageSize || f.Before != nil {
			d.NextURL = cursor("after", list[len(list)-1])
		}
		if f.After != nil || (f.Before != nil && len(list) == pageSize) {
			d.NewerURL = cursor("before", list[0])
		}
	}
	if slices.Contains(actionable, f.State) && f.EventID == "" {
		q.Set("action", driver.ActionRetry)
		d.RetryURL = c.cfg.Path + "/confirm?" + q.Encode()
		q.Set("action", driver.ActionResolve)
		d.ResolveURL = c.cfg.Path + "/confirm?" + q.Encode()
	}
	c.render(w, r, http.StatusOK, "events", d)
}

// keyFrom reads a receipt's key, refusing an endpoint that is not configured.
func (c *Console) keyFrom(q url.Values) (hookinboxtype.Key, error) {
	k := hookinboxtype.Key{Provider: q.Get("provider"), Endpoint: q.Get("endpoint"), EventID: q.Get("id")}
	if k.Provider == "" || k.Endpoint == "" || k.EventID == "" {
		return k, fmt.Errorf("provider, endpoint and id are required")
	}
	return k, c.checkEndpoint(k.Endpoint)
}

// receipt reads one receipt, answering the request itself (404, 503) when it cannot.
func (c *Console) receipt(w http.ResponseWriter, r *http.Request, k hookinboxtype.Key) (*hookinboxtype.Receipt, bool) {
	rc, err := c.exec.InboxGet(r.Context(), k)
	if err != nil {
		c.fail(w, r, "error reading the receipt", err)
		return nil, false
	}
	if rc == nil {
		c.problem(w, r, http.StatusNotFound, "There is no such receipt.")
		return nil, false
	}
	return rc, true
}

type messageRow struct {
	*hookinboxtype.OutboxMessage
	URL       string
	LastError string
}

type attemptRow struct {
	*driver.Attempt
	Error string
}

// requestView is a receipt's request record as the event page shows it.
type requestView struct {
	Method, Path, RemoteAddr string
	ContentLength            int64
	SecretSlot               *int
	Headers                  [][2]string
}

type eventData struct {
	Receipt   *hookinboxtype.Receipt
	Detail    *driver.ReceiptDetail
	Request   *requestView
	LastError string
	Payload   string
	Size      int
	Attempts  []attemptRow
	Messages  []messageRow
	Retryable bool
}

func (c *Console) event(w http.ResponseWriter, r *http.Request) {
	k, err := c.keyFrom(r.URL.Query())
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	rc, ok := c.receipt(w, r, k)
	if !ok {
		return
	}
	detail, err := c.db.ConsoleReceiptDetail(r.Context(), k)
	if err != nil {
		c.fail(w, r, "error reading the receipt", err)
		return
	}
	attempts, err := c.db.ConsoleAttempts(r.Context(), k, 100)
	if err != nil {
		c.fail(w, r, "error reading the attempts", err)
		return
	}
	msgs, err := c.db.ConsoleOutbox(r.Context(), &driver.OutboxFilter{Source: &k}, pageSize)
	if err != nil {
		c.fail(w, r, "error reading the outbox", err)
		return
	}
	payloads := [][]byte{rc.Payload}
	for _, m := range msgs {
		payloads = append(payloads, m.Payload)
	}
	t := c.redact.texts(payloads...)
	d := &eventData{
		Receipt: rc, Detail: detail, LastError: t.text(rc.LastError), Payload: c.redact.payload(rc.Payload, t),
		Size: len(rc.Payload), Retryable: slices.Contains(actionable, rc.State),
	}
	if detail != nil {
		d.Request = c.requestView(detail.Request, t)
	}
	for _, a := range attempts {
		d.Attempts = append(d.Attempts, attemptRow{Attempt: a, Error: t.text(a.Error)})
	}
	for _, m := range msgs {
		d.Messages = append(d.Messages, messageRow{OutboxMessage: m, URL: c.messageURL(m.ID), LastError: t.text(m.LastError)})
	}
	c.render(w, r, http.StatusOK, "event", d)
}

// requestView decodes a request record for the page, redacting the headers that
// Config.Redact names and the values it hides.
func (c *Console) requestView(record json.RawMessage, t *textRedactor) *requestView {
	if len(record) == 0 {
		return nil
	}
	var rec hookinboxtype.RequestRecord
	if json.Unmarshal(record, &rec) != nil {
		return nil
	}
	v := &requestView{Method: rec.Method, Path: rec.Path, RemoteAddr: rec.RemoteAddr, ContentLength: rec.ContentLength, SecretSlot: rec.SecretSlot}
	for _, name := range slices.Sorted(maps.Keys(rec.Headers)) {
		for _, value := range rec.Headers[name] {
			if c.redact.key(name) {
				value = redacted
			}
			v.Headers = append(v.Headers, [2]string{name, t.text(value)})
		}
	}
	return v
}

type outboxData struct {
	Filter       *driver.OutboxFilter
	Destination  string // the filter's, as the form holds it
	Fingerprint  string // the filter's, as shown
	FP           string
	Since        string
	Until        string
	States       []hookinboxtype.State
	Endpoints    []Endpoint
	Rows         []messageRow
	NextURL      string
	NewerURL     string
	RetryURL     string
	ResolveURL   string
	RedeliverURL string
}

func (c *Console) outbox(w http.ResponseWriter, r *http.Request) {
	f, err := c.outboxFilter(r.URL.Query())
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	msgs, err := c.db.ConsoleOutbox(r.Context(), f, pageSize)
	if err != nil {
		c.fail(w, r, "error listing the outbox", err)
		return
	}
	d := &outboxData{Filter: f, States: outboxStates, Endpoints: c.cfg.Endpoints, FP: r.URL.Query().Get("fp")}
	if f.Destination != nil {
		d.Destination = destinationParam(*f.Destination)
	}
	if !f.Since.IsZero() {
		d.Since = f.Since.UTC().Format("2006-01-02T15:04")
	}
	if !f.Until.IsZero() {
		d.Until = f.Until.UTC().Format("2006-01-02T15:04")
	}
	var payloads [][]byte
	for _, m := range msgs {
		d.Rows = append(d.Rows, messageRow{OutboxMessage: m, URL: c.messageURL(m.ID), LastError: c.redact.texts(m.Payload).text(m.LastError)})
		payloads = append(payloads, m.Payload)
	}
	d.Fingerprint = c.redact.texts(payloads...).text(f.Fingerprint)
	q := c.outboxQuery(f)
	if len(msgs) > 0 {
		page := func(k string, id int64) string {
			pq := c.outboxQuery(f)
			pq.Set(k, strconv.FormatInt(id, 10))
			return c.cfg.Path + "/outbox?" + pq.Encode()
		}
		if len(msgs) == pageSize || f.AfterID > 0 {
			d.NextURL = page("before", msgs[len(msgs)-1].ID)
		}
		if f.BeforeID > 0 || (f.AfterID > 0 && len(msgs) == pageSize) {
			d.NewerURL = page("after", msgs[0].ID)
		}
	}
	switch f.State {
	case hookinboxtype.StatePending, hookinboxtype.StateNeedsReview:
		q.Set("action", driver.ActionRetryOutbox)
		d.RetryURL = c.cfg.Path + "/outbox/confirm?" + q.Encode()
		q.Set("action", driver.ActionResolveOutbox)
		d.ResolveURL = c.cfg.Path + "/outbox/confirm?" + q.Encode()
	case hookinboxtype.StatePublished:
		q.Set("action", driver.ActionRedeliver)
		d.RedeliverURL = c.cfg.Path + "/outbox/confirm?" + q.Encode()
	}
	c.render(w, r, http.StatusOK, "outbox", d)
}

// messageWithTexts reads an outbox message and the redactor of the texts shown with
// it: the values its payload and its source receipt's payload hide. It answers the
// request itself (404, 503) when it cannot.
func (c *Console) messageWithTexts(w http.ResponseWriter, r *http.Request, id int64) (*hookinboxtype.OutboxMessage, *textRedactor, bool) {
	m, err := c.db.ConsoleOutboxGet(r.Context(), id)
	if err != nil {
		c.fail(w, r, "error reading the outbox message", err)
		return nil, nil, false
	}
	if m == nil {
		c.problem(w, r, http.StatusNotFound, "There is no such outbox message.")
		return nil, nil, false
	}
	payloads := [][]byte{m.Payload}
	if c.redact.on() {
		src, err := c.exec.InboxGet(r.Context(), m.Source)
		if err != nil {
			c.fail(w, r, "error reading the source receipt", err)
			return nil, nil, false
		}
		if src != nil {
			payloads = append(payloads, src.Payload)
		}
	}
	return m, c.redact.texts(payloads...), true
}

type deliveryRow struct {
	*driver.Delivery
	Error string
}

type messageData struct {
	Message       *hookinboxtype.OutboxMessage
	LastError     string
	Deliveries    []deliveryRow
	Payload       string
	Size          int
	SourceURL     string
	Retryable     bool
	Redeliverable bool
}

func (c *Console) message(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, "id: not an outbox id.")
		return
	}
	m, t, ok := c.messageWithTexts(w, r, id)
	if !ok {
		return
	}
	deliveries, err := c.db.ConsoleDeliveries(r.Context(), id, 100)
	if err != nil {
		c.fail(w, r, "error reading the deliveries", err)
		return
	}
	d := &messageData{
		Message: m, LastError: t.text(m.LastError), Payload: c.redact.payload(m.Payload, t), Size: len(m.Payload),
		SourceURL: c.eventURL(m.Source), Retryable: slices.Contains(actionable, m.State),
		Redeliverable: m.State == hookinboxtype.StatePublished,
	}
	for _, dl := range deliveries {
		d.Deliveries = append(d.Deliveries, deliveryRow{Delivery: dl, Error: t.text(dl.Error)})
	}
	c.render(w, r, http.StatusOK, "message", d)
}

type auditData struct {
	Entries  []*driver.AuditEntry
	NextURL  string
	NewerURL string
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request) {
	var page driver.IDPage
	q := r.URL.Query()
	for k, dst := range map[string]*int64{"before": &page.BeforeID, "after": &page.AfterID} {
		if s := q.Get(k); s != "" {
			var err error
			if *dst, err = strconv.ParseInt(s, 10, 64); err != nil || *dst < 1 {
				c.problem(w, r, http.StatusBadRequest, k+": not an entry's id.")
				return
			}
		}
	}
	list, err := c.db.ConsoleAudit(r.Context(), page, pageSize)
	if err != nil {
		c.fail(w, r, "error reading the audit log", err)
		return
	}
	d := &auditData{Entries: list}
	if len(list) > 0 {
		if len(list) == pageSize || page.AfterID > 0 {
			d.NextURL = c.cfg.Path + "/audit?before=" + strconv.FormatInt(list[len(list)-1].ID, 10)
		}
		if page.BeforeID > 0 || (page.AfterID > 0 && len(list) == pageSize) {
			d.NewerURL = c.cfg.Path + "/audit?after=" + strconv.FormatInt(list[0].ID, 10)
		}
	}
	c.render(w, r, http.StatusOK, "audit", d)
}
