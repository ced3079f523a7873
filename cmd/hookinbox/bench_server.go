package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// benchEndpoint is the generated config's endpoint name.
const benchEndpoint = "bench"

// benchDB is the database of a run: for PostgreSQL, a schema of the run's own.
type benchDB struct {
	db config.Database // what the server opens: on PostgreSQL, search_path set to schema
	// url is the database as given, without the schema, for pgbench and its schema.
	url string
	// admin creates, counts and drops schemas; nil on SQLite.
	admin  *pgxpool.Pool
	schema string
	keep   bool
}

// openBenchDB connects to f's database and, on PostgreSQL, creates the run's schema.
func openBenchDB(ctx context.Context, f *benchFlags, r *benchReport) (*benchDB, error) {
	raw := f.databaseURL
	if raw == "" {
		raw = benchDefaultDatabase
	}
	db, err := config.ParseDatabaseURL(raw, config.SourceFlag)
	if err != nil {
		return nil, usagef("--database-url: %v", err)
	}
	r.Database = db.String()
	if db.Driver == config.DriverSQLite {
		r.Settings.Database = "sqlite"
		return &benchDB{db: db, keep: true}, nil
	}
	r.Settings.Database = "postgres"
	admin, err := connectAdmin(ctx, raw)
	if err != nil {
		return nil, err
	}
	b := &benchDB{url: raw, admin: admin, schema: f.schema, keep: f.keep || f.schema != ""}
	create := "CREATE SCHEMA IF NOT EXISTS "
	if b.schema == "" {
		b.schema = "hookinbox_bench_" + randomHex(4)
		create = "CREATE SCHEMA "
	}
	if _, err := admin.Exec(ctx, create+pgx.Identifier{b.schema}.Sanitize()); err != nil {
		admin.Close()
		return nil, fmt.Errorf("error creating schema %s: %w", b.schema, err)
	}
	r.Schema, r.SchemaKept = b.schema, b.keep
	if b.db, err = schemaDatabase(raw, b.schema); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// connectAdmin opens a small pool on the database as given, and checks that it answers.
func connectAdmin(ctx context.Context, raw string) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, usagef("--database-url: %v", err)
	}
	pcfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to %s: %w", config.Database{Driver: config.DriverPostgres, URL: raw}, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting to %s (bench needs a PostgreSQL server: --database-url postgres://..., or sqlite:PATH): %w",
			config.Database{Driver: config.DriverPostgres, URL: raw}, err)
	}
	return pool, nil
}

// schemaDatabase is raw with search_path set to schema, which pgx sends as a run-time
// parameter of every connection.
func schemaDatabase(raw, schema string) (config.Database, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return config.Database{}, usagef("--database-url: cannot parse it")
	}
	q := u.Query()
	q.Set("search_path", schema)
	if q.Get("application_name") == "" {
		q.Set("application_name", "hookinbox-bench")
	}
	u.RawQuery = q.Encode()
	return config.ParseDatabaseURL(u.String(), config.SourceFlag)
}

// close drops the run's schema unless it is kept, and closes the pool. It runs after
// an interrupt too, so it has a context of its own.
func (b *benchDB) close() {
	if b.admin == nil {
		return
	}
	if !b.keep {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, _ = b.admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{b.schema}.Sanitize()+" CASCADE")
		cancel()
	}
	b.admin.Close()
}

