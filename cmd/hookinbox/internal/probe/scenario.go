package probe

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// The scenarios, in the order they run. Each delivers its own facts.
const (
	// Baseline delivers each fact's events once, in order: the control, and the
	// measure of the receiver's answer time that retries and timeout aim at. It
	// always runs first.
	Baseline = "baseline"
	// Duplicates sends every event twice at the same instant, on two connections.
	Duplicates = "duplicates"
	// Retries hangs up every event's first attempt while the receiver is still
	// working on it, as the provider's timeout does, and retries on the provider's
	// schedule.
	Retries = "retries"
	// Timeout hangs up every event's first attempt likewise, and sends the retry at
	// once, while the first copy may still be running.
	Timeout = "timeout"
	// Reorder sends each fact's events in reverse order: the outcome first.
	Reorder = "reorder"
	// SecondObject sends the outcome and the second Event object for it at the same
	// instant. It is skipped for providers that have no second Event object.
	SecondObject = "second-object"
	// Burst sends every event of every fact at once, each twice, in random order,
	// with --concurrency requests in flight: a provider's backlog after an outage.
	Burst = "burst"
)

// Scenarios lists every scenario in the order they run.
var Scenarios = []string{Baseline, Duplicates, Retries, Timeout, Reorder, SecondObject, Burst}

// scenarioTag is each scenario's part of its facts' ids.
var scenarioTag = map[string]string{
	Baseline: "base", Duplicates: "dup", Retries: "retry", Timeout: "tmo", Reorder: "reord",
	SecondObject: "second", Burst: "burst",
}

// scenarioAbout says in a line what each scenario does, for reports.
var scenarioAbout = map[string]string{
	Baseline:     "each event once, in order",
	Duplicates:   "each event twice at the same instant",
	Retries:      "first attempt cut while the receiver works; retries on the provider's schedule",
	Timeout:      "first attempt cut while the receiver works; a retry at once, while the first copy may still run",
	Reorder:      "each fact's events in reverse order",
	SecondObject: "the outcome and a second Event object for it at the same instant",
	Burst:        "every event of every fact at once, each twice, in random order",
}

// scenarioFunc delivers the facts of one scenario.
type scenarioFunc func(r *run, ctx context.Context, facts []*Fact)

var scenarioFuncs = map[string]scenarioFunc{
	Baseline:     (*run).baseline,
	Duplicates:   (*run).duplicates,
	Retries:      func(r *run, ctx context.Context, facts []*Fact) { r.cutFirst(ctx, facts, false) },
	Timeout:      func(r *run, ctx context.Context, facts []*Fact) { r.cutFirst(ctx, facts, true) },
	Reorder:      (*run).reorder,
	SecondObject: (*run).secondObject,
	Burst:        (*run).burst,
}

// newDelivery records a delivery of copy n of e.
func newDelivery(e *Event, n int) *Delivery {
	d := &Delivery{Event: e, Copy: n}
	e.Fact.addDelivery(d)
	return d
}

// eachFact runs fn for every fact, with r's concurrency facts at a time.
func (r *run) eachFact(ctx context.Context, facts []*Fact, fn func(i int, f *Fact)) {
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, f := range facts {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i, f)
		})
	}
	wg.Wait()
}

// inOrder delivers events one after the other, each once the previous one's first
// attempt has ended (its retries go on meanwhile, as a provider's do).
func (r *run) inOrder(ctx context.Context, events []*Event, o startOpts) {
	for _, e := range events {
		if ctx.Err() != nil {
			return
		}
		<-r.s.deliver(ctx, newDelivery(e, 1), o)
	}
}

// together delivers events at the same instant and waits for their first attempts.
func (r *run) together(ctx context.Context, events []*Event, copyOf func(i int) int) {
	gate := make(chan struct{})
	var firsts []<-chan struct{}
	for i, e := range events {
		firsts = append(firsts, r.s.deliver(ctx, newDelivery(e, copyOf(i)), startOpts{gate: gate}))
	}
	close(gate)
	for _, f := range firsts {
		<-f
	}
}

