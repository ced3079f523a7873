package chaos

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Sink is the recording HTTP receiver of the outbox: forwarded events and billing's
// notifications. It records every request it accepts with its idempotency key, so
// that a message delivered twice under the same key (allowed: at least once) can be
// told from an event forwarded twice under different keys (an event processed twice).
//
// It fails a share of deliveries (503, nothing recorded as delivered) and answers a
// share only after the dispatcher's delivery timeout (recorded: the receiver got it,
// the dispatcher does not know), so the outbox's retries are exercised too.
type Sink struct {
	FailRate float64
	SlowRate float64
	// SlowFor is how long a slow answer takes; longer than outbox.delivery_timeout.
	SlowFor time.Duration

	mu         sync.Mutex
	deliveries []SinkDelivery
	failed     int
}

// SinkDelivery is one request the sink accepted.
type SinkDelivery struct {
	Path           string
	IdempotencyKey string
	SourceEndpoint string
	SourceEventID  string
	EventType      string
	AggregateID    string
	// Invoice is the invoice the payload is about.
	Invoice string
}

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if rand.Float64() < s.FailRate {
		s.mu.Lock()
		s.failed++
		s.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var payload struct {
		InvoiceID string `json:"invoice_id"`
		Data      struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &payload)
	d := SinkDelivery{
		Path:           r.URL.Path,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		SourceEndpoint: r.Header.Get("Hookinbox-Source-Endpoint"),
		SourceEventID:  r.Header.Get("Hookinbox-Source-Event-Id"),
		EventType:      r.Header.Get("Hookinbox-Event-Type"),
		AggregateID:    r.Header.Get("Hookinbox-Aggregate-Id"),
		Invoice:        payload.InvoiceID,
	}
	if d.Invoice == "" {
		d.Invoice = payload.Data.Object.ID
	}
	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	s.mu.Unlock()
	if rand.Float64() < s.SlowRate {
		time.Sleep(s.SlowFor)
	}
	w.WriteHeader(http.StatusNoContent)
}

// Deliveries returns a copy of what the sink accepted.
func (s *Sink) Deliveries() []SinkDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SinkDelivery(nil), s.deliveries...)
}

// Failed returns how many deliveries the sink failed on purpose.
func (s *Sink) Failed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
