package chaos

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/hookinbox/hookinbox/internal/sign"
)

// Sender delivers a workload like a provider: Concurrency senders take the deliveries
// in their order, each at its time, and retry each one until it is answered 2xx —
// after any other status, a refused connection, a reset or a timeout — with a
// jittered backoff. Every attempt is signed afresh.
type Sender struct {
	// Receivers returns the base URL to send an attempt to ("http://127.0.0.1:15633");
	// with several receivers it picks one, like a load balancer.
	Receivers func() string
	Secret    string
	// Concurrency is the number of senders.
	Concurrency int
	// Timeout bounds one attempt, as a provider's does.
	Timeout time.Duration
}

// Acks is what the senders saw.
type Acks struct {
	mu sync.Mutex
	// ByEvent counts each event's 2xx answers by outcome.
	ByEvent map[*Event]map[string]int
	// FirstAck is when each event was first answered 2xx.
	FirstAck map[*Event]time.Time
	// Unacked are the deliveries never answered 2xx (the context ended first).
	Unacked []*Delivery
	// Attempts counts every attempt; Answers counts them by status class ("2xx",
	// "4xx", "5xx", "error").
	Attempts int
	Answers  map[string]int
}

// Send delivers every delivery of w, each at its time after Send was called, and
// returns once each was answered 2xx or ctx ended.
func (s *Sender) Send(ctx context.Context, w *Workload) *Acks {
	acks := &Acks{ByEvent: map[*Event]map[string]int{}, FirstAck: map[*Event]time.Time{}, Answers: map[string]int{}}
	client := &http.Client{
		Timeout:   s.Timeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: s.Concurrency, IdleConnTimeout: 30 * time.Second},
	}
	defer client.CloseIdleConnections()
	signer := sign.Stripe(s.Secret)
	queue := make(chan *Delivery)
	start := time.Now()
	go func() {
		defer close(queue)
		for _, d := range w.Deliveries {
			if wait := time.Until(start.Add(d.At)); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
				}
			}
			select {
			case queue <- d:
			case <-ctx.Done():
				acks.mu.Lock()
				acks.Unacked = append(acks.Unacked, d)
				acks.mu.Unlock()
			}
		}
	}()
	var wg sync.WaitGroup
	for range s.Concurrency {
		wg.Go(func() {
			for d := range queue {
				s.deliver(ctx, client, signer, d, acks)
			}
		})
	}
	wg.Wait()
	return acks
}

func (s *Sender) deliver(ctx context.Context, client *http.Client, signer sign.Signer, d *Delivery, acks *Acks) {
	backoff := 20 * time.Millisecond
	for {
		class, outcome := s.attempt(ctx, client, signer, d.Event)
		acks.mu.Lock()
		acks.Attempts++
		acks.Answers[class]++
		if class == "2xx" {
			m := acks.ByEvent[d.Event]
			if m == nil {
				m = map[string]int{}
				acks.ByEvent[d.Event] = m
				acks.FirstAck[d.Event] = time.Now()
			}
			m[outcome]++
		}
		acks.mu.Unlock()
		if class == "2xx" {
			return
		}
		select {
		case <-ctx.Done():
			acks.mu.Lock()
			acks.Unacked = append(acks.Unacked, d)
			acks.mu.Unlock()
			return
		case <-time.After(backoff/2 + rand.N(backoff/2+1)):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// attempt sends one signed copy and returns the answer's class and outcome.
func (s *Sender) attempt(ctx context.Context, client *http.Client, signer sign.Signer, ev *Event) (class, outcome string) {
	req, err := sign.NewRequest(s.Receivers()+ev.Fact.Endpoint.Path(), signer, ev.Body)
	if err != nil {
		return "error", ""
	}
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return "error", ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		var answer struct {
			Outcome string `json:"outcome"`
		}
		_ = json.Unmarshal(body, &answer)
		return "2xx", answer.Outcome
	case resp.StatusCode >= 500:
		return "5xx", ""
	default:
		return "4xx", ""
	}
}