// benchConfig is the generated configuration of a run: one endpoint for mode, its
// secret random and read from a variable only this config sees. sink is the forward
// handler's URL.
func benchConfig(mode, provider string, workers, dispatchers int, sink string) (*config.Config, string, error) {
	secret := "whsec_bench_" + randomHex(16)
	epMode, handler := "sync", "billing"
	switch mode {
	case benchAccept, benchDrain:
		epMode = "async"
	case benchForward:
		epMode, handler = "async", "forward"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:0\nendpoints:\n")
	fmt.Fprintf(&b, "  - name: %s\n    path: /webhooks/%s\n    provider: %s\n    secrets_env: [%s]\n    mode: %s\n    handler: %s\n",
		benchEndpoint, provider, provider, benchEnvSecret, epMode, handler)
	if sink != "" {
		fmt.Fprintf(&b, "    forward: {url: %q}\n", sink)
	}
	fmt.Fprintf(&b, "worker: {concurrency: %d}\noutbox: {concurrency: %d}\nshutdown_timeout: 30s\n", workers, dispatchers)
	// Only the secret: HOOKINBOX_DATABASE_URL and HOOKINBOX_LISTEN must not redirect
	// the generated config.
	lookup := func(k string) (string, bool) {
		if k == benchEnvSecret {
			return secret, true
		}
		return "", false
	}
	cfg, err := config.Parse("(hookinbox bench's generated config)", []byte(b.String()),
		config.Options{ResolveSecrets: true, LookupEnv: lookup})
	if err != nil {
		// What the generated endpoint cannot give a provider: options (hmac's header).
		return nil, "", usagef("--provider %s: the generated endpoint has no options (send to a server configured for it with --url and --option): %v", provider, err)
	}
	return cfg, secret, nil
}

// benchLogger is the in-process server's logger: JSON lines, as serve writes them, to
// path or discarded, and the bound address of Server.Run's "listening" line sent on
// addr.
func benchLogger(path string, addr chan<- string) (*slog.Logger, func(), error) {
	var w io.Writer = io.Discard
	closeFn := func() {}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, usagef("--server-log: %v", err)
		}
		w, closeFn = f, func() { _ = f.Close() }
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})
	return slog.New(&listenCatcher{Handler: h, addr: addr}), closeFn, nil
}

// listenCatcher passes records on and sends the address of Server.Run's "hookinbox:
// listening" line, which is how serve reports the port of listen: 127.0.0.1:0.
type listenCatcher struct {
	slog.Handler
	addr chan<- string
}

func (h *listenCatcher) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "hookinbox: listening" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				select {
				case h.addr <- a.Value.String():
				default:
				}
				return false
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h *listenCatcher) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &listenCatcher{Handler: h.Handler.WithAttrs(attrs), addr: h.addr}
}

func (h *listenCatcher) WithGroup(name string) slog.Handler {
	return &listenCatcher{Handler: h.Handler.WithGroup(name), addr: h.addr}
}

// benchInProcess runs a server in this process on a database of the run's own and
// measures f.mode against it.
func (a *app) benchInProcess(ctx context.Context, f *benchFlags, r *benchReport, p *progress) error {
	r.Target = "in-process"
	var (
		sink *recordingSink
		err  error
	)
	if f.mode == benchForward {
		if sink, err = startRecordingSink(); err != nil {
			return err
		}
		defer sink.close()
	}
	sinkURL := ""
	if sink != nil {
		sinkURL = sink.url
	}
	cfg, secret, err := benchConfig(f.mode, f.provider, f.workers, f.dispatchers, sinkURL)
	if err != nil {
		return err
	}
	if f.acceptFlushers > 0 {
		cfg.Accept.Flushers = f.acceptFlushers
		r.Settings.AcceptFlushers = f.acceptFlushers
	}
	if f.syncFlushers > 0 {
		cfg.Sync.Flushers = f.syncFlushers
		r.Settings.SyncFlushers = f.syncFlushers
	}
	if f.mode == benchDrain || f.mode == benchForward {
		r.Settings.Workers = f.workers
	}
	if f.mode == benchForward {
		r.Settings.Dispatchers = f.dispatchers
	}
	signer, err := hookinboxtest.SignerFor(f.provider, []string{secret}, nil)
	if err != nil {
		return err
	}
	gen, err := newEventGen(f.provider, nil)
	if err != nil {
		return err
	}
	addrs := make(chan string, 1)
	logger, closeLog, err := benchLogger(f.serverLog, addrs)
	if err != nil {
		return err
	}
	defer closeLog()

	bdb, err := openBenchDB(ctx, f, r)
	if err != nil {
		return err
	}
	defer bdb.close()
	if bdb.admin != nil {
		r.Settings.readPostgres(ctx, bdb.admin, bdb.db.URL)
	}

	metrics := server.NewMetrics()
	obs := &drainObserver{Observer: metrics}
	backend, err := server.Open(ctx, bdb.db, cfg, server.OpenOptions{
		Logger: logger, Observer: obs, Dispatch: true, OutboxObserver: metrics,
	})
	if err == nil && backend.PoolMaxConns > 0 {
		r.Settings.PoolMaxConns = backend.PoolMaxConns // sized by serve's rule, not pgx's default
	}
	if err != nil {
		if errors.Is(err, server.ErrUnsupportedDatabase) {
			return &usageError{err}
		}
		return err
	}
	closed := false
	closeBackend := func() {
		if !closed {
			closed = true
			backend.Close()
		}
	}
	defer closeBackend()
	if _, err := backend.Migrate(ctx); err != nil {
		return fmt.Errorf("error migrating %s: %w", bdb.db, err)
	}

	lf := &loadFlags{f: f, signer: signer, gen: gen, cpu: newCPUMeter("bench (load generator and server)", bdb.url)}
	if bdb.admin != nil {
		r.Settings.checkpoint(ctx, bdb.admin)
	}
	switch f.mode {
	case benchSync, benchForward:
		err = lf.runServed(ctx, cfg, backend, metrics, logger, addrs, sink, r, p)
	case benchAccept:
		err = lf.runAccept(ctx, cfg, backend, logger, r, p)
	case benchDrain:
		err = lf.runDrain(ctx, cfg, backend, logger, obs, r, p)
	}
	if err != nil {
		return err
	}
	closeBackend()
	r.Groups = obs.groupReports()

	if bdb.admin != nil {
		r.After, err = countBenchPostgres(context.WithoutCancel(ctx), bdb.admin, bdb.schema)
	} else {
		r.After, err = countBenchSQLite(context.WithoutCancel(ctx), bdb.db.Path)
	}
	if err != nil {
		return err
	}
	if (f.mode == benchSync || f.mode == benchAccept) && ctx.Err() == nil {
		r.Pgbench = runPgbenchFor(ctx, f, bdb.admin, bdb.url, cfg, gen, &r.Settings)
	}
	return nil
}

