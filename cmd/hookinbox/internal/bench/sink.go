package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The sinks of --mode forward (--sink).
const (
	SinkHTTP = "http"
	SinkNATS = "nats"
)

// A sink is forward's destination: the generated endpoint forwards there, and it
// says what arrived.
type sink interface {
	// forward is the endpoint's forward target, a YAML flow mapping.
	forward() string
	// delivered counts the events delivered so far, for the wait and the progress
	// line; a count it cannot read is the last it read.
	delivered() int64
	// report is forward's figures once the wait is over.
	report(want int64, loadStart time.Time, started *sync.Map) (*ForwardReport, error)
	// firsts is when each source event first arrived, and how many arrived again.
	firsts() (map[string]time.Time, int64, error)
	// describe says what the sink is, for the report.
	describe() string
	close()
}

// recordingSink is forward's HTTP receiver: it answers every delivery 200 and
// records the first delivery of each event.
type recordingSink struct {
	srv *http.Server
	url string

	count atomic.Int64 // distinct events

	mu           sync.Mutex
	first        map[string]time.Time
	redeliveries int64
}

func startRecordingSink() (*recordingSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("error listening for the forward sink: %w", err)
	}
	s := &recordingSink{url: "http://" + ln.Addr().String() + "/events", first: map[string]time.Time{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *recordingSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	now := time.Now()
	id := r.Header.Get("Hookinbox-Source-Event-Id")
	s.mu.Lock()
	if _, seen := s.first[id]; seen {
		s.redeliveries++
	} else {
		s.first[id] = now
		s.count.Add(1)
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *recordingSink) forward() string { return fmt.Sprintf("{url: %q}", s.url) }

func (s *recordingSink) delivered() int64 { return s.count.Load() }

func (s *recordingSink) report(want int64, loadStart time.Time, started *sync.Map) (*ForwardReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fr := forwardFigures(s.first, s.redeliveries, want, loadStart, started)
	fr.Sink = s.describe()
	return fr, nil
}

func (s *recordingSink) firsts() (map[string]time.Time, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.first), s.redeliveries, nil
}

func (s *recordingSink) describe() string {
	return "an HTTP sink in this process, answering 200 at once"
}

func (s *recordingSink) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// forwardFigures is forward's figures from the first delivery of each event: how
// many of the want accepted events arrived, the time from the first request to the
// last first delivery, and each event's latency from its request's start
// (started) to its delivery.
func forwardFigures(first map[string]time.Time, redeliveries, want int64, loadStart time.Time, started *sync.Map) *ForwardReport {
	fr := &ForwardReport{Accepted: want, Delivered: int64(len(first)), Redeliveries: redeliveries}
	var last time.Time
	var lat []time.Duration
	for id, at := range first {
		if at.After(last) {
			last = at
		}
		if t0, ok := started.Load(id); ok {
			lat = append(lat, at.Sub(t0.(time.Time)))
		}
	}
	slices.Sort(lat)
	fr.EndToEnd = summarize(lat)
	if !last.IsZero() && fr.Delivered >= want {
		sec := last.Sub(loadStart).Seconds()
		fr.ElapsedSeconds = round3(sec)
		if sec > 0 {
			fr.Rate = round1(float64(fr.Delivered) / sec)
		}
	}
	return fr
}
