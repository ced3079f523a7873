package bench

import (
	"sync/atomic"
	"time"

	"github.com/hookinbox/hookinbox"
)

// drainObserver is the server's metrics, and counts the workers' processed attempts,
// with the time each tenth of the backlog was reached.
type drainObserver struct {
	hookinbox.Observer
	groups    [2]groupCounts // accept, sync
	processed atomic.Int64
	failed    atomic.Int64
	bounds    []int64        // processed counts at the end of each tenth
	marks     []atomic.Int64 // when each was reached, Unix nanoseconds
}

// groupCounts sums group commits of one kind.
type groupCounts struct{ commits, deliveries, failed atomic.Int64 }

// Group counts a group commit, and passes it on to the metrics.
func (o *drainObserver) Group(g hookinbox.GroupInfo) {
	c := &o.groups[0]
	if g.Kind == hookinbox.GroupSync {
		c = &o.groups[1]
	}
	c.commits.Add(1)
	c.deliveries.Add(int64(g.Size))
	if g.Failed {
		c.failed.Add(1)
	}
	if m, ok := o.Observer.(hookinbox.GroupObserver); ok {
		m.Group(g)
	}
}

// groupReports are the group commits counted, by kind, those with any.
func (o *drainObserver) groupReports() []GroupReport {
	var out []GroupReport
	for k, kind := range []string{hookinbox.GroupAccept, hookinbox.GroupSync} {
		c := &o.groups[k]
		if n := c.commits.Load(); n > 0 {
			out = append(out, GroupReport{Kind: kind, Commits: n,
				MeanSize: round1(float64(c.deliveries.Load()) / float64(n)), Failed: c.failed.Load()})
		}
	}
	return out
}

// expect sets the backlog; it is called before the workers start.
func (o *drainObserver) expect(backlog int64) {
	o.bounds = make([]int64, 10)
	o.marks = make([]atomic.Int64, 10)
	for k := range o.bounds {
		o.bounds[k] = (int64(k+1)*backlog + 9) / 10
	}
}

func (o *drainObserver) Attempt(a hookinbox.AttemptInfo) {
	o.Observer.Attempt(a)
	switch a.Result {
	case hookinbox.AttemptProcessed:
		n := o.processed.Add(1)
		now := time.Now().UnixNano()
		for k, b := range o.bounds {
			if b == n {
				o.marks[k].Store(now)
			}
		}
	case hookinbox.AttemptAlreadyProcessed:
	default:
		o.failed.Add(1)
	}
}

// fill writes the drain's figures from the workers' start.
func (o *drainObserver) fill(dr *DrainReport, start time.Time) {
	dr.Processed = min(o.processed.Load(), dr.Backlog)
	dr.FailedAttempts = o.failed.Load()
	prevN, prevT := int64(0), start.UnixNano()
	end := prevT
	for k, b := range o.bounds {
		t := o.marks[k].Load()
		if t == 0 {
			break
		}
		sec := float64(t-prevT) / 1e9
		d := DrainTenth{FromPercent: k * 10, ToPercent: (k + 1) * 10, Events: b - prevN, Seconds: round3(sec)}
		if sec > 0 {
			d.Rate = round1(float64(d.Events) / sec)
		}
		dr.Tenths = append(dr.Tenths, d)
		prevN, prevT, end = b, t, t
	}
	if dr.Processed == dr.Backlog && end > start.UnixNano() {
		dr.ElapsedSeconds = round3(float64(end-start.UnixNano()) / 1e9)
		dr.Rate = round1(float64(dr.Backlog) / (float64(end-start.UnixNano()) / 1e9))
	}
}
