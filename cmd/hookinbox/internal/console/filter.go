package console

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// states a list may filter on.
var states = []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview, hookinboxtype.StateProcessed, hookinboxtype.StateDiscarded}

// actionable are the states a bulk action may start from.
var actionable = []hookinboxtype.State{hookinboxtype.StatePending, hookinboxtype.StateNeedsReview}

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

// receiptFilter reads a list's or an action's filter from q, refusing what it does
// not understand.
func (c *Console) receiptFilter(q url.Values) (*driver.ReceiptFilter, error) {
	f := &driver.ReceiptFilter{
		Endpoint: q.Get("endpoint"), Provider: q.Get("provider"), EventType: q.Get("type"),
		State: hookinboxtype.State(q.Get("state")), Fingerprint: q.Get("fingerprint"), EventID: q.Get("id"),
	}
	if f.State != "" && !slices.Contains(states, f.State) {
		return nil, fmt.Errorf("state: %q is not one of %v", f.State, states)
	}
	var err error
	if f.Since, err = parseTime("since", q.Get("since")); err != nil {
		return nil, err
	}
	if f.Until, err = parseTime("until", q.Get("until")); err != nil {
		return nil, err
	}
	if q.Get("after_t") != "" {
		t, err := time.Parse(time.RFC3339Nano, q.Get("after_t"))
		if err != nil {
			return nil, fmt.Errorf("after_t: not a cursor")
		}
		f.After = &driver.Cursor{ReceivedAt: t, Key: hookinboxtype.Key{
			Provider: q.Get("after_p"), Endpoint: q.Get("after_e"), EventID: q.Get("after_id")}}
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
func filterQuery(f *driver.ReceiptFilter) url.Values {
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
	set("fingerprint", f.Fingerprint)
	set("id", f.EventID)
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// describe is a filter in words, for the confirmation page and the audit log.
func describe(f *driver.ReceiptFilter) string {
	q := filterQuery(f)
	if len(q) == 0 {
		return "all receipts"
	}
	s := ""
	for _, k := range []string{"endpoint", "provider", "type", "state", "fingerprint", "since", "until"} {
		if v := q.Get(k); v != "" {
			if s != "" {
				s += " "
			}
			s += fmt.Sprintf("%s=%q", k, v)
		}
	}
	return s
}
