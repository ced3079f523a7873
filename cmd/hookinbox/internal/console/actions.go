package console

import (
	"context"
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
	rc, ok := c.receipt(w, r, k)
	if !ok {
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

// bulkPlan is a bulk action read from a request, on receipts or on outbox messages:
// what its confirmation shows and what carrying it out does.
type bulkPlan struct {
	action, verb, noun string
	// fields are the filter's parameters; postURL carries the action out, backURL is
	// the list it came from.
	fields           url.Values
	postURL, backURL string
	noteRequired     bool
	// wake says whether the action makes rows available to the workers or the
	// dispatcher.
	wake bool
	// count counts the matching rows up to limit; sample reads the newest one's
	// payload; describe says the filter in words with t; change is the action on at
	// most limit rows still in the state shown.
	count    func(ctx context.Context, limit int) (int, error)
	sample   func(ctx context.Context) ([]byte, error)
	describe func(t *textRedactor) string
	change   func(limit int) *driver.ConsoleAction
}

// receiptPlan reads a bulk action on receipts: a retry or a resolve, from a state an
// action applies to, of a filter (no exact event, no cursor).
func (c *Console) receiptPlan(q url.Values) (*bulkPlan, error) {
	action := q.Get("action")
	if action != driver.ActionRetry && action != driver.ActionResolve {
		return nil, fmt.Errorf("action: want %s or %s", driver.ActionRetry, driver.ActionResolve)
	}
	f, err := c.receiptFilter(q)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(actionable, f.State) {
		return nil, fmt.Errorf("state: a bulk action needs state %s or %s", hookinboxtype.StatePending, hookinboxtype.StateNeedsReview)
	}
	if f.EventID != "" || f.After != nil || f.Before != nil {
		return nil, fmt.Errorf("a bulk action takes a filter, not an event id or a cursor")
	}
	return &bulkPlan{
		action: action, verb: action, noun: "receipts", fields: c.filterQuery(f),
		postURL: c.cfg.Path + "/bulk", backURL: c.cfg.Path + "/events?" + c.filterQuery(f).Encode(),
		noteRequired: action == driver.ActionResolve, wake: action == driver.ActionRetry,
		count: func(ctx context.Context, limit int) (int, error) { return c.db.ConsoleCountReceipts(ctx, f, limit) },
		sample: func(ctx context.Context) ([]byte, error) {
			list, err := c.db.ConsoleReceipts(ctx, f, 1)
			if err != nil || len(list) == 0 {
				return nil, err
			}
			return list[0].Payload, nil
		},
		describe: func(t *textRedactor) string { return describeReceipts(f, t) },
		change: func(limit int) *driver.ConsoleAction {
			return &driver.ConsoleAction{Action: action, Filter: f, Limit: limit, FromStates: []hookinboxtype.State{f.State}}
		},
	}, nil
}

// outboxPlan reads a bulk action on outbox messages: a retry or a resolve of
// undelivered messages, or a redelivery of published ones, of a filter (no page).
func (c *Console) outboxPlan(q url.Values) (*bulkPlan, error) {
	action := q.Get("action")
	if action != driver.ActionRetryOutbox && action != driver.ActionResolveOutbox && action != driver.ActionRedeliver {
		return nil, fmt.Errorf("action: want %s, %s or %s", driver.ActionRetryOutbox, driver.ActionResolveOutbox, driver.ActionRedeliver)
	}
	f, err := c.outboxFilter(q)
	if err != nil {
		return nil, err
	}
	if from := driver.OutboxActionStates(action); !slices.Contains(from, f.State) {
		return nil, fmt.Errorf("state: %s takes messages in state %v", action, from)
	}
	if f.BeforeID != 0 || f.AfterID != 0 {
		return nil, fmt.Errorf("a bulk action takes a filter, not a page")
	}
	return &bulkPlan{
		action: action, verb: strings.TrimSuffix(action, "_outbox"), noun: "outbox messages", fields: c.outboxQuery(f),
		postURL: c.cfg.Path + "/outbox/bulk", backURL: c.cfg.Path + "/outbox?" + c.outboxQuery(f).Encode(),
		noteRequired: action == driver.ActionResolveOutbox, wake: action != driver.ActionResolveOutbox,
		count: func(ctx context.Context, limit int) (int, error) { return c.db.ConsoleCountOutbox(ctx, f, limit) },
		sample: func(ctx context.Context) ([]byte, error) {
			list, err := c.db.ConsoleOutbox(ctx, f, 1)
			if err != nil || len(list) == 0 {
				return nil, err
			}
			return list[0].Payload, nil
		},
		describe: func(t *textRedactor) string { return describeOutbox(f, t) },
		change: func(limit int) *driver.ConsoleAction {
			return &driver.ConsoleAction{Action: action, OutboxFilter: f, Limit: limit, FromStates: []hookinboxtype.State{f.State}}
		},
	}, nil
}

// texts returns the redactor of the texts a plan shows and writes: with the payload
// of the filter's newest row, since a group's members share what their fingerprint
// quotes. It answers the request itself when the database fails.
func (c *Console) texts(w http.ResponseWriter, r *http.Request, p *bulkPlan) (*textRedactor, bool) {
	if !c.redact.on() {
		return c.redact.texts(), true
	}
	payload, err := p.sample(r.Context())
	if err != nil {
		c.fail(w, r, "error reading the "+p.noun, err)
		return nil, false
	}
	return c.redact.texts(payload), true
}

func (c *Console) confirm(w http.ResponseWriter, r *http.Request) {
	c.confirmPlan(w, r, c.receiptPlan)
}

func (c *Console) confirmOutbox(w http.ResponseWriter, r *http.Request) {
	c.confirmPlan(w, r, c.outboxPlan)
}

// confirmPlan shows how many rows a bulk action will change (up to MaxBulk), and the
// form that carries out exactly that.
func (c *Console) confirmPlan(w http.ResponseWriter, r *http.Request, read func(url.Values) (*bulkPlan, error)) {
	if sessionFrom(r.Context()).readOnly {
		c.problem(w, r, http.StatusForbidden, "Read-only session: actions are refused.")
		return
	}
	p, err := read(r.URL.Query())
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	n, err := p.count(r.Context(), c.cfg.MaxBulk+1)
	if err != nil {
		c.fail(w, r, "error counting the "+p.noun, err)
		return
	}
	t, ok := c.texts(w, r, p)
	if !ok {
		return
	}
	d := &confirmData{
		Action: p.action, Verb: p.verb, Noun: p.noun, Description: p.describe(t), Count: min(n, c.cfg.MaxBulk),
		More: n > c.cfg.MaxBulk, Max: c.cfg.MaxBulk, Fields: p.fields, PostURL: p.postURL, BackURL: p.backURL,
		NoteRequired: p.noteRequired, Redeliver: p.action == driver.ActionRedeliver,
	}
	p.fields.Set("action", p.action)
	p.fields.Set("expect", strconv.Itoa(d.Count))
	c.render(w, r, http.StatusOK, "confirm", d)
}

func (c *Console) bulk(w http.ResponseWriter, r *http.Request) {
	c.bulkAction(w, r, c.receiptPlan)
}

func (c *Console) bulkOutbox(w http.ResponseWriter, r *http.Request) {
	c.bulkAction(w, r, c.outboxPlan)
}

// bulkAction carries out a confirmed action: on at most the rows the confirmation
// counted, and only on those still in the state it showed, so a row that a worker or
// another operator moved in between is left alone. The audit log says how many
// changed.
func (c *Console) bulkAction(w http.ResponseWriter, r *http.Request, read func(url.Values) (*bulkPlan, error)) {
	if !c.parseForm(w, r) {
		return
	}
	p, err := read(r.PostForm)
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	expect, err := strconv.Atoi(r.PostForm.Get("expect"))
	if err != nil || expect < 1 || expect > c.cfg.MaxBulk {
		c.problem(w, r, http.StatusBadRequest, fmt.Sprintf("expect: the confirmed count, 1 to %d.", c.cfg.MaxBulk))
		return
	}
	n, ok := c.note(w, r, p.noteRequired)
	if !ok {
		return
	}
	t, ok := c.texts(w, r, p)
	if !ok {
		return
	}
	a := p.change(expect)
	a.Target, a.Note = fmt.Sprintf("%d confirmed of %s", expect, p.describe(t)), n
	if _, ok := c.apply(w, r, a, t, p.wake); !ok {
		return
	}
	http.Redirect(w, r, c.cfg.Path+"/audit", http.StatusSeeOther)
}
