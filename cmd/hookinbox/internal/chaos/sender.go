package chaos

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
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
	// Signers sign by provider ("stripe", "sendgrid").
	Signers map[string]sign.Signer
	// Concurrency is the number of senders.
	Concurrency int
	// Timeout bounds one attempt, as a provider's does.
	Timeout time.Duration
}

// Acks is what the senders saw.
type Acks struct {
	mu sync.Mutex
	// ByEvent counts each event's 2xx answers by outcome ("batch" for a request of
	// several events, whose answer counts outcomes for the request as a whole).
	ByEvent map[*Event]map[string]int
	// FirstAck is when each event was first answered 2xx.
	FirstAck map[*Event]time.Time
	// Unacked are the deliveries never answered 2xx (the context ended first).
	Unacked []*Delivery
	// Attempts counts every attempt; Answers counts them by status class ("2xx",
	// "4xx", "5xx", "error") and by status ("503", "500").
	Attempts int
	Answers  map[string]int
	// Log is every attempt, in the order they ended.
	Log []Attempt
}

// Attempt is one attempt of a delivery and its answer.
type Attempt struct {
	Delivery   *Delivery
	Start, End time.Time
	// Class is "2xx", "4xx", "5xx" or "error" (no answer); Status the code.
	Class  string
	Status int
	// Outcome is a 2xx answer's outcome; Fresh, of a batch's, how many of its events
	// were answered otherwise than duplicate.
	Outcome string
	Fresh   int
	// RetryAfter reports whether the answer carried Retry-After.
	RetryAfter bool
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
				s.deliver(ctx, client, d, acks)
			}
		})
	}
	wg.Wait()
	return acks
}

func (s *Sender) deliver(ctx context.Context, client *http.Client, d *Delivery, acks *Acks) {
	backoff := 20 * time.Millisecond
	for {
		a := s.attempt(ctx, client, d)
		acks.mu.Lock()
		acks.Attempts++
		acks.Answers[a.Class]++
		if a.Status >= 500 {
			acks.Answers[strconv.Itoa(a.Status)]++
		}
		acks.Log = append(acks.Log, a)
		if a.Class == "2xx" {
			for _, ev := range d.Events {
				m := acks.ByEvent[ev]
				if m == nil {
					m = map[string]int{}
					acks.ByEvent[ev] = m
					acks.FirstAck[ev] = a.End
				}
				m[a.Outcome]++
			}
		}
		acks.mu.Unlock()
		if a.Class == "2xx" {
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

// attempt sends one signed copy and returns what came back.
func (s *Sender) attempt(ctx context.Context, client *http.Client, d *Delivery) Attempt {
	a := Attempt{Delivery: d, Start: time.Now(), Class: "error"}
	ep := d.Endpoint()
	req, err := sign.NewRequest(s.Receivers()+ep.Path(), s.Signers[ep.provider()], d.Body)
	if err != nil {
		a.End = time.Now()
		return a
	}
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		a.End = time.Now()
		return a
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	a.End, a.Status, a.RetryAfter = time.Now(), resp.StatusCode, resp.Header.Get("Retry-After") != ""
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		var answer struct {
			Outcome  string         `json:"outcome"`
			Outcomes map[string]int `json:"outcomes"`
		}
		_ = json.Unmarshal(body, &answer)
		a.Class, a.Outcome = "2xx", answer.Outcome
		for outcome, n := range answer.Outcomes {
			if outcome != "duplicate" {
				a.Fresh += n
			}
		}
	case resp.StatusCode >= 500:
		a.Class = "5xx"
	default:
		a.Class = "4xx"
	}
	return a
}
