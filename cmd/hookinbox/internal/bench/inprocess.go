package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// runInProcess runs a server in this process on a database of the run's own and
// measures c.Mode against it.
func runInProcess(ctx context.Context, c *Config, r *Report, p *progress) error {
	r.Target = "in-process"
	var (
		sink *recordingSink
		err  error
	)
	if c.Mode == ModeForward {
		if sink, err = startRecordingSink(); err != nil {
			return err
		}
		defer sink.close()
	}
	sinkURL := ""
	if sink != nil {
		sinkURL = sink.url
	}
	cfg, secret, err := generatedConfig(c.Mode, c.Provider, c.Workers, c.Dispatchers, sinkURL)
	if err != nil {
		return err
	}
	if c.AcceptFlushers > 0 {
		cfg.Accept.Flushers = c.AcceptFlushers
		r.Settings.AcceptFlushers = c.AcceptFlushers
	}
	if c.SyncFlushers > 0 {
		cfg.Sync.Flushers = c.SyncFlushers
		r.Settings.SyncFlushers = c.SyncFlushers
	}
	if c.Mode == ModeDrain || c.Mode == ModeForward {
		r.Settings.Workers = c.Workers
	}
	if c.Mode == ModeForward {
		r.Settings.Dispatchers = c.Dispatchers
	}
	signer, err := hookinboxtest.SignerFor(c.Provider, []string{secret}, nil)
	if err != nil {
		return err
	}
	gen, err := newEventGen(c.TemplateFunc, c.Provider, nil)
	if err != nil {
		return err
	}
	addrs := make(chan string, 1)
	logger, closeLog, err := serverLogger(c.ServerLog, addrs)
	if err != nil {
		return err
	}
	defer closeLog()

	bdb, err := openRunDB(ctx, c, r)
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
			return &UsageError{err}
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

	rn := &runner{c: c, signer: signer, gen: gen, cpu: newCPUMeter("bench (load generator and server)", bdb.url)}
	if bdb.admin != nil {
		r.Settings.checkpoint(ctx, bdb.admin)
	}
	switch c.Mode {
	case ModeSync, ModeForward:
		err = rn.runServed(ctx, cfg, backend, metrics, logger, addrs, sink, r, p)
	case ModeAccept:
		err = rn.runAccept(ctx, cfg, backend, logger, r, p)
	case ModeDrain:
		err = rn.runDrain(ctx, cfg, backend, logger, obs, r, p)
	}
	if err != nil {
		return err
	}
	closeBackend()
	r.Groups = obs.groupReports()

	if bdb.admin != nil {
		r.After, err = countPostgres(context.WithoutCancel(ctx), bdb.admin, bdb.schema)
	} else {
		r.After, err = countSQLite(context.WithoutCancel(ctx), bdb.db.Path)
	}
	if err != nil {
		return err
	}
	if (c.Mode == ModeSync || c.Mode == ModeAccept) && ctx.Err() == nil {
		r.Pgbench = runPgbench(ctx, c, bdb.admin, bdb.url, cfg, gen, &r.Settings)
		if ctx.Err() == nil {
			r.Naive = runNaive(ctx, c, bdb.admin, bdb.url, cfg, &r.Settings, p)
		}
	}
	return nil
}

// runner is what every mode's sending needs.
type runner struct {
	c      *Config
	signer hookinboxtest.Signer
	gen    *eventGen
	cpu    *cpuMeter
}

func (rn *runner) spec(url string) (*loadSpec, *atomic.Int64) {
	done := &atomic.Int64{}
	return &loadSpec{
		client: newBenchClient(rn.c.Concurrency, rn.c.RequestTimeout), url: url, signer: rn.signer, gen: rn.gen,
		concurrency: rn.c.Concurrency, count: int64(rn.c.Count), duration: rn.c.Duration, duplicates: rn.c.Duplicates,
		done: done, cpu: rn.cpu,
	}, done
}

// runServed measures sync or forward against Server.Run: the endpoint, the workers
// and the outbox dispatcher, as serve runs them.
func (rn *runner) runServed(ctx context.Context, cfg *config.Config, backend *server.Backend, metrics *server.Metrics,
	logger *slog.Logger, addrs <-chan string, sink *recordingSink, r *Report, p *progress,
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

	spec, answered := rn.spec("http://" + addr + cfg.Endpoints[0].Path)
	var started sync.Map
	if sink != nil {
		spec.started = func(id string, at time.Time) { started.Store(id, at) }
	}
	p.track(rn.c.Mode, "requests", answered.Load)
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
	deadline := time.Now().Add(rn.c.Timeout)
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
		r.Incomplete = fmt.Sprintf("%d of %d accepted events delivered within --timeout %s", fr.Delivered, want, rn.c.Timeout)
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
func (rn *runner) runAccept(ctx context.Context, cfg *config.Config, backend *server.Backend, logger *slog.Logger, r *Report, p *progress) error {
	url, shutdown, err := serveEndpoints(cfg, backend, logger)
	if err != nil {
		return err
	}
	defer shutdown()
	spec, answered := rn.spec(url)
	p.track(rn.c.Mode, "requests", answered.Load)
	res := runLoad(ctx, spec)
	p.untrack()
	r.setLoad(res)
	r.setRate(r.RequestRate, "req/s")
	return nil
}
