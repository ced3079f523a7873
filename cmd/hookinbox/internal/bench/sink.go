package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// recordingSink is forward's receiver: it answers every delivery 200 and records the
// first delivery of each event.
type recordingSink struct {
	srv *http.Server
	url string

	delivered atomic.Int64 // distinct events

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
		s.delivered.Add(1)
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// report is forward's figures: deliveries of the accepted events, the time from the
// first request to the last first delivery, and each event's latency from its
// request's start to its delivery.
func (s *recordingSink) report(want int64, loadStart time.Time, started *sync.Map) *ForwardReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	fr := &ForwardReport{Accepted: want, Delivered: s.delivered.Load(), Redeliveries: s.redeliveries}
	var last time.Time
	var lat []time.Duration
	for id, at := range s.first {
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

func (s *recordingSink) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
