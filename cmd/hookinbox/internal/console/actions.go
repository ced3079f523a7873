package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// maxForm bounds an action's form.
const maxForm = 16 << 10

// maxNote bounds a note.
const maxNote = 2000

// parseForm reads an action's form, answering 400 itself to one that cannot be read
// or holds text no page sends.
func (c *Console) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	err := r.ParseForm()
	if err == nil {
		err = checkText(r.PostForm)
	}
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, "The form cannot be read: "+err.Error()+".")
		return false
	}
	return true
}

// note reads an action's note: bounded, and required when the action leaves rows
// unprocessed for good (the note is what is kept of why). It answers 400 itself when
// the note is refused.
func (c *Console) note(w http.ResponseWriter, r *http.Request, required bool) (string, bool) {
	n := strings.TrimSpace(r.PostForm.Get("note"))
	switch {
	case len(n) > maxNote:
		c.problem(w, r, http.StatusBadRequest, fmt.Sprintf("The note is longer than %d bytes.", maxNote))
		return "", false
	case required && n == "":
		c.problem(w, r, http.StatusBadRequest, "A note is required: say why nothing is to be processed or delivered.")
		return "", false
	}
	return n, true
}

// apply carries out an action and logs it; the audit entry is written by the same
// transaction, with the target and note as t leaves them (a note may quote what the
// console redacts). wake says whether the action makes rows available to the workers
// or the dispatcher.
func (c *Console) apply(w http.ResponseWriter, r *http.Request, a *driver.ConsoleAction, t *textRedactor, wake bool) (int, bool) {
	a.Actor = sessionFrom(r.Context()).name
	a.Target, a.Note = t.text(a.Target), t.text(a.Note)
	n, err := c.db.ConsoleApply(r.Context(), a)
	if err != nil {
		c.fail(w, r, "error applying the action", err)
		return 0, false
	}
	c.cfg.Logger.Info("hookinbox console: action", "actor", a.Actor, "action", a.Action, "target", a.Target, "rows", n)
	if n > 0 && wake && c.cfg.RetriedFunc != nil {
		c.cfg.RetriedFunc()
	}
	return n, true
}

func eventTarget(k hookinboxtype.Key) string {
	return "event " + k.Provider + "/" + k.Endpoint + "/" + k.EventID
}

func (c *Console) retryEvent(w http.ResponseWriter, r *http.Request) {
	c.eventAction(w, r, driver.ActionRetry)
}

func (c *Console) resolveEvent(w http.ResponseWriter, r *http.Request) {
	c.eventAction(w, r, driver.ActionResolve)
}

func (c *Console) eventAction(w http.ResponseWriter, r *http.Request, action string) {
	if !c.parseForm(w, r) {
		return
	}
	k, err := c.keyFrom(r.PostForm)
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	n, ok := c.note(w, r, action == driver.ActionResolve)
	if !ok {
		return
	}
	rc, err := c.exec.InboxGet(r.Context(), k)
	if err != nil {
		c.fail(w, r, "error reading the receipt", err)
		return
	}
	if rc == nil {
		c.problem(w, r, http.StatusNotFound, "There is no such receipt.")
		return
	}
	a := &driver.ConsoleAction{Action: action, Target: eventTarget(k), Note: n, Key: &k}
	if _, ok := c.apply(w, r, a, c.redact.texts(rc.Payload), action == driver.ActionRetry); !ok {
		return
	}
	http.Redirect(w, r, c.eventURL(k), http.StatusSeeOther)
}

// messageAction retries, resolves or redelivers one outbox message.
func (c *Console) messageAction(w http.ResponseWriter, r *http.Request, action string) {
	if !c.parseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PostForm.Get("id"), 10, 64)
	if err != nil || id <= 0 {
		c.problem(w, r, http.StatusBadRequest, "id: not an outbox id.")
		return
	}
	n, ok := c.note(w, r, action == driver.ActionResolveOutbox)
	if !ok {
		return
	}
	m, t, ok := c.messageWithTexts(w, r, id)
	if !ok {
		return
	}
	a := &driver.ConsoleAction{Action: action, Target: "outbox " + strconv.FormatInt(m.ID, 10), Note: n, OutboxID: m.ID}
	if _, ok := c.apply(w, r, a, t, action != driver.ActionResolveOutbox); !ok {
		return
	}
	http.Redirect(w, r, c.messageURL(id), http.StatusSeeOther)
}

func (c *Console) retryMessage(w http.ResponseWriter, r *http.Request) {
	c.messageAction(w, r, driver.ActionRetryOutbox)
}

func (c *Console) resolveMessage(w http.ResponseWriter, r *http.Request) {
	c.messageAction(w, r, driver.ActionResolveOutbox)
}

func (c *Console) redeliverMessage(w http.ResponseWriter, r *http.Request) {
	c.messageAction(w, r, driver.ActionRedeliver)
}

// pauseEndpoint and resumeEndpoint store an endpoint's state for every process; a
// resume wakes this process's workers and dispatcher.
func (c *Console) pauseEndpoint(w http.ResponseWriter, r *http.Request) {
	c.endpointAction(w, r, driver.ActionPause)
}

