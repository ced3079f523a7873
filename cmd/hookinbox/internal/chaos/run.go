package chaos

import (
	"context"
	_ "embed"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
)

//go:embed faults.sql
var faultsSQL string

// Options configure a run of the harness.
type Options struct {
	// Bin is the hookinbox binary under test.
	Bin string
	// Dir holds the run's configs and the servers' logs.
	Dir string
	// Postgres is the private server, started; the harness stops it in immediate
	// mode during each scenario.
	Postgres *Postgres
	// SinkAddr is where the recording sink listens; ServerPorts are the serve
	// processes' ports (as many as the largest scenario has processes).
	SinkAddr    string
	ServerPorts []int

	// Invoices is the number of facts per scenario; Spread the time their deliveries
	// are spread over, during which the faults happen.
	Invoices int
	Spread   time.Duration
	// Kills is the number of SIGKILLs per scenario (of a random process), Restarts the
	// number of graceful restarts (SIGTERM), Pauses the number of SIGSTOPs past the
	// leases (then SIGCONT), PGStops the number of immediate stops of PostgreSQL.
	Kills, Restarts, Pauses, PGStops int
	// Senders is the number of concurrent senders.
	Senders int
	// FailRate and SlowRate are the shares of handler calls that fail and that are
	// slow; SinkFailRate and SinkSlowRate the sink's.
	FailRate, SlowRate, SinkFailRate, SinkSlowRate float64
	// SecondObjectShare is the share of events also sent as a second Event object.
	SecondObjectShare float64
	// Drain bounds the wait, after the last acknowledgement, for the workers and the
	// dispatchers to finish.
	Drain time.Duration
	// Timing is the servers' leases and timeouts.
	Timing Timing
	// Seed draws the workload and the fault schedule.
	Seed uint64
	// Log receives progress lines.
	Log io.Writer
}

// Report is one scenario's result.
type Report struct {
	Scenario string
	Findings Findings
	// Figures are what happened, for the record: sizes, kills, faults injected.
	Figures map[string]int
	Elapsed time.Duration
}

// Figure names.
const (
	FigInvoices       = "invoices"
	FigEvents         = "events"
	FigDeliveries     = "deliveries"
	FigAttempts       = "attempts"
	FigKills          = "server SIGKILLs"
	FigStarts         = "server starts"
	FigPauses         = "server SIGSTOPs past the leases"
	FigTerms          = "server graceful restarts (SIGTERM)"
	FigPGStops        = "PostgreSQL immediate stops"
	FigCalls          = "handler calls"
	FigFailures       = "handler failures injected"
	FigSlow           = "slow handlers injected"
	FigSinkFailures   = "sink failures injected"
	FigSinkDeliveries = "sink deliveries"
	FigSameKey        = "redelivered under the same key"
	FigAnswers5xx     = "answers 5xx"
	FigAnswersError   = "attempts without an answer"
	FigDuplicates     = "answered duplicate"
	FigAccepted       = "answered accepted"
)

// Figures lists the figures in print order.
var Figures = []string{FigInvoices, FigEvents, FigDeliveries, FigAttempts, FigAnswers5xx, FigAnswersError,
	FigAccepted, FigDuplicates, FigKills, FigTerms, FigStarts, FigPauses, FigPGStops, FigCalls, FigFailures, FigSlow, FigSinkFailures,
	FigSinkDeliveries, FigSameKey}

