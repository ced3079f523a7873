package probe

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookinbox/hookinbox/internal/sign"
)

// Attempt is one request of a delivery and how it ended.
type Attempt struct {
	// At is when it was sent, from the start of the run.
	At time.Duration
	// Status is the answer's status code, 0 when none came.
	Status int
	// Answer is the start of the answer's body, on one line: what the receiver said
	// ({"outcome":"duplicate"}, an error).
	Answer string
	// Cut reports that the probe hung up while the receiver was still working, as
	// a provider does when its timeout passes.
	Cut bool
	// TimedOut reports that no answer came within the provider's timeout.
	TimedOut bool
	// Err is why the request failed otherwise (connection refused, reset, ...).
	Err string
	// Took is the time to the answer, or to the hang-up.
	Took time.Duration
}

// OK reports whether the attempt was answered 2xx: the provider's acknowledgement.
func (a Attempt) OK() bool { return a.Status >= 200 && a.Status < 300 }

// Outcome is how the attempt ended, in one word: the status code, "cut",
// "timeout" or "error".
func (a Attempt) Outcome() string {
	switch {
	case a.Status != 0:
		return strconv.Itoa(a.Status)
	case a.Cut:
		return "cut"
	case a.TimedOut:
		return "timeout"
	default:
		return "error"
	}
}

// Delivery is one copy of an event as the provider sends it: its first attempt and
// the retries after it, until one is answered 2xx or the schedule runs out.
type Delivery struct {
	Event *Event
	// Copy numbers the copies of one event that the scenario sends (1, 2).
	Copy int

	mu       sync.Mutex
	attempts []Attempt
	state    deliveryState
}

type deliveryState int

const (
	delivering deliveryState = iota
	acked
	gaveUp  // the schedule ran out
	stopped // the run was interrupted with retries left
)

// Attempts returns the attempts so far.
func (d *Delivery) Attempts() []Attempt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Attempt(nil), d.attempts...)
}

// Acked reports whether an attempt was answered 2xx.
func (d *Delivery) Acked() bool { return d.get() == acked }

func (d *Delivery) get() deliveryState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

func (d *Delivery) set(s deliveryState) {
	d.mu.Lock()
	d.state = s
	d.mu.Unlock()
}

func (d *Delivery) record(a Attempt) {
	d.mu.Lock()
	d.attempts = append(d.attempts, a)
	d.mu.Unlock()
}

// sender delivers events to the target as the provider does.
type sender struct {
	target   string
	signer   sign.Signer
	client   *http.Client
	schedule Schedule
	scale    float64
	start    time.Time

	wg sync.WaitGroup
}

// startOpts shape a delivery's first attempt.
type startOpts struct {
	// cut, when positive, hangs up the first attempt after it instead of the
	// provider's timeout.
	cut time.Duration
	// retryAtOnce sends the retry of a cut first attempt at once, while the receiver
	// may still be working on it, before the schedule's retries.
	retryAtOnce bool
	// gate, when set, holds the first attempt until it is closed, so that copies
	// start at the same instant.
	gate <-chan struct{}
	// hold, when set, holds the retries until it is closed.
	hold <-chan struct{}
}

// deliver starts d in the background and returns a channel closed when its first
// attempt has ended. Its retries go on until acknowledged, given up, or ctx ends;
// wait waits for them.
func (s *sender) deliver(ctx context.Context, d *Delivery, o startOpts) <-chan struct{} {
	first := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(ctx, d, o, first)
	}()
	return first
}

// wait waits for every delivery to end.
func (s *sender) wait() { s.wg.Wait() }

func (s *sender) run(ctx context.Context, d *Delivery, o startOpts, first chan struct{}) {
	if o.gate != nil {
		<-o.gate
	}
	retries := 0 // of the schedule's, sent so far
	reason := ""
	for n := 0; ; n++ {
		timeout := s.schedule.Timeout
		if n == 0 && o.cut > 0 {
			timeout = o.cut
		}
		var extra http.Header
		if n > 0 && s.schedule.RetryHeaders != nil {
			extra = s.schedule.RetryHeaders(n, reason)
		}
		a := s.attempt(ctx, d.Event, timeout, n == 0 && o.cut > 0, extra)
		d.record(a)
		if n == 0 {
			close(first)
			if o.hold != nil {
				select {
				case <-o.hold:
				case <-ctx.Done():
				}
			}
		}
		switch {
		case a.OK():
			d.set(acked)
			return
		case ctx.Err() != nil:
			d.set(stopped)
			return
		}
		reason = "http_error"
		if a.Cut || a.TimedOut {
			reason = "http_timeout"
		}
		var wait time.Duration
		if n == 0 && a.Cut && o.retryAtOnce {
			wait = 0 // an extra retry: the schedule's are still to come
		} else {
			if retries == len(s.schedule.Retries) {
				d.set(gaveUp)
				return
			}
			wait = time.Duration(float64(s.schedule.Retries[retries]) / s.scale)
			retries++
		}
		if !sleep(ctx, wait) {
			d.set(stopped)
			return
		}
	}
}

// sleep waits for d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// attempt sends e once, signed now, and waits at most timeout for the answer. cut
// says the timeout is a hang-up aimed at the receiver's working time.
func (s *sender) attempt(ctx context.Context, e *Event, timeout time.Duration, cut bool, extra http.Header) Attempt {
	sent := time.Now()
	a := Attempt{At: sent.Sub(s.start)}
	body := e.bodyAt(sent)
	h, err := SignedHeaders(s.target, s.signer, body, e.ID, cmp.Or(e.signType, e.Type), sent)
	if err != nil {
		a.Err = err.Error()
		return a
	}
	for k, v := range extra {
		h[k] = v
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, s.target, bytes.NewReader(body))
	if err != nil {
		a.Err = err.Error()
		return a
	}
	req.Header = h
	resp, err := s.client.Do(req)
	a.Took = time.Since(sent)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			a.Err = "interrupted"
		case errors.Is(actx.Err(), context.DeadlineExceeded):
			a.Cut, a.TimedOut = cut, !cut
		default:
			a.Err = transportError(err)
		}
		return a
	}
	defer resp.Body.Close()
	a.Status = resp.StatusCode
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 160))
	a.Answer = strings.Join(strings.Fields(string(b)), " ")
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return a
}

// transportError is err without the method and URL that net/http puts in front.
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// SignedHeaders returns the headers a provider sends with body to target at at, as
// signer signs them: schemes that send the event's id and type in headers get id and
// typ, schemes that sign the URL get target. The Content-Type is JSON unless the
// scheme sets another (Twilio's forms).
func SignedHeaders(target string, signer sign.Signer, body []byte, id, typ string, at time.Time) (http.Header, error) {
	var h http.Header
	var err error
	switch s := signer.(type) {
	case sign.EventSigner:
		h, err = s.SignEvent(body, at, id, typ)
	case sign.URLSigner:
		h, err = s.SignURL(target, body, at)
	default:
		h, err = signer.Sign(body, at)
	}
	if err != nil {
		return nil, err
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	return h, nil
}
