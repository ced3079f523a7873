package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// DefaultDispatchCount is the backlog of --mode dispatch without --count.
const DefaultDispatchCount = 10000

// dispatchInsertBatch is how many outbox messages one statement of the backlog writes.
const dispatchInsertBatch = 1000

// DispatchReport is dispatch's drain of an outbox backlog.
type DispatchReport struct {
	// Sink says where the messages went.
	Sink           string       `json:"sink"`
	Backlog        int64        `json:"backlog"`
	Concurrency    int          `json:"concurrency"`
	Delivered      int64        `json:"delivered"`
	Redeliveries   int64        `json:"redeliveries"`
	ElapsedSeconds float64      `json:"elapsed_seconds"`
	Rate           float64      `json:"rate"`
	Tenths         []DrainTenth `json:"tenths"`
	// CPU is the CPU time per message delivered (Linux, see cpuMeter).
	CPU *CPUReport `json:"cpu,omitempty"`
}

// runDispatch writes a backlog of --count outbox messages for the forward endpoint's
// sink with no dispatcher running, as handlers would (OutboxInsertMany, a thousand a
// statement), then starts the server and measures how fast its dispatcher empties
// the backlog into the sink, tenth by tenth: a rate that falls tenth after tenth is
// a collapse (claims that read more rows as the backlog ages), not noise.
func (rn *runner) runDispatch(ctx context.Context, s *inProcess, r *Report, p *progress) error {
	n := int64(rn.c.Count)
	ex := s.backend.Executor
	written := int64(0)
	p.track("backlog", "outbox messages", func() int64 { return written })
	for written < n && ctx.Err() == nil {
		batch := make([]*driver.OutboxInsertParams, 0, min(dispatchInsertBatch, n-written))
		for range cap(batch) {
			ev := rn.gen.event(rn.gen.next.Add(1))
			batch = append(batch, &driver.OutboxInsertParams{
				AggregateType: rn.c.Provider, AggregateID: ev.id, EventType: ev.typ, Payload: ev.body,
				Source:      hookinboxtype.Key{Provider: rn.c.Provider, Endpoint: endpointName, EventID: ev.id},
				Destination: server.ForwardDestination(endpointName),
			})
		}
		if err := ex.OutboxInsertMany(ctx, batch); err != nil {
			return fmt.Errorf("error writing the outbox backlog: %w", err)
		}
		written += int64(len(batch))
	}
	p.untrack()
	dr := &DispatchReport{Backlog: written, Concurrency: rn.c.Dispatchers}
	r.Dispatch = dr
	if ctx.Err() != nil {
		return nil
	}
	s.checkpoint(ctx, r)

	endCPU := rn.cpu.start("message")
	start := time.Now()
	_, stop, err := s.serve(ctx)
	if err != nil {
		return err
	}
	p.track("dispatch", "delivered", s.sink.delivered)
	deadline := start.Add(rn.c.Timeout)
	for s.sink.delivered() < written && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	p.untrack()
	dr.CPU = endCPU(min(s.sink.delivered(), written), 0)
	if err := stop(); err != nil {
		return err
	}
	first, redeliveries, err := s.sink.firsts()
	if err != nil {
		return err
	}
	dr.Sink, dr.Redeliveries = s.sink.describe(), redeliveries
	fillDispatch(dr, first, start)
	if dr.Delivered < written {
		r.Incomplete = fmt.Sprintf("%d of %d outbox messages delivered within --timeout %s", dr.Delivered, written, rn.c.Timeout)
	}
	r.setRate(dr.Rate, "messages/s")
	return nil
}

// fillDispatch writes the rate of each tenth of the backlog from the time each
// message first reached the sink.
func fillDispatch(dr *DispatchReport, first map[string]time.Time, start time.Time) {
	times := make([]time.Time, 0, len(first))
	for _, at := range first {
		times = append(times, at)
	}
	slices.SortFunc(times, time.Time.Compare)
	dr.Delivered = int64(len(times))
	prevN, prevT := int64(0), start
	for k := range 10 {
		bound := (int64(k+1)*dr.Backlog + 9) / 10
		if bound > dr.Delivered || bound == 0 {
			break
		}
		t := times[bound-1]
		sec := t.Sub(prevT).Seconds()
		d := DrainTenth{FromPercent: k * 10, ToPercent: (k + 1) * 10, Events: bound - prevN, Seconds: round3(sec)}
		if sec > 0 {
			d.Rate = round1(float64(d.Events) / sec)
		}
		dr.Tenths = append(dr.Tenths, d)
		prevN, prevT = bound, t
	}
	if dr.Delivered == dr.Backlog && dr.Delivered > 0 {
		sec := times[len(times)-1].Sub(start).Seconds()
		dr.ElapsedSeconds = round3(sec)
		if sec > 0 {
			dr.Rate = round1(float64(dr.Delivered) / sec)
		}
	}
}