func (c *Console) resumeEndpoint(w http.ResponseWriter, r *http.Request) {
	c.endpointAction(w, r, driver.ActionResume)
}

func (c *Console) endpointAction(w http.ResponseWriter, r *http.Request, action string) {
	if !c.parseForm(w, r) {
		return
	}
	name := r.PostForm.Get("endpoint")
	if name == "" || !c.knownEndpoint(name) {
		c.problem(w, r, http.StatusBadRequest, fmt.Sprintf("endpoint: %q is not a configured endpoint.", name))
		return
	}
	n, ok := c.note(w, r, false)
	if !ok {
		return
	}
	a := &driver.ConsoleAction{Action: action, Target: "endpoint " + name, Note: n, Endpoint: name}
	if _, ok := c.apply(w, r, a, c.redact.texts(), action == driver.ActionResume); !ok {
		return
	}
	http.Redirect(w, r, c.cfg.Path+"/", http.StatusSeeOther)
}

// confirmData is a bulk action's confirmation: what it will change, how many rows
// (up to MaxBulk), and the form that carries out exactly that.
type confirmData struct {
	Action string
	// Verb is the action in words: retry, resolve, redeliver.
	Verb         string
	Noun         string
	Description  string
	Count        int
	More         bool
	Max          int
	Fields       url.Values
	PostURL      string
	BackURL      string
	NoteRequired bool
	// Redeliver warns that published messages are sent again.
	Redeliver bool
}

// bulkFilter reads a bulk action on receipts: a retry or a resolve, from a state an
// action applies to, of a filter (no exact event, no cursor).
func (c *Console) bulkFilter(q url.Values) (string, *driver.ReceiptFilter, error) {
	action := q.Get("action")
	if action != driver.ActionRetry && action != driver.ActionResolve {
		return "", nil, fmt.Errorf("action: want %s or %s", driver.ActionRetry, driver.ActionResolve)
	}
	f, err := c.receiptFilter(q)
	if err != nil {
		return "", nil, err
	}
	if !slices.Contains(actionable, f.State) {
		return "", nil, fmt.Errorf("state: a bulk action needs state %s or %s", hookinboxtype.StatePending, hookinboxtype.StateNeedsReview)
	}
	if f.EventID != "" || f.After != nil || f.Before != nil {
		return "", nil, fmt.Errorf("a bulk action takes a filter, not an event id or a cursor")
	}
	return action, f, nil
}

// receiptSample returns the texts' redactor of a filter's newest receipt: a group's
// members share what their fingerprint quotes.
func (c *Console) receiptSample(w http.ResponseWriter, r *http.Request, f *driver.ReceiptFilter) (*textRedactor, bool) {
	if !c.redact.on() {
		return c.redact.texts(), true
	}
	list, err := c.db.ConsoleReceipts(r.Context(), f, 1)
	if err != nil {
		c.fail(w, r, "error reading the receipts", err)
		return nil, false
	}
	var payloads [][]byte
	for _, rc := range list {
		payloads = append(payloads, rc.Payload)
	}
	return c.redact.texts(payloads...), true
}

func (c *Console) confirm(w http.ResponseWriter, r *http.Request) {
	if sessionFrom(r.Context()).readOnly {
		c.problem(w, r, http.StatusForbidden, "Read-only session: actions are refused.")
		return
	}
	action, f, err := c.bulkFilter(r.URL.Query())
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	n, err := c.db.ConsoleCountReceipts(r.Context(), f, c.cfg.MaxBulk+1)
	if err != nil {
		c.fail(w, r, "error counting receipts", err)
		return
	}
	t, ok := c.receiptSample(w, r, f)
	if !ok {
		return
	}
	fields := c.filterQuery(f)
	fields.Set("action", action)
	d := &confirmData{
		Action: action, Verb: action, Noun: "receipts", Description: describeReceipts(f, t), Count: min(n, c.cfg.MaxBulk),
		More: n > c.cfg.MaxBulk, Max: c.cfg.MaxBulk, Fields: fields, PostURL: c.cfg.Path + "/bulk",
		BackURL: c.cfg.Path + "/events?" + c.filterQuery(f).Encode(), NoteRequired: action == driver.ActionResolve,
	}
	fields.Set("expect", strconv.Itoa(d.Count))
	c.render(w, r, http.StatusOK, "confirm", d)
}

// expect reads the count a bulk action's confirmation showed.
func (c *Console) expect(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PostForm.Get("expect"))
	if err != nil || n < 1 || n > c.cfg.MaxBulk {
		c.problem(w, r, http.StatusBadRequest, fmt.Sprintf("expect: the confirmed count, 1 to %d.", c.cfg.MaxBulk))
		return 0, false
	}
	return n, true
}

