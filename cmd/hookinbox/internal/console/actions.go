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

// maxNote bounds a resolution note.
const maxNote = 2000

func (c *Console) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form cannot be read", http.StatusBadRequest)
		return false
	}
	return true
}

// note reads an action's note: bounded, and required to resolve (the note is what is
// kept of why nothing was processed). It answers 400 itself when the note is refused.
func note(w http.ResponseWriter, r *http.Request, action string) (string, bool) {
	n := strings.TrimSpace(r.PostForm.Get("note"))
	switch {
	case len(n) > maxNote:
		http.Error(w, fmt.Sprintf("note: longer than %d bytes", maxNote), http.StatusBadRequest)
		return "", false
	case action == driver.ActionResolve && n == "":
		http.Error(w, "note: say why nothing is to be processed", http.StatusBadRequest)
		return "", false
	}
	return n, true
}

// apply carries out an action and logs it; the audit entry is written by the same
// transaction.
func (c *Console) apply(w http.ResponseWriter, r *http.Request, a *driver.ConsoleAction) (int, bool) {
	a.Actor = sessionFrom(r.Context()).name
	n, err := c.db.ConsoleApply(r.Context(), a)
	if err != nil {
		c.fail(w, r, "error applying the action", err)
		return 0, false
	}
	c.cfg.Logger.Info("hookinbox console: action", "actor", a.Actor, "action", a.Action, "target", a.Target, "rows", n)
	if n > 0 && a.Action != driver.ActionResolve && c.cfg.RetriedFunc != nil {
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
	k, err := keyFrom(r.PostForm)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, ok := note(w, r, action)
	if !ok {
		return
	}
	if _, ok := c.apply(w, r, &driver.ConsoleAction{Action: action, Target: eventTarget(k), Note: n, Key: &k}); !ok {
		return
	}
	http.Redirect(w, r, c.eventURL(k), http.StatusSeeOther)
}

func (c *Console) retryMessage(w http.ResponseWriter, r *http.Request) {
	if !c.parseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PostForm.Get("id"), 10, 64)
	if err != nil || id <= 0 {
		http.Error(w, "id: not an outbox id", http.StatusBadRequest)
		return
	}
	a := &driver.ConsoleAction{Action: driver.ActionRetryOutbox, Target: "outbox " + strconv.FormatInt(id, 10), OutboxID: id}
	if _, ok := c.apply(w, r, a); !ok {
		return
	}
	http.Redirect(w, r, c.messageURL(id), http.StatusSeeOther)
}

type confirmData struct {
	Action      string
	Description string
	Count       int
	More        bool
	Max         int
	Fields      url.Values
	BackURL     string
}

// bulkFilter reads a bulk action's filter: it must start from a state an action
// applies to, and name no exact event.
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
		return "", nil, fmt.Errorf("state: a bulk action needs state %s or %s", hookinboxtype.StateNeedsReview, hookinboxtype.StatePending)
	}
	if f.EventID != "" || f.After != nil {
		return "", nil, fmt.Errorf("a bulk action takes a filter, not an event id or a cursor")
	}
	return action, f, nil
}

// confirm shows how many rows an action will change (up to MaxBulk), and the form
// that carries out exactly that.
func (c *Console) confirm(w http.ResponseWriter, r *http.Request) {
	if sessionFrom(r.Context()).readOnly {
		http.Error(w, "read-only session: actions are refused", http.StatusForbidden)
		return
	}
	action, f, err := c.bulkFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, err := c.db.ConsoleCountReceipts(r.Context(), f, c.cfg.MaxBulk+1)
	if err != nil {
		c.fail(w, r, "error counting receipts", err)
		return
	}
	fields := filterQuery(f)
	fields.Set("action", action)
	d := &confirmData{
		Action: action, Description: describe(f), Count: min(n, c.cfg.MaxBulk), More: n > c.cfg.MaxBulk,
		Max: c.cfg.MaxBulk, Fields: fields, BackURL: c.cfg.Path + "/events?" + filterQuery(f).Encode(),
	}
	fields.Set("expect", strconv.Itoa(d.Count))
	c.render(w, r, http.StatusOK, "confirm", d)
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
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	expect, err := strconv.Atoi(r.PostForm.Get("expect"))
	if err != nil || expect < 1 || expect > c.cfg.MaxBulk {
		http.Error(w, fmt.Sprintf("expect: the confirmed count, 1 to %d", c.cfg.MaxBulk), http.StatusBadRequest)
		return
	}
	n, ok := note(w, r, action)
	if !ok {
		return
	}
	a := &driver.ConsoleAction{
		Action: action, Target: fmt.Sprintf("%d confirmed of %s", expect, describe(f)), Note: n,
		Filter: f, Limit: expect, FromStates: []hookinboxtype.State{f.State},
	}
	if _, ok := c.apply(w, r, a); !ok {
		return
	}
	http.Redirect(w, r, c.cfg.Path+"/audit", http.StatusSeeOther)
}
