package chaos

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Sink is the recording HTTP receiver of the outbox: forwarded events and billing's
// notifications. It records every request it accepts with its idempotency key, so
// that a message delivered twice under the same key (allowed: at least once) can be
// told from an event forwarded twice under different keys (an event processed twice).
//
// It checks fencing as the outbox asks a receiver to: per message (its
// Hookinbox-Outbox-Id), a delivery whose Hookinbox-Fencing-Token is lower than one
// it has already seen comes from a dispatcher whose lease ran out (a zombie), and is
// refused with 409 and counted. Such a delivery is allowed to happen — nothing bounds
// the moment between a dispatcher's last look at its lease and its write to the
// socket — but it must never be the one that publishes the message: Check compares
// the tokens the sink saw with the one the message was published under.
//
// It fails every FailEvery-th delivery it would accept (503, nothing recorded as
// delivered) and answers a share only after the dispatcher's delivery timeout
// (recorded: the receiver got it, the dispatcher does not know), so the outbox's
// retries are exercised too.
type Sink struct {
	// FailEvery makes every FailEvery-th delivery fail, counting from FailOffset; 0
	// fails none. A schedule rather than a rate, so that a run long enough is sure
	// to have its failures.
	FailEvery, FailOffset int
	SlowRate              float64
	// SlowFor is how long a slow answer takes; longer than outbox.delivery_timeout.
	SlowFor time.Duration

	mu         sync.Mutex
	seen       int // deliveries that passed the fencing check
	deliveries []SinkDelivery
	failed     int
	highest    map[int64]int64 // per outbox id, the highest fencing token seen
	stale      []SinkDelivery
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
	// OutboxID and Token are the message and the claim that delivered it.
	OutboxID, Token int64
}

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id, _ := strconv.ParseInt(r.Header.Get("Hookinbox-Outbox-Id"), 10, 64)
	token, _ := strconv.ParseInt(r.Header.Get("Hookinbox-Fencing-Token"), 10, 64)
	s.mu.Lock()
	if s.highest == nil {
		s.highest = map[int64]int64{}
	}
	if token < s.highest[id] {
		s.stale = append(s.stale, SinkDelivery{Path: r.URL.Path, OutboxID: id, Token: token})
		s.mu.Unlock()
		w.WriteHeader(http.StatusConflict)
		return
	}
	s.highest[id] = token
	s.seen++
	fail := s.FailEvery > 0 && s.seen%s.FailEvery == s.FailOffset%s.FailEvery
	if fail {
		s.failed++
	}
	s.mu.Unlock()
	if fail {
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
		OutboxID:       id,
		Token:          token,
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

// Stale returns the deliveries the sink refused for a fencing token lower than one
// it had seen for the same message.
func (s *Sink) Stale() []SinkDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SinkDelivery(nil), s.stale...)
}

// Highest returns, per outbox id, the highest fencing token the sink saw.
func (s *Sink) Highest() map[int64]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[int64]int64, len(s.highest))
	for id, t := range s.highest {
		m[id] = t
	}
	return m
}

// Failed returns how many deliveries the sink failed on purpose.
func (s *Sink) Failed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
