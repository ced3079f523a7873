package console

import (
	"fmt"
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

type overviewData struct {
	Window    string
	Endpoints []*driver.EndpointSummary
	Chart     *chart
}

// windows are the overview's chart spans: the bucket and how many.
var windows = map[string]struct {
	bucket time.Duration
	n      int
}{
	"hour": {time.Minute, 60},
	"day":  {30 * time.Minute, 48},
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	window := r.URL.Query().Get("window")
	if window == "" {
		window = "hour"
	}
	win, ok := windows[window]
	if !ok {
		http.Error(w, "window: want hour or day", http.StatusBadRequest)
		return
	}
	since := time.Now().Truncate(win.bucket).Add(-time.Duration(win.n-1) * win.bucket)
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
	slices.SortFunc(list, func(a, b *driver.EndpointSummary) int {
		if a.Endpoint < b.Endpoint {
			return -1
		}
		if a.Endpoint > b.Endpoint {
			return 1
		}
		return 0
	})
	points, err := c.db.ConsoleSeries(r.Context(), since, win.bucket)
	if err != nil {
		c.fail(w, r, "error reading the chart", err)
		return
	}
	c.render(w, r, http.StatusOK, "overview", &overviewData{Window: window, Endpoints: list, Chart: newChart(points, win.bucket)})
}

type reviewRow struct {
	*driver.ReviewGroup
	ListURL, RetryURL, ResolveURL string
}

func (c *Console) review(w http.ResponseWriter, r *http.Request) {
	groups, err := c.db.ConsoleReviewGroups(r.Context(), 200)
	if err != nil {
		c.fail(w, r, "error grouping receipts for review", err)
		return
	}
	rows := make([]reviewRow, len(groups))
	for i, g := range groups {
		q := url.Values{"endpoint": {g.Endpoint}, "fingerprint": {g.Fingerprint}, "state": {string(hookinboxtype.StateNeedsReview)}}
		rows[i] = reviewRow{ReviewGroup: g, ListURL: c.cfg.Path + "/events?" + q.Encode()}
		q.Set("action", driver.ActionRetry)
		rows[i].RetryURL = c.cfg.Path + "/confirm?" + q.Encode()
		q.Set("action", driver.ActionResolve)
		rows[i].ResolveURL = c.cfg.Path + "/confirm?" + q.Encode()
	}
	c.render(w, r, http.StatusOK, "review", rows)
}

type receiptRow struct {
	*hookinboxtype.Receipt
	URL string
}

type eventsData struct {
	Filter     *driver.ReceiptFilter
	Since      string
	Until      string
	Endpoints  []Endpoint
	States     []hookinboxtype.State
	Rows       []receiptRow
	NextURL    string
	RetryURL   string
	ResolveURL string
}

func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	f, err := c.receiptFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	list, err := c.db.ConsoleReceipts(r.Context(), f, pageSize)
	if err != nil {
		c.fail(w, r, "error listing receipts", err)
		return
	}
	d := &eventsData{Filter: f, Endpoints: c.cfg.Endpoints, States: states}
	if !f.Since.IsZero() {
		d.Since = f.Since.UTC().Format("2006-01-02T15:04")
	}
	if !f.Until.IsZero() {
		d.Until = f.Until.UTC().Format("2006-01-02T15:04")
	}
	for _, rc := range list {
		d.Rows = append(d.Rows, receiptRow{Receipt: rc, URL: c.eventURL(rc.Key)})
	}
	q := filterQuery(f)
	if len(list) == pageSize && f.EventID == "" {
		last := list[len(list)-1]
		q.Set("after_t", last.ReceivedAt.UTC().Format(time.RFC3339Nano))
		q.Set("after_p", last.Provider)
		q.Set("after_e", last.Endpoint)
		q.Set("after_id", last.EventID)
		d.NextURL = c.cfg.Path + "/events?" + q.Encode()
		for _, k := range []string{"after_t", "after_p", "after_e", "after_id"} {
			q.Del(k)
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

type messageRow struct {
	*hookinboxtype.OutboxMessage
	URL string
}

type eventData struct {
	Receipt   *hookinboxtype.Receipt
	Payload   string
	Size      int
	Attempts  []*driver.Attempt
	Messages  []messageRow
	Retryable bool
}

func keyFrom(q url.Values) (hookinboxtype.Key, error) {
	k := hookinboxtype.Key{Provider: q.Get("provider"), Endpoint: q.Get("endpoint"), EventID: q.Get("id")}
	if k.Provider == "" || k.Endpoint == "" || k.EventID == "" {
		return k, fmt.Errorf("provider, endpoint and id are required")
	}
	return k, nil
}

func (c *Console) event(w http.ResponseWriter, r *http.Request) {
	k, err := keyFrom(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc, err := c.exec.InboxGet(r.Context(), k)
	if err != nil {
		c.fail(w, r, "error reading the receipt", err)
		return
	}
	if rc == nil {
		http.Error(w, "no such receipt", http.StatusNotFound)
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
	d := &eventData{
		Receipt: rc, Payload: prettyPayload(rc.Payload, c.cfg.Redact), Size: len(rc.Payload), Attempts: attempts,
		Retryable: slices.Contains(actionable, rc.State),
	}
	for _, m := range msgs {
		d.Messages = append(d.Messages, messageRow{OutboxMessage: m, URL: c.messageURL(m.ID)})
	}
	c.render(w, r, http.StatusOK, "event", d)
}

func (c *Console) messageURL(id int64) string {
	return c.cfg.Path + "/outbox/message?id=" + strconv.FormatInt(id, 10)
}

type outboxData struct {
	State   hookinboxtype.State
	States  []hookinboxtype.State
	Rows    []messageRow
	NextURL string
}

func (c *Console) outbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := hookinboxtype.State(q.Get("state"))
	if state != "" && !slices.Contains([]hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview, hookinboxtype.StatePublished, hookinboxtype.StateDiscarded}, state) {
		http.Error(w, "state: not an outbox state", http.StatusBadRequest)
		return
	}
	var before int64
	if s := q.Get("before"); s != "" {
		var err error
		if before, err = strconv.ParseInt(s, 10, 64); err != nil {
			http.Error(w, "before: not an id", http.StatusBadRequest)
			return
		}
	}
	msgs, err := c.db.ConsoleOutbox(r.Context(), &driver.OutboxFilter{State: state, BeforeID: before}, pageSize)
	if err != nil {
		c.fail(w, r, "error listing the outbox", err)
		return
	}
	d := &outboxData{State: state, States: []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview, hookinboxtype.StatePublished, hookinboxtype.StateDiscarded}}
	for _, m := range msgs {
		d.Rows = append(d.Rows, messageRow{OutboxMessage: m, URL: c.messageURL(m.ID)})
	}
	if len(msgs) == pageSize {
		nq := url.Values{"before": {strconv.FormatInt(msgs[len(msgs)-1].ID, 10)}}
		if state != "" {
			nq.Set("state", string(state))
		}
		d.NextURL = c.cfg.Path + "/outbox?" + nq.Encode()
	}
	c.render(w, r, http.StatusOK, "outbox", d)
}

type messageData struct {
	Message    *hookinboxtype.OutboxMessage
	Deliveries []*driver.Delivery
	Payload    string
	Size       int
	SourceURL  string
	Retryable  bool
}

func (c *Console) message(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		http.Error(w, "id: not an outbox id", http.StatusBadRequest)
		return
	}
	m, err := c.db.ConsoleOutboxGet(r.Context(), id)
	if err != nil {
		c.fail(w, r, "error reading the outbox message", err)
		return
	}
	if m == nil {
		http.Error(w, "no such outbox message", http.StatusNotFound)
		return
	}
	deliveries, err := c.db.ConsoleDeliveries(r.Context(), id, 100)
	if err != nil {
		c.fail(w, r, "error reading the deliveries", err)
		return
	}
	c.render(w, r, http.StatusOK, "message", &messageData{
		Message: m, Deliveries: deliveries, Payload: prettyPayload(m.Payload, c.cfg.Redact), Size: len(m.Payload),
		SourceURL: c.eventURL(m.Source), Retryable: slices.Contains(actionable, m.State),
	})
}

type auditData struct {
	Entries []*driver.AuditEntry
	NextURL string
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request) {
	var before int64
	if s := r.URL.Query().Get("before"); s != "" {
		var err error
		if before, err = strconv.ParseInt(s, 10, 64); err != nil {
			http.Error(w, "before: not an id", http.StatusBadRequest)
			return
		}
	}
	list, err := c.db.ConsoleAudit(r.Context(), driver.IDPage{BeforeID: before}, pageSize)
	if err != nil {
		c.fail(w, r, "error reading the audit log", err)
		return
	}
	d := &auditData{Entries: list}
	if len(list) == pageSize {
		d.NextURL = c.cfg.Path + "/audit?before=" + strconv.FormatInt(list[len(list)-1].ID, 10)
	}
	c.render(w, r, http.StatusOK, "audit", d)
}
