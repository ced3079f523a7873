package chaos

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	_ "embed"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/internal/sign"
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
	// NetLatency, NetBlackholes and NetResets are the numbers of latency spikes,
	// blackholes past the leases and connection resets per scenario, alternately on a
	// process's link to PostgreSQL and on the dispatchers' link to the sink;
	// CommitCuts the number of COMMIT answers cut (alternately of a receiving
	// transaction and of any that wrote); LateClaims the number of claims (of
	// receipts or outbox messages) whose answer is held past the lease, which makes
	// their holder a zombie; LateResults the number of statements recording an outbox
	// delivery's result held on their way past the lease.
	NetLatency, NetBlackholes, NetResets, CommitCuts, LateClaims, LateResults int
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
	FigInvoices        = "invoices (SendGrid: messages)"
	FigEvents          = "events"
	FigDeliveries      = "deliveries (requests, each sent until 2xx)"
	FigBatches         = "of which SendGrid batches"
	FigAttempts        = "attempts"
	FigKills           = "server SIGKILLs"
	FigStarts          = "server starts"
	FigPauses          = "server SIGSTOPs past the leases"
	FigTerms           = "server graceful restarts (SIGTERM)"
	FigPGStops         = "PostgreSQL immediate stops"
	FigCalls           = "handler calls"
	FigFailures        = "handler failures injected"
	FigSlow            = "slow handlers injected"
	FigSinkFailures    = "sink failures injected"
	FigSinkDeliveries  = "sink deliveries"
	FigSameKey         = "redelivered under the same key"
	FigAnswers503      = "answers 503"
	FigAnswers500      = "answers 500"
	FigAnswersError    = "attempts without an answer"
	FigDuplicates      = "answered duplicate"
	FigAccepted        = "answered accepted"
	FigNetLatencyDB    = "latency spikes, database links"
	FigNetLatencySink  = "latency spikes, sink link"
	FigNetHoldDB       = "blackholes past the lease, database links"
	FigNetHoldSink     = "blackholes past the lease, sink link"
	FigNetResetDB      = "connections reset, database links"
	FigNetResetSink    = "connections reset, sink link"
	FigCutsReceiving   = "COMMIT answers cut, receiving transactions"
	FigCutsOther       = "COMMIT answers cut, other transactions"
	FigLateClaims      = "claim answers held past the lease"
	FigLateResults     = "outbox results held on their way past the lease"
	FigCutReceipts     = "receipts those receiving cuts committed"
	FigCut5xx          = "their requests in flight answered 5xx"
	FigCutNoAnswer     = "their requests in flight without an answer"
	FigCut2xx          = "their requests in flight answered 2xx"
	FigTakeoversInbox  = "lease takeovers, receipts"
	FigTakeoversOutbox = "lease takeovers, outbox messages"
	FigZombieAttempts  = "zombie attempts: receipt found processed"
	FigStaleSink       = "zombie deliveries refused by the sink"
	FigStaleMarks      = "stale-token marks refused (outbox)"
)