// loadFlags is what every mode's sending needs.
type loadFlags struct {
	f      *benchFlags
	signer hookinboxtest.Signer
	gen    *eventGen
	cpu    *cpuMeter
}

func (l *loadFlags) spec(url string) (*loadSpec, *atomic.Int64) {
	done := &atomic.Int64{}
	return &loadSpec{
		client: newBenchClient(l.f.concurrency, l.f.requestTimeout), url: url, signer: l.signer, gen: l.gen,
		concurrency: l.f.concurrency, count: int64(l.f.count), duration: l.f.duration, duplicates: l.f.duplicates,
		done: done, cpu: l.cpu,
	}, done
}

// runServed measures sync or forward against Server.Run: the endpoint, the workers
// and the outbox dispatcher, as serve runs them.
func (l *loadFlags) runServed(ctx context.Context, cfg *config.Config, backend *server.Backend, metrics *server.Metrics,
	logger *slog.Logger, addrs <-chan string, sink *recordingSink, r *benchReport, p *progress,
) error {
	// The server stops when the measurement is over, not at the first Ctrl-C: what is
	// in flight is answered and counted.
	runCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	done := make(chan error, 1)
	go func() { done <- server.New(cfg, backend, metrics, logger).Run(runCtx) }()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		return fmt.Errorf("the server stopped before listening: %w", err)
	case <-time.After(30 * time.Second):
		return errors.New("the server did not listen within 30 s")
	}
	stop := func() error {
		stopServer()
		if err := <-done; err != nil {
			return fmt.Errorf("the server's shutdown: %w", err)
		}
		return nil
	}

	spec, answered := l.spec("http://" + addr + cfg.Endpoints[0].Path)
	var started sync.Map
	if sink != nil {
		spec.started = func(id string, at time.Time) { started.Store(id, at) }
	}
	p.track(l.f.mode, "requests", answered.Load)
	res := runLoad(ctx, spec)
	p.untrack()
	r.setLoad(res)
	if sink == nil {
		r.setRate(r.RequestRate, "req/s")
		return stop()
	}

	// forward: until every accepted event is delivered.
	want := res.Outcomes[string(hookinbox.OutcomeAccepted)]
	p.track("forward", "delivered", sink.delivered.Load)
	deadline := time.Now().Add(l.f.timeout)
	for sink.delivered.Load() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	p.untrack()
	if err := stop(); err != nil {
		return err
	}
	fr := sink.report(want, res.Start, &started)
	r.Forward = fr
	if fr.Delivered < want {
		r.Incomplete = fmt.Sprintf("%d of %d accepted events delivered within --timeout %s", fr.Delivered, want, l.f.timeout)
	}
	r.setRate(fr.Rate, "events/s")
	return nil
}

