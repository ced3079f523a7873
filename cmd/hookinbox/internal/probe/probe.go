package probe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/sign"
)

// Config configures a run.
type Config struct {
	// Target is the receiver's webhook URL. Required.
	Target string
	// Provider is the name of the provider whose deliveries the probe plays, one of
	// sign.Names. Required.
	Provider string
	// Signer signs as the provider does, with the receiver's secret. Required.
	Signer sign.Signer
	// Options are the provider's options (hookinbox's endpoint options): where the
	// hmac scheme's events carry their id and type.
	Options map[string]string
	// Check is the oracle. Required.
	Check Checker

	// Facts is the number of facts per scenario.
	//
	// Defaults to 20.
	Facts int
	// Scenarios are the scenarios to run, of Scenarios. Baseline always runs.
	//
	// Defaults to all.
	Scenarios []string
	// TimeScale compresses the provider's retry schedule: 3600 makes an hour a
	// second.
	//
	// Defaults to 3600.
	TimeScale float64
	// Concurrency is how many facts are delivered at once (burst: requests in
	// flight).
	//
	// Defaults to 8.
	Concurrency int
	// Settle is how long the check is read again, after the last delivery, while it
	// still shows acknowledged facts unapplied: the time a receiver that applies
	// after answering (a queue, workers) gets to catch up. The special value -1
	// reads the check once.
	//
	// Defaults to 2 seconds.
	Settle time.Duration
	// Client sends the deliveries. Nil means a client with its own transport.
	Client *http.Client
}

func (c *Config) withDefaults() *Config {
	out := *c
	if out.Facts == 0 {
		out.Facts = 20
	}
	if len(out.Scenarios) == 0 {
		out.Scenarios = Scenarios
	}
	if out.TimeScale == 0 {
		out.TimeScale = 3600
	}
	if out.Concurrency == 0 {
		out.Concurrency = 8
	}
	if out.Settle == 0 {
		out.Settle = 2 * time.Second
	}
	if out.Client == nil {
		out.Client = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: 2 * out.Concurrency,
		}}
	}
	return &out
}

func (c *Config) validate() error {
	switch {
	case c.Target == "":
		return errors.New("no target")
	case c.Signer == nil:
		return errors.New("no signer")
	case c.Check == nil:
		return errors.New("no check")
	case c.Facts < 1:
		return errors.New("facts must be at least 1")
	case c.TimeScale < 1:
		return errors.New("the time scale must be at least 1")
	case c.Concurrency < 1:
		return errors.New("concurrency must be at least 1")
	}
	if _, ok := kinds[c.Provider]; !ok {
		return fmt.Errorf("unknown provider %q", c.Provider)
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios, s) {
			return fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(Scenarios, ", "))
		}
	}
	return nil
}

// run is one run's state.
type run struct {
	cfg  *Config
	kind kind
	s    *sender
	// facts are each scenario's facts.
	facts map[string][]*Fact
	// answerTime is baseline's median time to a 2xx.
	answerTime time.Duration
}

// Run probes the receiver: it checks that the check can be read, delivers the facts
// of each scenario, waits until every delivery is acknowledged or given up (or ctx
// ends), reads the check and reports. The receiver's state is judged only by the
// check.
//
// It returns an *InputError, having delivered little or nothing, when the check
// cannot be read or has another shape, when the target cannot be reached, or when
// the receiver refuses every delivery of the first fact with one 4xx status (401 for
// a wrong secret).
func Run(ctx context.Context, cfg *Config) (*Report, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	// The check first: one that cannot be read would waste the run.
	if _, err := c.Check.Applied(ctx, nil); err != nil {
		return nil, err
	}
	r := &run{
		cfg: c, kind: kinds[c.Provider], facts: map[string][]*Fact{},
		s: &sender{
			target: c.Target, signer: c.Signer, client: c.Client, schedule: schedules[c.Provider],
			scale: c.TimeScale, start: time.Now(),
		},
	}
	scenarios := c.Scenarios
	if !slices.Contains(scenarios, Baseline) {
		scenarios = append([]string{Baseline}, scenarios...)
	}
	var ids []string
	if err := r.newFacts(scenarios, &ids); err != nil {
		return nil, err
	}

	dctx, stop := context.WithCancel(ctx)
	defer stop()
	report := &Report{Target: c.Target, Provider: c.Provider, TimeScale: c.TimeScale, FactsPerScenario: c.Facts}
	took := map[string]time.Duration{}
	for _, name := range scenarios {
		facts := r.facts[name]
		if name == SecondObject && !r.kind.hasSecond() {
			continue
		}
		began := time.Now()
		if name == Baseline {
			if err := r.preflight(dctx, facts[0]); err != nil {
				stop()
				r.s.wait()
				return nil, err
			}
			facts = facts[1:]
		}
		scenarioFuncs[name](r, dctx, facts)
		took[name] = time.Since(began)
		if name == Baseline {
			r.answerTime = r.p50Answer(r.facts[Baseline])
			report.AnswerTime = r.answerTime
		}
	}
	r.s.wait()

	report.Interrupted = ctx.Err() != nil
	cctx := ctx
	if report.Interrupted {
		// Interrupted, the run still reports what it delivered.
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
	}
	applied, err := r.settle(cctx, ids)
	if err != nil {
		return nil, err
	}
	for _, name := range scenarios {
		if name == SecondObject && !r.kind.hasSecond() {
			report.Scenarios = append(report.Scenarios, &ScenarioReport{
				Name: name, About: scenarioAbout[name], Skipped: c.Provider + " sends no second Event object for a fact",
			})
			continue
		}
		s := scenarioReport(name, r.facts[name], applied)
		s.Took = took[name]
		report.Lost += s.Lost
		report.Doubled += s.Doubled
		report.Undelivered += s.Undelivered
		report.Scenarios = append(report.Scenarios, s)
	}
	return report, nil
}