// Figures lists the figures in print order.
var Figures = []string{FigInvoices, FigEvents, FigDeliveries, FigBatches, FigAttempts, FigAnswers503, FigAnswers500,
	FigAnswersError, FigAccepted, FigDuplicates, FigKills, FigTerms, FigStarts, FigPauses, FigPGStops,
	FigNetLatencyDB, FigNetLatencySink, FigNetHoldDB, FigNetHoldSink, FigNetResetDB, FigNetResetSink,
	FigCutsReceiving, FigCutsOther, FigCutReceipts, FigCut5xx, FigCutNoAnswer, FigCut2xx,
	FigCalls, FigFailures, FigSlow, FigSinkFailures, FigSinkDeliveries, FigSameKey,
	FigLateClaims, FigLateResults, FigTakeoversInbox, FigTakeoversOutbox, FigZombieAttempts, FigStaleSink, FigStaleMarks}

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

	// The sink, behind its own link.
	sink := &Sink{SlowRate: o.SinkSlowRate, SlowFor: parseDuration(o.Timing.DeliveryTimeout) + 500*time.Millisecond}
	if o.SinkFailRate > 0 {
		sink.FailEvery = max(1, int(math.Round(1/o.SinkFailRate)))
		sink.FailOffset = r.IntN(sink.FailEvery)
	}
	ln, err := net.Listen("tcp", o.SinkAddr)
	if err != nil {
		return nil, fmt.Errorf("error listening for the sink: %w", err)
	}
	sinkSrv := &http.Server{Handler: sink}
	go func() { _ = sinkSrv.Serve(ln) }()
	defer sinkSrv.Close()
	sinkLink := &Proxy{Name: "sink", Target: o.SinkAddr}
	if err := sinkLink.Start(); err != nil {
		return nil, err
	}
	defer sinkLink.Close()

	sendgridKey, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		return nil, err
	}
	sendgridPublic, err := sign.SendGridPublicKey(sendgridKey)
	if err != nil {
		return nil, err
	}
	cfg := func(url string) string {
		return s.config(url, "http://"+sinkLink.Addr(), o.Timing, sendgridPublic)
	}
	// Migrations run directly, not through a link.
	cfgPath := filepath.Join(dir, "hookinbox.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg(dbURL)), 0o644); err != nil {
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

	procs, links, receivers, err := startProcs(s, o, dir, cfg, env, dbName)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range procs {
			p.Stop(10 * time.Second)
			p.Log.Close()
		}
		for _, l := range links {
			l.Close()
		}
	}()
	if err := waitReady(ctx, procs); err != nil {
		return nil, err
	}

	w := NewWorkload(WorkloadConfig{
		Prefix: s.Name, Invoices: o.Invoices, Endpoints: s.Endpoints,
		SecondObjectShare: o.SecondObjectShare, Spread: o.Spread, Rand: r,
	})
	batches := 0
	for _, d := range w.Deliveries {
		if d.Endpoint().Batched() {
			batches++
		}
	}
	fmt.Fprintf(o.Log, "chaos: %s: %d invoices, %d events, %d deliveries over %s, %d senders, %d kills, %d graceful restarts, %d pauses, %d PostgreSQL stops, %d latency spikes, %d blackholes, %d resets, %d COMMIT cuts, %d late claims, %d late results\n",
		s.Name, len(w.Facts), len(w.Events), len(w.Deliveries), o.Spread, o.Senders, o.Kills, o.Restarts, o.Pauses, o.PGStops,
		o.NetLatency, o.NetBlackholes, o.NetResets, o.CommitCuts, o.LateClaims, o.LateResults)

	sender := &Sender{
		Receivers: func() string { return "http://" + receivers[rand.IntN(len(receivers))] },
		Signers: map[string]sign.Signer{
			"stripe": sign.Stripe("whsec_chaos_" + s.Name), "sendgrid": sign.SendGrid(sendgridKey),
		},
		Concurrency: o.Senders,
		Timeout:     10 * time.Second,
	}
	pauseFor := o.Timing.pastLeases()
	nf := &netFaults{db: links, sink: sinkLink}
	for n, p := range procs {
		if p.Receives {
			nf.receive = append(nf.receive, links[n])
		}
		if p.Dispatches {
			nf.dispatch = append(nf.dispatch, links[n])
		}
	}
	// Longer than serve's 3 s bound on the stats it reads for /metrics.
	metrics := &http.Client{Timeout: 10 * time.Second}
	fails := &failures{}
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
	latAt, latRand := schedule(r, o.NetLatency, o.Spread, 0.05, 0.9), rand.New(rand.NewPCG(r.Uint64(), 5))
	holdAt, holdRand := schedule(r, o.NetBlackholes, o.Spread, 0.1, 0.8), rand.New(rand.NewPCG(r.Uint64(), 6))
	resetAt, resetRand := schedule(r, o.NetResets, o.Spread, 0.05, 0.95), rand.New(rand.NewPCG(r.Uint64(), 7))
	cutAt, cutRand := schedule(r, o.CommitCuts, o.Spread, 0.1, 0.7), rand.New(rand.NewPCG(r.Uint64(), 8))
	lateAt, lateRand := schedule(r, o.LateClaims, o.Spread, 0.05, 0.7), rand.New(rand.NewPCG(r.Uint64(), 9))
	resultAt, resultRand := schedule(r, o.LateResults, o.Spread, 0.05, 0.7), rand.New(rand.NewPCG(r.Uint64(), 10))
	scrapeCtx, stopScraping := context.WithCancel(ctx)
	defer stopScraping()
	var scraping sync.WaitGroup
	scraping.Go(func() { scrapeAll(scrapeCtx, procs, metrics) })
	chaos.Go(func() { killServers(chaosCtx, procs, killAt, killRand, fails, metrics) })
	chaos.Go(func() { restartServers(chaosCtx, procs, termAt, termRand, fails, metrics) })
	chaos.Go(func() { pauseServers(chaosCtx, procs, pauseAt, pauseFor, pauseRand, fails) })
	chaos.Go(func() { pgStops, chaosErr = stopPostgres(chaosCtx, o.Postgres, pool, pgAt, pgRand) })
	chaos.Go(func() { nf.latency(chaosCtx, latAt, latRand) })
	chaos.Go(func() { nf.blackholes(chaosCtx, holdAt, pauseFor, holdRand) })
	chaos.Go(func() { nf.resets(chaosCtx, resetAt, resetRand) })
	chaos.Go(func() { nf.cuts(chaosCtx, cutAt, cutRand) })
	chaos.Go(func() { nf.lateClaims(chaosCtx, lateAt, lateRand) })
	chaos.Go(func() { nf.lateResults(chaosCtx, resultAt, resultRand) })
	sendCtx, cancelSend := context.WithTimeout(ctx, o.Spread+3*time.Minute)
	acks := sender.Send(sendCtx, w)
	cancelSend()
	chaos.Wait()
	if chaosErr != nil {
		return nil, chaosErr
	}
	fmt.Fprintf(o.Log, "chaos: %s: every delivery answered 2xx or given up after %s; draining\n", s.Name, time.Since(started).Round(time.Second))
	drainErr := drain(ctx, pool, o.Drain)
	stopScraping()
	scraping.Wait()
	for _, p := range procs {
		p.Scrape(ctx, metrics)
		p.Stop(10 * time.Second)
	}

	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	var cuts []Cut
	for _, l := range links {
		cuts = append(cuts, l.Cuts()...)
	}
	findings, err := Check(ctx, pool, w, &Observed{
		Acks: acks, Sink: sink.Deliveries(), BillingSink: s.billingSink(), OwnExits: ownExits(procs),
		Logs: logs, Canaries: []string{"whsec_chaos_" + s.Name, PayloadMarker}, SinkHighest: sink.Highest(),
	})
	if err != nil {
		return nil, err
	}
	cutFig, err := CheckCuts(ctx, pool, findings, w, acks, cuts)
	if err != nil {
		return nil, err
	}
	for _, e := range fails.list() {
		findings.add(CheckHarness, "%s", e)
	}
	if drainErr != nil {
		fmt.Fprintf(o.Log, "chaos: %s: %v\n", s.Name, drainErr)
	}
	rep := &Report{Scenario: s.Name, Findings: findings, Figures: map[string]int{}, Elapsed: time.Since(started)}
	fig := rep.Figures
	fig[FigInvoices], fig[FigEvents], fig[FigDeliveries], fig[FigBatches] = len(w.Facts), len(w.Events), len(w.Deliveries), batches
	fig[FigAttempts], fig[FigAnswers503], fig[FigAnswers500], fig[FigAnswersError] = acks.Attempts, acks.Answers["503"], acks.Answers["500"], acks.Answers["error"]
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
		fig[FigZombieAttempts] += p.Scraped(FigZombieAttempts)
		fig[FigStaleMarks] += p.Scraped(FigStaleMarks)
	}
	fig[FigPGStops] = pgStops
	for k, v := range nf.counts {
		fig[k] = v
	}
	for _, l := range links {
		fig[FigLateClaims] += l.LateClaims()
		fig[FigLateResults] += l.LateResults()
	}
	for _, c := range cuts {
		if c.Receiving {
			fig[FigCutsReceiving]++
		} else {
			fig[FigCutsOther]++
		}
	}
	fig[FigCutReceipts], fig[FigCut5xx], fig[FigCutNoAnswer], fig[FigCut2xx] = cutFig.Receipts, cutFig.Answered5xx, cutFig.NoAnswer, cutFig.Answer2xx
	deliveries := sink.Deliveries()
	fig[FigSinkDeliveries], fig[FigSameKey], fig[FigSinkFailures] = len(deliveries), RedeliveredSameKey(deliveries), sink.Failed()
	fig[FigStaleSink] = len(sink.Stale())
	c, err := readCounters(ctx, pool)
	if err != nil {
		return nil, err
	}
	fig[FigCalls], fig[FigFailures], fig[FigSlow] = int(c[0]), int(c[1]), int(c[2])
	var inboxTakeovers, outboxTakeovers int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'inbox'), count(*) FILTER (WHERE kind = 'outbox') FROM chaos_takeovers`).
		Scan(&inboxTakeovers, &outboxTakeovers); err != nil {
		return nil, fmt.Errorf("error counting the lease takeovers: %w", err)
	}
	fig[FigTakeoversInbox], fig[FigTakeoversOutbox] = inboxTakeovers, outboxTakeovers
	checkFaults(findings, o, fig, sinkLink != nil)
	return rep, nil
}

// checkFaults counts, as CheckNoFault, every kind of fault the options asked for
// that never happened: a run without its faults proves nothing.
func checkFaults(f Findings, o *Options, fig map[string]int, sink bool) {
	asked := []struct {
		n   int
		fig string
	}{
		{o.Kills, FigKills}, {o.Restarts, FigTerms}, {o.Pauses, FigPauses}, {o.PGStops, FigPGStops},
		{rate(o.FailRate), FigFailures}, {rate(o.SinkFailRate), FigSinkFailures},
		{o.NetLatency, FigNetLatencyDB}, {o.NetBlackholes, FigNetHoldDB}, {o.NetResets, FigNetResetDB},
		{o.CommitCuts, FigCutsReceiving}, {o.CommitCuts - 1, FigCutsOther}, {o.LateClaims, FigLateClaims}, {o.LateResults, FigLateResults},
	}
	if sink {
		asked = append(asked, []struct {
			n   int
			fig string
		}{{o.NetLatency - 1, FigNetLatencySink}, {o.NetBlackholes - 1, FigNetHoldSink}, {o.NetResets - 1, FigNetResetSink}}...)
	}
	for _, a := range asked {
		if a.n > 0 && fig[a.fig] == 0 {
			f.add(CheckNoFault, "%s: asked for, none happened", a.fig)
		}
	}
}

func rate(r float64) int {
	if r > 0 {
		return 1
	}
	return 0
}

// Audit installs faults.sql's triggers in a database that `hookinbox migrate` made
// (with billing's tables), with every fault rate at 0: they inject nothing, and
// count. The outage and failover tests read chaos_applied (every committed
// application of a billing handler, by the status it writes) and chaos_processed
// (every commit that marks a receipt processed), where a double shows although the
// primary keys and the ledger's unique key hide it from the tables themselves.
func Audit(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}) error {
	if _, err := db.Exec(ctx, faultsSQL); err != nil {
		return fmt.Errorf("error installing the audit triggers: %w", err)
	}
	return nil
}

// install brings billing's tables (a forward-only configuration does not migrate
// them) and the harness's triggers, and sets the fault rates.
func install(ctx context.Context, pool *pgxpool.Pool, o *Options) error {
	if err := billing.Migrate(ctx, pgxdriver.New(pool)); err != nil {
		return fmt.Errorf("error migrating billing: %w", err)
	}
	if err := Audit(ctx, pool); err != nil {
		return err
	}
	slow := parseDuration(o.Timing.StatementTimeout).Seconds() * 0.9
	if _, err := pool.Exec(ctx, `UPDATE chaos_knobs SET fail_rate = $1, slow_rate = $2, slow_seconds = $3`,
		o.FailRate, o.SlowRate, slow); err != nil {
		return fmt.Errorf("error setting the fault rates: %w", err)
	}
	return nil
}