// bulk carries out a confirmed action: on at most the rows the confirmation counted,
// and only on those still in the state it showed, so a row that a worker or another
// operator moved in between is left alone. The result says how many changed.
func (c *Console) bulk(w http.ResponseWriter, r *http.Request) {
	if !c.parseForm(w, r) {
		return
	}
	action, f, err := c.bulkFilter(r.PostForm)
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	expect, ok := c.expect(w, r)
	if !ok {
		return
	}
	n, ok := c.note(w, r, action == driver.ActionResolve)
	if !ok {
		return
	}
	t, ok := c.receiptSample(w, r, f)
	if !ok {
		return
	}
	a := &driver.ConsoleAction{
		Action: action, Target: fmt.Sprintf("%d confirmed of %s", expect, describeReceipts(f, t)), Note: n,
		Filter: f, Limit: expect, FromStates: []hookinboxtype.State{f.State},
	}
	if _, ok := c.apply(w, r, a, t, action == driver.ActionRetry); !ok {
		return
	}
	http.Redirect(w, r, c.cfg.Path+"/audit", http.StatusSeeOther)
}

// bulkOutboxFilter reads a bulk action on outbox messages: a retry or a resolve of
// undelivered messages, or a redelivery of published ones, of a filter (no page).
func (c *Console) bulkOutboxFilter(q url.Values) (string, *driver.OutboxFilter, error) {
	action := q.Get("action")
	if action != driver.ActionRetryOutbox && action != driver.ActionResolveOutbox && action != driver.ActionRedeliver {
		return "", nil, fmt.Errorf("action: want %s, %s or %s", driver.ActionRetryOutbox, driver.ActionResolveOutbox, driver.ActionRedeliver)
	}
	f, err := c.outboxFilter(q)
	if err != nil {
		return "", nil, err
	}
	if from := driver.OutboxActionStates(action); !slices.Contains(from, f.State) {
		return "", nil, fmt.Errorf("state: %s takes messages in state %v", action, from)
	}
	if f.BeforeID != 0 || f.AfterID != 0 {
		return "", nil, fmt.Errorf("a bulk action takes a filter, not a page")
	}
	return action, f, nil
}

// outboxSample is receiptSample for outbox messages: the newest one's payload.
func (c *Console) outboxSample(w http.ResponseWriter, r *http.Request, f *driver.OutboxFilter) (*textRedactor, bool) {
	if !c.redact.on() {
		return c.redact.texts(), true
	}
	list, err := c.db.ConsoleOutbox(r.Context(), f, 1)
	if err != nil {
		c.fail(w, r, "error reading the outbox", err)
		return nil, false
	}
	var payloads [][]byte
	for _, m := range list {
		payloads = append(payloads, m.Payload)
	}
	return c.redact.texts(payloads...), true
}

func (c *Console) confirmOutbox(w http.ResponseWriter, r *http.Request) {
	if sessionFrom(r.Context()).readOnly {
		c.problem(w, r, http.StatusForbidden, "Read-only session: actions are refused.")
		return
	}
	action, f, err := c.bulkOutboxFilter(r.URL.Query())
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	n, err := c.db.ConsoleCountOutbox(r.Context(), f, c.cfg.MaxBulk+1)
	if err != nil {
		c.fail(w, r, "error counting outbox messages", err)
		return
	}
	t, ok := c.outboxSample(w, r, f)
	if !ok {
		return
	}
	fields := c.outboxQuery(f)
	fields.Set("action", action)
	d := &confirmData{
		Action: action, Verb: strings.TrimSuffix(action, "_outbox"), Noun: "outbox messages", Description: describeOutbox(f, t), Count: min(n, c.cfg.MaxBulk),
		More: n > c.cfg.MaxBulk, Max: c.cfg.MaxBulk, Fields: fields, PostURL: c.cfg.Path + "/outbox/bulk",
		BackURL: c.cfg.Path + "/outbox?" + c.outboxQuery(f).Encode(), NoteRequired: action == driver.ActionResolveOutbox,
		Redeliver: action == driver.ActionRedeliver,
	}
	fields.Set("expect", strconv.Itoa(d.Count))
	c.render(w, r, http.StatusOK, "confirm", d)
}

func (c *Console) bulkOutbox(w http.ResponseWriter, r *http.Request) {
	if !c.parseForm(w, r) {
		return
	}
	action, f, err := c.bulkOutboxFilter(r.PostForm)
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	expect, ok := c.expect(w, r)
	if !ok {
		return
	}
	n, ok := c.note(w, r, action == driver.ActionResolveOutbox)
	if !ok {
		return
	}
	t, ok := c.outboxSample(w, r, f)
	if !ok {
		return
	}
	a := &driver.ConsoleAction{
		Action: action, Target: fmt.Sprintf("%d confirmed of %s", expect, describeOutbox(f, t)), Note: n,
		OutboxFilter: f, Limit: expect, FromStates: []hookinboxtype.State{f.State},
	}
	if _, ok := c.apply(w, r, a, t, action != driver.ActionResolveOutbox); !ok {
		return
	}
	http.Redirect(w, r, c.cfg.Path+"/audit", http.StatusSeeOther)
}
