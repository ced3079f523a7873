package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookinbox/hookinbox"
)

// receiver is the part of *hookinbox.Inbox, whatever its transaction type, that
// drain's --backlog receive calls.
type receiver interface {
	Receive(ctx context.Context, ev hookinbox.Event) (hookinbox.Outcome, error)
}

// runDrain inserts a backlog with no worker running, then starts the workers and
// measures how fast they empty it.
func (rn *runner) runDrain(ctx context.Context, s *inProcess, r *Report, p *progress) error {
	backend, obs := s.backend, s.obs
	var res *loadResult
	if rn.c.Backlog == "receive" {
		rcv, ok := backend.Inbox.(receiver)
		if !ok {
			return errors.New("--backlog receive: the inbox has no Receive method")
		}
		done := &atomic.Int64{}
		p.track("backlog", "receipts", done.Load)
		endCPU := rn.cpu.start("receipt")
		res = receiveBacklog(ctx, rcv, rn.gen, rn.c.Count, rn.c.Concurrency, done)
		res.CPU = endCPU(res.Requests, 0)
		p.untrack()
	} else {
		url, shutdown, err := serveEndpoints(s.cfg, backend, s.logger)
		if err != nil {
			return err
		}
		spec, answered := rn.spec(url)
		p.track("backlog", "requests", answered.Load)
		res = runLoad(ctx, spec)
		p.untrack()
		shutdown()
	}
	r.setLoad(res)
	backlog := res.Outcomes[string(hookinbox.OutcomeAccepted)]
	dr := &DrainReport{Backlog: backlog, BacklogVia: rn.c.Backlog, Workers: rn.c.Workers}
	r.Drain = dr
	if ctx.Err() != nil || backlog == 0 {
		return nil
	}

	obs.expect(backlog)
	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	workDone := make(chan error, 1)
	endCPU := rn.cpu.start("event")
	start := time.Now()
	go func() { workDone <- backend.Inbox.Run(workCtx) }()
	p.track("drain", "processed", obs.processed.Load)
	deadline := start.Add(rn.c.Timeout)
	for obs.processed.Load() < backlog && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	p.untrack()
	dr.CPU = endCPU(min(obs.processed.Load(), backlog), 0)
	stopWork()
	if err := <-workDone; err != nil {
		return fmt.Errorf("the workers: %w", err)
	}
	obs.fill(dr, start)
	if dr.Processed < backlog {
		r.Incomplete = fmt.Sprintf("%d of %d receipts processed within --timeout %s", dr.Processed, backlog, rn.c.Timeout)
	}
	r.setRate(dr.Rate, "events/s")
	return nil
}

// receiveBacklog records count new events on the bench endpoint through
// Inbox.Receive, concurrency at a time: drain's backlog without HTTP.
func receiveBacklog(ctx context.Context, rcv receiver, gen *eventGen, count, concurrency int, done *atomic.Int64) *loadResult {
	var (
		issued atomic.Int64
		mu     sync.Mutex
		wg     sync.WaitGroup
	)
	res := &loadResult{Outcomes: map[string]int64{}, Errors: map[string]int64{}}
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			outcomes := map[string]int64{}
			var errs int64
			var firstErr string
			lat := make([]time.Duration, 0, count/concurrency+1)
			for ctx.Err() == nil && issued.Add(1) <= int64(count) {
				seq := gen.next.Add(1)
				ev := gen.event(seq)
				t0 := time.Now()
				out, err := rcv.Receive(context.WithoutCancel(ctx), hookinbox.Event{Endpoint: endpointName, ID: ev.id, Type: ev.typ, Payload: ev.body})
				lat = append(lat, time.Since(t0))
				done.Add(1)
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
					continue
				}
				outcomes[string(out)]++
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range outcomes {
				res.Outcomes[k] += v
			}
			if errs > 0 {
				res.Errors["error"] += errs
				if res.FirstError == "" {
					res.FirstError = firstErr
				}
			}
			res.Latencies = append(res.Latencies, lat...)
		})
	}
	wg.Wait()
	res.Start, res.Elapsed = start, time.Since(start)
	res.Requests = int64(len(res.Latencies))
	slices.Sort(res.Latencies)
	return res
}