// serveEndpoints serves cfg's endpoints on 127.0.0.1 with serve's HTTP timeouts,
// without Server.Run's workers and dispatcher: for accept and drain's backlog, which
// are measured with no worker running.
func serveEndpoints(cfg *config.Config, backend *server.Backend, logger *slog.Logger) (string, func(), error) {
	mux := http.NewServeMux()
	for _, ep := range cfg.Endpoints {
		mux.Handle(ep.Path, backend.Inbox.Endpoint(ep.Name))
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: server.ReadHeaderTimeout,
		ReadTimeout:       server.ReadTimeout,
		WriteTimeout:      server.WriteTimeout,
		IdleTimeout:       server.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("error listening: %w", err)
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + cfg.Endpoints[0].Path, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// runAccept measures async accepts with no worker running.
func (l *loadFlags) runAccept(ctx context.Context, cfg *config.Config, backend *server.Backend, logger *slog.Logger, r *benchReport, p *progress) error {
	url, shutdown, err := serveEndpoints(cfg, backend, logger)
	if err != nil {
		return err
	}
	defer shutdown()
	spec, answered := l.spec(url)
	p.track(l.f.mode, "requests", answered.Load)
	res := runLoad(ctx, spec)
	p.untrack()
	r.setLoad(res)
	r.setRate(r.RequestRate, "req/s")
	return nil
}

// benchReceiver is the part of *hookinbox.Inbox, whatever its transaction type, that
// drain's --backlog receive calls.
type benchReceiver interface {
	Receive(ctx context.Context, ev hookinbox.Event) (hookinbox.Outcome, error)
}

// runDrain inserts a backlog with no worker running, then starts the workers and
// measures how fast they empty it.
func (l *loadFlags) runDrain(ctx context.Context, cfg *config.Config, backend *server.Backend, logger *slog.Logger,
	obs *drainObserver, r *benchReport, p *progress,
) error {
	var res *loadResult
	if l.f.backlog == "receive" {
		rcv, ok := backend.Inbox.(benchReceiver)
		if !ok {
			return errors.New("--backlog receive: the inbox has no Receive method")
		}
		done := &atomic.Int64{}
		p.track("backlog", "receipts", done.Load)
		endCPU := l.cpu.start("receipt")
		res = receiveBacklog(ctx, rcv, l.gen, l.f.count, l.f.concurrency, done)
		res.CPU = endCPU(res.Requests, 0)
		p.untrack()
	} else {
		url, shutdown, err := serveEndpoints(cfg, backend, logger)
		if err != nil {
			return err
		}
		spec, answered := l.spec(url)
		p.track("backlog", "requests", answered.Load)
		res = runLoad(ctx, spec)
		p.untrack()
		shutdown()
	}
	r.setLoad(res)
	backlog := res.Outcomes[string(hookinbox.OutcomeAccepted)]
	dr := &drainReport{Backlog: backlog, BacklogVia: l.f.backlog, Workers: l.f.workers}
	r.Drain = dr
	if ctx.Err() != nil || backlog == 0 {
		return nil
	}

	obs.expect(backlog)
	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	workDone := make(chan error, 1)
	endCPU := l.cpu.start("event")
	start := time.Now()
	go func() { workDone <- backend.Inbox.Run(workCtx) }()
	p.track("drain", "processed", obs.processed.Load)
	deadline := start.Add(l.f.timeout)
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
		r.Incomplete = fmt.Sprintf("%d of %d receipts processed within --timeout %s", dr.Processed, backlog, l.f.timeout)
	}
	r.setRate(dr.Rate, "events/s")
	return nil
}

// receiveBacklog records count new events on the bench endpoint through
// Inbox.Receive, concurrency at a time: drain's backlog without HTTP.
func receiveBacklog(ctx context.Context, rcv benchReceiver, gen *eventGen, count, concurrency int, done *atomic.Int64) *loadResult {
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
				out, err := rcv.Receive(context.WithoutCancel(ctx), hookinbox.Event{Endpoint: benchEndpoint, ID: ev.id, Type: ev.typ, Payload: ev.body})
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
func (o *drainObserver) groupReports() []groupReport {
	var out []groupReport
	for k, kind := range []string{hookinbox.GroupAccept, hookinbox.GroupSync} {
		c := &o.groups[k]
		if n := c.commits.Load(); n > 0 {
			out = append(out, groupReport{Kind: kind, Commits: n,
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
func (o *drainObserver) fill(dr *drainReport, start time.Time) {
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
		d := drainTenth{FromPercent: k * 10, ToPercent: (k + 1) * 10, Events: b - prevN, Seconds: round3(sec)}
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

// recordingSink is forward's receiver: it answers every delivery 200 and records the
// first delivery of each event.
type recordingSink struct {
	srv *http.Server
	url string

	delivered atomic.Int64 // distinct events

	mu           sync.Mutex
	first        map[string]time.Time
	redeliveries int64
}

func startRecordingSink() (*recordingSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("error listening for the forward sink: %w", err)
	}
	s := &recordingSink{url: "http://" + ln.Addr().String() + "/events", first: map[string]time.Time{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *recordingSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	now := time.Now()
	id := r.Header.Get("Hookinbox-Source-Event-Id")
	s.mu.Lock()
	if _, seen := s.first[id]; seen {
		s.redeliveries++
	} else {
		s.first[id] = now
		s.delivered.Add(1)
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// report is forward's figures: deliveries of the accepted events, the time from the
// first request to the last first delivery, and each event's latency from its
// request's start to its delivery.
func (s *recordingSink) report(want int64, loadStart time.Time, started *sync.Map) *forwardReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	fr := &forwardReport{Accepted: want, Delivered: s.delivered.Load(), Redeliveries: s.redeliveries}
	var last time.Time
	var lat []time.Duration
	for id, at := range s.first {
		if at.After(last) {
			last = at
		}
		if t0, ok := started.Load(id); ok {
			lat = append(lat, at.Sub(t0.(time.Time)))
		}
	}
	slices.Sort(lat)
	fr.EndToEnd = summarize(lat)
	if !last.IsZero() && fr.Delivered >= want {
		sec := last.Sub(loadStart).Seconds()
		fr.ElapsedSeconds = round3(sec)
		if sec > 0 {
			fr.Rate = round1(float64(fr.Delivered) / sec)
		}
	}
	return fr
}

func (s *recordingSink) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// dbCounts is what the run left in the database.
type dbCounts struct {
	Receipts        int64  `json:"receipts"`
	ReceiptsPending int64  `json:"receipts_pending"`
	LedgerEntries   *int64 `json:"ledger_entries,omitempty"`
	OutboxMessages  int64  `json:"outbox_messages"`
	OutboxPending   int64  `json:"outbox_pending"`
}

const sqlBenchCounts = `
SELECT (SELECT count(*) FROM %[1]shookinbox_inbox),
       (SELECT count(*) FROM %[1]shookinbox_inbox WHERE state = 'pending'),
       (SELECT count(*) FROM %[1]shookinbox_outbox),
       (SELECT count(*) FROM %[1]shookinbox_outbox WHERE state = 'pending')`

func countBenchPostgres(ctx context.Context, admin *pgxpool.Pool, schema string) (*dbCounts, error) {
	prefix := pgx.Identifier{schema}.Sanitize() + "."
	var c dbCounts
	if err := admin.QueryRow(ctx, fmt.Sprintf(sqlBenchCounts, prefix)).Scan(
		&c.Receipts, &c.ReceiptsPending, &c.OutboxMessages, &c.OutboxPending); err != nil {
		return nil, fmt.Errorf("error counting the run's rows: %w", err)
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, prefix+"ledger_entries").Scan(&exists); err != nil {
		return nil, fmt.Errorf("error counting the run's rows: %w", err)
	}
	if exists {
		var n int64
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+prefix+"ledger_entries").Scan(&n); err != nil {
			return nil, fmt.Errorf("error counting the run's rows: %w", err)
		}
		c.LedgerEntries = &n
	}
	return &c, nil
}

func countBenchSQLite(ctx context.Context, path string) (*dbCounts, error) {
	db, err := sqlitedriver.Open(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var c dbCounts
	if err := db.QueryRowContext(ctx, fmt.Sprintf(sqlBenchCounts, "")).Scan(
		&c.Receipts, &c.ReceiptsPending, &c.OutboxMessages, &c.OutboxPending); err != nil {
		return nil, fmt.Errorf("error counting the run's rows: %w", err)
	}
	var n int64
	switch err := db.QueryRowContext(ctx, "SELECT count(*) FROM ledger_entries").Scan(&n); {
	case err == nil:
		c.LedgerEntries = &n
	case !strings.Contains(err.Error(), "no such table"):
		return nil, fmt.Errorf("error counting the run's rows: %w", err)
	}
	return &c, nil
}
