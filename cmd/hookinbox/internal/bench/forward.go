package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookinbox/hookinbox"
)

// runForward measures the forward endpoint against Server.Run until every accepted
// event is delivered to the sink: delivered events/s beside the accept rate of the
// same run.
func (rn *runner) runForward(ctx context.Context, s *inProcess, r *Report, p *progress) error {
	addr, stop, err := s.serve(ctx)
	if err != nil {
		return err
	}
	defer stop()
	spec, answered := rn.spec(s.endpointURL(addr, endpointName))
	var started sync.Map
	spec.started = func(id string, at time.Time) { started.Store(id, at) }
	p.track(rn.c.Mode, "requests", answered.Load)
	res := runLoad(ctx, spec)
	p.untrack()
	r.setLoad(res)

	want := res.Outcomes[string(hookinbox.OutcomeAccepted)]
	p.track("forward", "delivered", s.sink.delivered)
	deadline := time.Now().Add(rn.c.Timeout)
	for s.sink.delivered() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	p.untrack()
	if err := stop(); err != nil {
		return err
	}
	fr, err := s.sink.report(want, res.Start, &started)
	if err != nil {
		return err
	}
	if res.Elapsed > 0 {
		fr.AcceptRate = round1(float64(want) / res.Elapsed.Seconds())
	}
	if fr.Rate > 0 && fr.AcceptRate > 0 {
		ratio := round3(fr.Rate / fr.AcceptRate)
		fr.Ratio = &ratio
	}
	r.Forward = fr
	if fr.Delivered < want {
		r.Incomplete = fmt.Sprintf("%d of %d accepted events delivered within --timeout %s", fr.Delivered, want, rn.c.Timeout)
	}
	r.setRate(fr.Rate, "events/s")
	return nil
}