// newFacts makes each scenario's facts and appends their ids to ids.
func (r *run) newFacts(scenarios []string, ids *[]string) error {
	tag, err := runTag()
	if err != nil {
		return err
	}
	src := &idSource{run: tag}
	// Numbers for the providers whose ids are numbers: 13 digits, unique in the run.
	base, err := rand.Int(rand.Reader, big.NewInt(8_000_000_000))
	if err != nil {
		return err
	}
	num := 1_000_000_000_000 + base.Int64()*100
	for _, name := range scenarios {
		for i := range r.cfg.Facts {
			num++
			f, err := r.kind.newFact(tag, name, i, num, src, r.cfg.Options)
			if err != nil {
				return fmt.Errorf("probe: --provider %s: %w", r.cfg.Provider, err)
			}
			r.facts[name] = append(r.facts[name], f)
			*ids = append(*ids, f.ID)
		}
	}
	return nil
}

// runTag is a new run's part of every id: six lowercase letters and digits.
func runTag() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b), nil
}

// preflight delivers the first fact's events, holding their retries, and stops the
// run when no attempt reached the target, or when the receiver refused every one with
// the same 4xx: the probe would otherwise report, as lost or undelivered, facts that
// it never managed to deliver.
func (r *run) preflight(ctx context.Context, f *Fact) error {
	hold := make(chan struct{})
	var firsts []Attempt
	for _, e := range f.eventsWithout(RoleSecond) {
		d := newDelivery(e, 1)
		<-r.s.deliver(ctx, d, startOpts{hold: hold})
		firsts = append(firsts, d.Attempts()[0])
	}
	unreachable, refused := true, true
	for _, a := range firsts {
		unreachable = unreachable && a.Err != ""
		refused = refused && a.Status >= 400 && a.Status < 500 && a.Status == firsts[0].Status
	}
	switch status := firsts[0].Status; {
	case ctx.Err() != nil:
	case unreachable:
		return inputErrorf("cannot reach --target %s: %s", r.cfg.Target, firsts[0].Err)
	case refused && (status == http.StatusUnauthorized || status == http.StatusForbidden):
		return inputErrorf("every delivery was answered %d %s: the receiver refuses the signature; "+
			"check --provider (%s) and the secret it verifies with", status, http.StatusText(status), r.cfg.Provider)
	case refused:
		return inputErrorf("every delivery was answered %d %s: is --target the receiver's webhook URL?",
			status, http.StatusText(status))
	}
	close(hold)
	return nil
}

// settle reads the check, and reads it again while it shows acknowledged facts
// unapplied, until Settle has passed.
func (r *run) settle(ctx context.Context, ids []string) (map[string]int64, error) {
	deadline := time.Now().Add(r.cfg.Settle)
	for {
		applied, err := r.cfg.Check.Applied(ctx, ids)
		if err != nil {
			return nil, err
		}
		if r.cfg.Settle < 0 || time.Now().After(deadline) || !r.anyLost(applied) {
			return applied, nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return applied, nil
		}
	}
}

// anyLost reports whether some fact is acknowledged but not applied.
func (r *run) anyLost(applied map[string]int64) bool {
	for _, facts := range r.facts {
		for _, f := range facts {
			if applied[f.ID] == 0 && outcomeAcked(f) {
				return true
			}
		}
	}
	return false
}
