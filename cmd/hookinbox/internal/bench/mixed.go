package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hookinbox/hookinbox"
)

// MixedReport is mixed's figures: the async billing endpoint accepting while the
// workers process, beside the sync billing endpoint under the same load. Its fields
// are the first round's; with --rounds above 1, Rounds holds every round.
type MixedReport struct {
	Workers int `json:"workers"`
	// Accepted and AcceptRate are the async endpoint's accepted answers, and per
	// second of the sending phase.
	Accepted   int64   `json:"accepted"`
	AcceptRate float64 `json:"accept_rate"`
	// ProcessedWhileAccepting counts the events the workers processed between the
	// first request and the last answer (the server's observer); ProcessedRate is
	// per second of that window.
	ProcessedWhileAccepting int64   `json:"processed_while_accepting"`
	ProcessedRate           float64 `json:"processed_rate"`
	// BacklogAtEnd is what was accepted and not yet processed at the last answer;
	// DrainSeconds how long the workers took to process it afterwards.
	BacklogAtEnd   int64   `json:"backlog_at_end"`
	DrainSeconds   float64 `json:"drain_seconds"`
	FailedAttempts int64   `json:"failed_attempts"`
	// Sync is the sync billing endpoint's run: the same senders, events, and
	// --duration or --count, once the backlog is processed.
	Sync *LoadReport `json:"sync,omitempty"`
	// Ratio is ProcessedRate / Sync.RequestRate: how fast async processing keeps up
	// with the sync endpoint, which processes each event in its request.
	Ratio *float64 `json:"ratio,omitempty"`
	// Rounds, with --rounds above 1, is each round that finished (an async run, its
	// backlog processed, a sync run), the first one's being the fields above;
	// MedianRatio is the median of their ratios. (The report's groups count every
	// round's.) Adjacent runs share the machine's state of the
	// moment, which on a shared machine moves a single ratio by a tenth or more.
	Rounds      []MixedRound `json:"rounds,omitempty"`
	MedianRatio *float64     `json:"median_ratio,omitempty"`
}

// MixedRound is one round of mixed.
type MixedRound struct {
	Accepted      int64   `json:"accepted"`
	ProcessedRate float64 `json:"processed_rate"`
	BacklogAtEnd  int64   `json:"backlog_at_end"`
	SyncRate      float64 `json:"sync_rate"`
	// Ratio is ProcessedRate / SyncRate; nil when the sync run made no rate.
	Ratio *float64 `json:"ratio,omitempty"`
}

// runMixed measures the async billing endpoint against Server.Run, accepting with
// the workers processing at once, then the sync billing endpoint of the same server
// with the same load, --rounds times. Between the two the workers finish the
// backlog, so that the sync run does not share the machine with them.
func (rn *runner) runMixed(ctx context.Context, s *inProcess, r *Report, p *progress) error {
	addr, stop, err := s.serve(ctx)
	if err != nil {
		return err
	}
	defer stop()
	mr := &MixedReport{Workers: rn.c.Workers}
	r.Mixed = mr
	rounds := max(rn.c.Rounds, 1)
	var ratios []float64
	for round := 1; round <= rounds && ctx.Err() == nil; round++ {
		into := mr
		if round > 1 {
			into = &MixedReport{Workers: rn.c.Workers}
			s.checkpoint(ctx, r)
		}
		if !rn.mixedRound(ctx, s, addr, r, into, round == 1, p) {
			break
		}
		if rounds > 1 {
			mr.Rounds = append(mr.Rounds, MixedRound{Accepted: into.Accepted, ProcessedRate: into.ProcessedRate,
				BacklogAtEnd: into.BacklogAtEnd, SyncRate: into.Sync.RequestRate, Ratio: into.Ratio})
			if into.Ratio != nil {
				ratios = append(ratios, *into.Ratio)
			}
		}
	}
	if len(ratios) > 1 {
		slices.Sort(ratios)
		median := ratios[len(ratios)/2]
		if len(ratios)%2 == 0 {
			median = round3((ratios[len(ratios)/2-1] + median) / 2)
		}
		mr.MedianRatio = &median
	}
	return stop()
}

// mixedRound runs one round into mr: the async run, its backlog, then the sync run.
// The first round's async run is the report's own load (r). It returns false when
// the round could not finish (interrupted, or the backlog was not processed within
// --timeout, which r.Incomplete then says).
func (rn *runner) mixedRound(ctx context.Context, s *inProcess, addr string, r *Report, mr *MixedReport, first bool, p *progress) bool {
	spec, answered := rn.spec(s.endpointURL(addr, endpointName))
	p.track("mixed", "requests", answered.Load)
	before := s.obs.processed.Load()
	failedBefore := s.obs.failed.Load()
	res := runLoad(ctx, spec)
	processed := s.obs.processed.Load() - before
	end := time.Now()
	p.untrack()
	if first {
		r.setLoad(res)
	}
	mr.Accepted = res.Outcomes[string(hookinbox.OutcomeAccepted)]
	mr.ProcessedWhileAccepting = min(processed, mr.Accepted)
	mr.BacklogAtEnd = mr.Accepted - mr.ProcessedWhileAccepting
	if sec := res.Elapsed.Seconds(); sec > 0 {
		mr.AcceptRate = round1(float64(mr.Accepted) / sec)
		mr.ProcessedRate = round1(float64(mr.ProcessedWhileAccepting) / sec)
	}
	if first {
		r.setRate(mr.ProcessedRate, "events/s")
	}
	if ctx.Err() != nil {
		return false
	}

	p.track("backlog", "processed", s.obs.processed.Load)
	deadline := end.Add(rn.c.Timeout)
	for s.obs.processed.Load()-before < mr.Accepted && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	p.untrack()
	mr.FailedAttempts = s.obs.failed.Load() - failedBefore
	if left := mr.Accepted - (s.obs.processed.Load() - before); left > 0 {
		if ctx.Err() == nil {
			r.Incomplete = fmt.Sprintf("%d of %d accepted events processed within --timeout %s: no sync run beside them",
				mr.Accepted-left, mr.Accepted, rn.c.Timeout)
		}
		return false
	}
	mr.DrainSeconds = round3(time.Since(end).Seconds())

	s.checkpoint(ctx, r)
	spec, answered = rn.spec(s.endpointURL(addr, syncEndpointName))
	p.track("sync", "requests", answered.Load)
	res = runLoad(ctx, spec)
	p.untrack()
	mr.Sync = &LoadReport{}
	mr.Sync.setLoad(res)
	if mr.Sync.RequestRate > 0 && ctx.Err() == nil {
		ratio := round3(mr.ProcessedRate / mr.Sync.RequestRate)
		mr.Ratio = &ratio
	}
	return ctx.Err() == nil
}
