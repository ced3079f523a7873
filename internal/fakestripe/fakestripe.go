// Package fakestripe is a small in-memory Stripe API for tests: the list endpoints a
// backfill and a reconcile page through (GET /v1/events, GET /v1/invoices) and
// GET /v1/invoices/{id}, with Stripe's pagination (limit, starting_after, newest
// first), its created and type filters, and injected 429s. stripe-mock checks the
// request shapes against Stripe's OpenAPI spec but always answers the same fixture;
// this fake holds a data set of the test's choosing, with the gaps a test plants.
package fakestripe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Invoice is the part of an invoice the fake serves.
type Invoice struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	Customer   string `json:"customer"`
	Status     string `json:"status"`
	AmountPaid int64  `json:"amount_paid"`
	Currency   string `json:"currency"`
	Created    int64  `json:"created"`
}

// Event is an event the fake lists.
type Event struct {
	ID      string
	Type    string
	Created int64
	Object  any
}

// Request is a list request the fake received.
type Request struct {
	Path          string
	StartingAfter string
	Status        int
}

// Server is the fake API.
type Server struct {
	URL string

	mu       sync.Mutex
	events   []Event // newest first
	invoices map[string]Invoice
	requests []Request
	// limited is how many of the next requests are answered 429.
	limited    int
	retryAfter string
}

// New starts a fake with no data, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{invoices: map[string]Invoice{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// AddEvent adds an event; events are listed by created, newest first.
func (s *Server) AddEvent(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	slices.SortStableFunc(s.events, func(a, b Event) int { return int(b.Created - a.Created) })
}

// SetInvoice sets an invoice's current state.
func (s *Server) SetInvoice(inv Invoice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv.Object = "invoice"
	s.invoices[inv.ID] = inv
}

// Limit answers the next n requests 429 with the Retry-After header retryAfter ("" for
// none).
func (s *Server) Limit(n int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited, s.retryAfter = n, retryAfter
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// EventJSON is ev as Stripe renders an event.
func EventJSON(ev Event) map[string]any {
	return map[string]any{
		"id": ev.ID, "object": "event", "type": ev.Type, "created": ev.Created,
		"api_version": "2025-07-30.basil", "livemode": false, "pending_webhooks": 0,
		"data": map[string]any{"object": ev.Object},
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	req := Request{Path: r.URL.Path, StartingAfter: q.Get("starting_after"), Status: http.StatusOK}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer sk_") {
		req.Status = http.StatusUnauthorized
		s.requests = append(s.requests, req)
		writeError(w, req.Status, "invalid_request_error", "Invalid API Key provided")
		return
	}
	if s.limited > 0 {
		s.limited--
		req.Status = http.StatusTooManyRequests
		s.requests = append(s.requests, req)
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		writeError(w, req.Status, "rate_limit_error", "Too many requests")
		return
	}
	s.requests = append(s.requests, req)
	switch {
	case r.URL.Path == "/v1/events":
		var items []any
		for _, ev := range s.events {
			if matchType(q, ev.Type) && matchCreated(q, ev.Created) {
				items = append(items, EventJSON(ev))
			}
		}
		writeList(w, q, r.URL.Path, items, eventID)
	case r.URL.Path == "/v1/invoices":
		var items []any
		for _, inv := range s.sortedInvoices() {
			if matchCreated(q, inv.Created) {
				items = append(items, inv)
			}
		}
		writeList(w, q, r.URL.Path, items, func(v any) string { return v.(Invoice).ID })
	case strings.HasPrefix(r.URL.Path, "/v1/invoices/"):
		inv, ok := s.invoices[strings.TrimPrefix(r.URL.Path, "/v1/invoices/")]
		if !ok {
			writeError(w, http.StatusNotFound, "invalid_request_error", "No such invoice")
			return
		}
		writeJSON(w, http.StatusOK, inv)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "Unrecognized request URL")
	}
}

func (s *Server) sortedInvoices() []Invoice {
	list := make([]Invoice, 0, len(s.invoices))
	for _, inv := range s.invoices {
		list = append(list, inv)
	}
	slices.SortFunc(list, func(a, b Invoice) int {
		if a.Created != b.Created {
			return int(b.Created - a.Created)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return list
}

func eventID(v any) string { return v.(map[string]any)["id"].(string) }

func matchType(q map[string][]string, typ string) bool {
	var want []string
	for k, v := range q {
		if k == "type" || strings.HasPrefix(k, "types[") {
			want = append(want, v...)
		}
	}
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if w == typ || strings.HasSuffix(w, ".*") && strings.HasPrefix(typ, strings.TrimSuffix(w, "*")) {
			return true
		}
	}
	return false
}

func matchCreated(q map[string][]string, created int64) bool {
	if v := first(q, "created[gte]"); v != "" {
		gte, _ := strconv.ParseInt(v, 10, 64)
		return created >= gte
	}
	return true
}

func first(q map[string][]string, k string) string {
	if v := q[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func writeList(w http.ResponseWriter, q map[string][]string, url string, items []any, id func(any) string) {
	limit := 10
	if v := first(q, "limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	start := 0
	if after := first(q, "starting_after"); after != "" {
		start = len(items)
		for i, it := range items {
			if id(it) == after {
				start = i + 1
				break
			}
		}
	}
	end := min(start+limit, len(items))
	page := items[start:end]
	if page == nil {
		page = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "url": url, "has_more": end < len(items), "data": page})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"type": typ, "message": fmt.Sprint(msg)}})
}
