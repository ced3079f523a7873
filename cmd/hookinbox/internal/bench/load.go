package bench

import (
	"context"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookinbox/hookinbox/internal/sign"
)

// loadSpec is one closed-loop run.
type loadSpec struct {
	client      *http.Client
	url         string
	signer      sign.Signer
	gen         *eventGen
	concurrency int
	// count requests in all, or as many as fit in duration.
	count    int64
	duration time.Duration
	// duplicates is the fraction of requests that resend an earlier event.
	duplicates float64
	// started, when set, is told when a new event's request starts (forward's
	// end-to-end latency).
	started func(id string, at time.Time)
	// done counts answered requests, for the progress line.
	done *atomic.Int64
	// cpu, when set, measures the run's CPU time per request.
	cpu *cpuMeter
}

// loadResult is what a run measured.
type loadResult struct {
	Requests   int64
	Duplicates int64 // requests that resent an earlier event
	Outcomes   map[string]int64
	// Errors counts the requests not answered 2xx, by status ("500") or "transport"
	// when no answer came.
	Errors     map[string]int64
	FirstError string
	// Start is when the first request was sent, Elapsed how long until the last answer.
	Start   time.Time
	Elapsed time.Duration
	// Latencies are every request's, sorted.
	Latencies []time.Duration
	// CPU is the run's CPU time per request, when measured.
	CPU *CPUReport
}

// ok counts the 2xx answers.
func (r *loadResult) ok() int64 {
	var n int64
	for _, c := range r.Outcomes {
		n += c
	}
	return n
}

func (r *loadResult) errorCount() int64 {
	var n int64
	for _, c := range r.Errors {
		n += c
	}
	return n
}

// newBenchClient is an HTTP client that keeps a connection per sender alive.
func newBenchClient(concurrency int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        2 * concurrency,
			MaxIdleConnsPerHost: concurrency,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// sender is one closed loop's state: its own figures, merged at the end, so that the
// senders share nothing but two counters.
type sender struct {
	outcomes   map[string]int64
	errors     map[string]int64
	firstError string
	latencies  []time.Duration
	duplicates int64
	// answered are sequence numbers this sender had answered 2xx, the pool its
	// duplicates come from.
	answered []int64
	rng      *mrand.Rand
	poster   poster
}

// maxAnswered bounds a sender's pool of events to resend.
const maxAnswered = 4096

// runLoad runs spec's closed loops until count requests are answered, duration has
// passed or ctx is cancelled (requests in flight then finish), and returns what they
// measured.
func runLoad(ctx context.Context, spec *loadSpec) *loadResult {
	var issued atomic.Int64
	senders := make([]*sender, spec.concurrency)
	perSender := 1024
	if spec.count > 0 {
		perSender = int(spec.count)/spec.concurrency + 1
	}
	endCPU := spec.cpu.start("request")
	start := time.Now()
	deadline := start.Add(spec.duration)
	var wg sync.WaitGroup
	for i := range senders {
		s := &sender{
			outcomes: map[string]int64{}, errors: map[string]int64{},
			latencies: make([]time.Duration, 0, perSender),
			rng:       mrand.New(mrand.NewPCG(uint64(i), uint64(start.UnixNano()))),
		}
		senders[i] = s
		p, err := newPoster(spec.url, spec.signer, spec.client.Timeout, func() *http.Client { return spec.client })
		if err != nil {
			s.errors["transport"]++
			s.firstError = err.Error()
			continue
		}
		s.poster = p
		wg.Go(func() {
			defer p.close()
			for ctx.Err() == nil {
				if spec.count > 0 {
					if issued.Add(1) > spec.count {
						return
					}
				} else if !time.Now().Before(deadline) {
					return
				}
				s.send(spec)
			}
		})
	}
	wg.Wait()
	res := &loadResult{Outcomes: map[string]int64{}, Errors: map[string]int64{}, Start: start, Elapsed: time.Since(start)}
	var answered int64
	for _, s := range senders {
		answered += int64(len(s.latencies))
	}
	res.CPU = endCPU(answered, 0)
	for _, s := range senders {
		for k, v := range s.outcomes {
			res.Outcomes[k] += v
		}
		for k, v := range s.errors {
			res.Errors[k] += v
		}
		if res.FirstError == "" {
			res.FirstError = s.firstError
		}
		res.Duplicates += s.duplicates
		res.Latencies = append(res.Latencies, s.latencies...)
	}
	res.Requests = int64(len(res.Latencies))
	slices.Sort(res.Latencies)
	return res
}

// send sends one request: a new event, or with probability spec.duplicates one this
// sender had answered before.
func (s *sender) send(spec *loadSpec) {
	dup := spec.duplicates > 0 && len(s.answered) > 0 && s.rng.Float64() < spec.duplicates
	var seq int64
	if dup {
		seq = s.answered[s.rng.IntN(len(s.answered))]
		s.duplicates++
	} else {
		seq = spec.gen.next.Add(1)
	}
	ev := spec.gen.event(seq)
	t0 := time.Now()
	if spec.started != nil && !dup {
		spec.started(ev.id, t0)
	}
	status, outcome, err := s.poster.post(ev)
	s.latencies = append(s.latencies, time.Since(t0))
	spec.done.Add(1)
	switch {
	case err != nil:
		s.errors["transport"]++
		if s.firstError == "" {
			s.firstError = err.Error()
		}
	case status/100 != 2:
		s.errors[strconv.Itoa(status)]++
		if s.firstError == "" {
			s.firstError = fmt.Sprintf("%s answered %d %s", ev.id, status, outcome)
		}
	default:
		s.outcomes[outcome]++
		if !dup {
			if len(s.answered) < maxAnswered {
				s.answered = append(s.answered, seq)
			} else {
				s.answered[s.rng.IntN(maxAnswered)] = seq
			}
		}
	}
}

// LatencySummary is a distribution's percentiles, in milliseconds.
type LatencySummary struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// summarize returns the nearest-rank percentiles of sorted; nil when it is empty.
func summarize(sorted []time.Duration) *LatencySummary {
	if len(sorted) == 0 {
		return nil
	}
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(sorted)))) - 1
		return ms(sorted[max(i, 0)])
	}
	return &LatencySummary{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms(sorted[len(sorted)-1])}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