// Run runs one scenario from a fresh database and checks its result.
func Run(ctx context.Context, s *Scenario, o *Options) (*Report, error) {
	started := time.Now()
	name := fnv.New64a()
	name.Write([]byte(s.Name))
	r := rand.New(rand.NewPCG(o.Seed, name.Sum64()))
	dir := filepath.Join(o.Dir, s.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dbName := "chaos_" + s.Name
	if err := o.Postgres.CreateDatabase(ctx, dbName); err != nil {
		return nil, fmt.Errorf("error creating database %s: %w", dbName, err)
	}
	dbURL := o.Postgres.URL(dbName)
	cfgPath := filepath.Join(dir, "hookinbox.yaml")
	if err := os.WriteFile(cfgPath, []byte(s.config(dbURL, "http://"+o.SinkAddr, o.Timing)), 0o644); err != nil {
		return nil, err
	}
	env := []string{secretEnv + "=whsec_chaos_" + s.Name}
	if out, err := command(ctx, o.Bin, env, "migrate", "--config", cfgPath); err != nil {
		return nil, fmt.Errorf("hookinbox migrate: %w: %s", err, out)
	}
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := install(ctx, pool, o); err != nil {
		return nil, err
	}

	sink := &Sink{FailRate: o.SinkFailRate, SlowRate: o.SinkSlowRate, SlowFor: parseDuration(o.Timing.DeliveryTimeout) + 500*time.Millisecond}
	ln, err := net.Listen("tcp", o.SinkAddr)
	if err != nil {
		return nil, fmt.Errorf("error listening for the sink: %w", err)
	}
	sinkSrv := &http.Server{Handler: sink}
	go func() { _ = sinkSrv.Serve(ln) }()
	defer sinkSrv.Close()

	procs, receivers, err := startProcs(s, o, dir, cfgPath, env)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range procs {
			p.Stop(10 * time.Second)
			p.Log.Close()
		}
	}()
	if err := waitReady(ctx, procs); err != nil {
		return nil, err
	}

	w := NewWorkload(WorkloadConfig{
		Prefix: s.Name, Invoices: o.Invoices, Endpoints: s.Endpoints,
		SecondObjectShare: o.SecondObjectShare, Spread: o.Spread, Rand: r,
	})
	fmt.Fprintf(o.Log, "chaos: %s: %d invoices, %d events, %d deliveries over %s, %d senders, %d kills, %d graceful restarts, %d pauses, %d PostgreSQL stops\n",
		s.Name, len(w.Facts), len(w.Events), len(w.Deliveries), o.Spread, o.Senders, o.Kills, o.Restarts, o.Pauses, o.PGStops)

	sender := &Sender{
		Receivers:   func() string { return "http://" + receivers[rand.IntN(len(receivers))] },
		Secret:      "whsec_chaos_" + s.Name,
		Concurrency: o.Senders,
		Timeout:     10 * time.Second,
	}
	var chaos sync.WaitGroup
	pgStops := 0
	chaosCtx, stopChaos := context.WithCancel(ctx)
	defer stopChaos()
	var chaosErr error
	// Each fault has its schedule and its own source of randomness: they run at once.
	killAt, killRand := schedule(r, o.Kills, o.Spread, 0.03, 0.97), rand.New(rand.NewPCG(r.Uint64(), 1))
	pauseAt, pauseRand := schedule(r, o.Pauses, o.Spread, 0.1, 0.8), rand.New(rand.NewPCG(r.Uint64(), 2))
	pgAt, pgRand := schedule(r, o.PGStops, o.Spread, 0.15, 0.85), rand.New(rand.NewPCG(r.Uint64(), 3))
	termAt, termRand := schedule(r, o.Restarts, o.Spread, 0.05, 0.9), rand.New(rand.NewPCG(r.Uint64(), 4))
	pauseFor := max(parseDuration(o.Timing.WorkerLease), parseDuration(o.Timing.OutboxLease)) + time.Second
	chaos.Go(func() { killServers(chaosCtx, procs, killAt, killRand) })
	chaos.Go(func() { restartServers(chaosCtx, procs, termAt, termRand) })
	chaos.Go(func() { pauseServers(chaosCtx, procs, pauseAt, pauseFor, pauseRand) })
	chaos.Go(func() { pgStops, chaosErr = stopPostgres(chaosCtx, o.Postgres, pool, pgAt, pgRand) })
	sendCtx, cancelSend := context.WithTimeout(ctx, o.Spread+3*time.Minute)
	acks := sender.Send(sendCtx, w)
	cancelSend()
	chaos.Wait()
	if chaosErr != nil {
		return nil, chaosErr
	}
	fmt.Fprintf(o.Log, "chaos: %s: every delivery answered 2xx or given up after %s; draining\n", s.Name, time.Since(started).Round(time.Second))
	drainErr := drain(ctx, pool, o.Drain)
	for _, p := range procs {
		p.Stop(10 * time.Second)
	}

	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	findings, err := Check(ctx, pool, w, &Observed{
		Acks: acks, Sink: sink.Deliveries(), BillingSink: s.billingSink(), OwnExits: ownExits(procs),
		Logs: logs, Canaries: []string{"whsec_chaos_" + s.Name, PayloadMarker},
	})
	if err != nil {
		return nil, err
	}
	if drainErr != nil {
		fmt.Fprintf(o.Log, "chaos: %s: %v\n", s.Name, drainErr)
	}
	rep := &Report{Scenario: s.Name, Findings: findings, Figures: map[string]int{}, Elapsed: time.Since(started)}
	fig := rep.Figures
	fig[FigInvoices], fig[FigEvents], fig[FigDeliveries] = len(w.Facts), len(w.Events), len(w.Deliveries)
	fig[FigAttempts], fig[FigAnswers5xx], fig[FigAnswersError] = acks.Attempts, acks.Answers["5xx"], acks.Answers["error"]
	for _, outcomes := range acks.ByEvent {
		fig[FigDuplicates] += outcomes["duplicate"]
		fig[FigAccepted] += outcomes["accepted"]
	}
	for _, p := range procs {
		c := p.Counts()
		fig[FigStarts] += c.Starts
		fig[FigKills] += c.Kills
		fig[FigPauses] += c.Pauses
		fig[FigTerms] += c.Terminations
	}
	fig[FigPGStops] = pgStops
	deliveries := sink.Deliveries()
	fig[FigSinkDeliveries], fig[FigSameKey], fig[FigSinkFailures] = len(deliveries), RedeliveredSameKey(deliveries), sink.Failed()
	c, err := readCounters(ctx, pool)
	if err != nil {
		return nil, err
	}
	fig[FigCalls], fig[FigFailures], fig[FigSlow] = int(c[0]), int(c[1]), int(c[2])
	return rep, nil
}

// install brings billing's tables (a forward-only configuration does not migrate
// them) and the harness's triggers, and sets the fault rates.
func install(ctx context.Context, pool *pgxpool.Pool, o *Options) error {
	if err := billing.Migrate(ctx, pgxdriver.New(pool)); err != nil {
		return fmt.Errorf("error migrating billing: %w", err)
	}
	if _, err := pool.Exec(ctx, faultsSQL); err != nil {
		return fmt.Errorf("error installing the faults: %w", err)
	}
	slow := parseDuration(o.Timing.StatementTimeout).Seconds() * 0.9
	if _, err := pool.Exec(ctx, `UPDATE chaos_knobs SET fail_rate = $1, slow_rate = $2, slow_seconds = $3`,
		o.FailRate, o.SlowRate, slow); err != nil {
		return fmt.Errorf("error setting the fault rates: %w", err)
	}
	return nil
}