func (r *run) baseline(ctx context.Context, facts []*Fact) {
	r.eachFact(ctx, facts, func(_ int, f *Fact) { r.inOrder(ctx, f.eventsWithout(RoleSecond), startOpts{}) })
	r.answerTime = r.p50Answer(facts)
}

func (r *run) duplicates(ctx context.Context, facts []*Fact) {
	r.eachFact(ctx, facts, func(_ int, f *Fact) {
		for _, e := range f.eventsWithout(RoleSecond) {
			if ctx.Err() != nil {
				return
			}
			r.together(ctx, []*Event{e, e}, func(i int) int { return i + 1 })
		}
	})
}

// cutFirst delivers each fact's events in order, hanging up each first attempt at a
// point of the receiver's answer time: fact i of n at (i+½)/n of the median, so that
// the hang-ups fall all along the receiver's work.
func (r *run) cutFirst(ctx context.Context, facts []*Fact, retryAtOnce bool) {
	r.eachFact(ctx, facts, func(i int, f *Fact) {
		cut := time.Duration(float64(r.answerTime) * (float64(i) + 0.5) / float64(len(facts)))
		r.inOrder(ctx, f.eventsWithout(RoleSecond), startOpts{cut: max(cut, 50*time.Microsecond), retryAtOnce: retryAtOnce})
	})
}

func (r *run) reorder(ctx context.Context, facts []*Fact) {
	r.eachFact(ctx, facts, func(_ int, f *Fact) {
		events := f.eventsWithout(RoleSecond)
		slices.Reverse(events)
		r.inOrder(ctx, events, startOpts{})
	})
}

func (r *run) secondObject(ctx context.Context, facts []*Fact) {
	r.eachFact(ctx, facts, func(_ int, f *Fact) {
		i := slices.IndexFunc(f.Events, func(e *Event) bool { return e.Role != RoleStep })
		var outcome, after []*Event
		for _, e := range f.Events[i:] {
			if e.Role == RoleStep {
				after = append(after, e)
			} else {
				outcome = append(outcome, e)
			}
		}
		r.inOrder(ctx, f.Events[:i], startOpts{})
		if ctx.Err() == nil {
			r.together(ctx, outcome, func(int) int { return 1 })
		}
		r.inOrder(ctx, after, startOpts{})
	})
}

func (r *run) burst(ctx context.Context, facts []*Fact) {
	var pairs []*Event
	for _, f := range facts {
		pairs = append(pairs, f.eventsWithout(RoleSecond)...)
	}
	rand.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	queue := make(chan *Event, len(pairs))
	for _, e := range pairs {
		queue <- e
	}
	close(queue)
	var wg sync.WaitGroup
	for range max(1, r.cfg.Concurrency/2) {
		wg.Go(func() {
			for e := range queue {
				if ctx.Err() != nil {
					return
				}
				r.together(ctx, []*Event{e, e}, func(i int) int { return i + 1 })
			}
		})
	}
	wg.Wait()
}

// hasSecond reports whether the provider's facts have a second Event object.
func (k kind) hasSecond() bool {
	for _, l := range k.lives {
		for _, s := range l.steps {
			if s.role == RoleSecond {
				return true
			}
		}
	}
	return false
}

// p50Answer is the median time to a 2xx of the facts' first attempts, or the
// provider's timeout when none was answered 2xx.
func (r *run) p50Answer(facts []*Fact) time.Duration {
	var took []time.Duration
	for _, f := range facts {
		for _, d := range f.Deliveries() {
			if a := d.Attempts(); len(a) > 0 && a[0].OK() {
				took = append(took, a[0].Took)
			}
		}
	}
	if len(took) == 0 {
		return r.s.schedule.Timeout
	}
	return percentile(took, 50)
}

// percentile returns the p-th percentile of ds (nearest rank), 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i, 1)-1]
}
