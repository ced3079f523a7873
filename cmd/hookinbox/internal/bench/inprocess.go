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

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/internal/sign"
)

// inProcess is the server of a run in this process, and what its modes need of it.
type inProcess struct {
	cfg     *config.Config
	backend *server.Backend
	metrics *server.Metrics
	logger  *slog.Logger
	// addrs receives the address Server.Run listens on.
	addrs <-chan string
	obs   *drainObserver
	db    *runDB
	// sink is forward's destination.
	sink sink
}

// runInProcess runs a server in this process on a database of the run's own and
// measures c.Mode against it.
func runInProcess(ctx context.Context, c *Config, r *Report, p *progress) error {
	r.Target = "in-process"
	s := &inProcess{}
	spec := serverSpec{mode: c.Mode, provider: c.Provider, workers: c.Workers, dispatchers: c.Dispatchers}
	if c.Mode == ModeForward || c.Mode == ModeDispatch {
		var err error
		if s.sink, err = startSink(ctx, c); err != nil {
			return err
		}
		defer s.sink.close()
		spec.forward = s.sink.forward()
		if c.Sink == SinkNATS {
			spec.natsURL = c.NATSURL
		}
	}
	cfg, secret, err := generatedConfig(spec)
	if err != nil {
		return err
	}
	s.cfg = cfg
	if c.AcceptFlushers > 0 {
		cfg.Accept.Flushers = c.AcceptFlushers
		r.Settings.AcceptFlushers = c.AcceptFlushers
	}
	if c.SyncFlushers > 0 {
		cfg.Sync.Flushers = c.SyncFlushers
		r.Settings.SyncFlushers = c.SyncFlushers
	}
	if c.Mode == ModeDrain || c.Mode == ModeForward || c.Mode == ModeMixed {
		r.Settings.Workers = c.Workers
	}
	if c.Mode == ModeForward || c.Mode == ModeDispatch {
		r.Settings.Dispatchers = c.Dispatchers
	}
	signer, err := sign.For(c.Provider, []string{secret}, nil)
	if err != nil {
		return err
	}
	gen, err := newEventGen(c.TemplateFunc, c.Provider, nil)
	if err != nil {
		return err
	}
	addrs := make(chan string, 1)
	s.addrs = addrs
	logger, closeLog, err := serverLogger(c.ServerLog, addrs)
	if err != nil {
		return err
	}
	defer closeLog()
	s.logger = logger

	bdb, err := openRunDB(ctx, c, r)
	if err != nil {
		return err
	}
	defer bdb.close()
	s.db = bdb
	if bdb.admin != nil {
		r.Settings.readPostgres(ctx, bdb.admin, bdb.db.URL)
	}

	s.metrics = server.NewMetrics()
	s.obs = &drainObserver{Observer: s.metrics}
	backend, err := server.Open(ctx, bdb.db, cfg, server.OpenOptions{
		Logger: logger, Observer: s.obs, Dispatch: true, OutboxObserver: s.metrics,
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
	s.backend = backend
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
	s.checkpoint(ctx, r)
	switch c.Mode {
	case ModeSync:
		err = rn.runSync(ctx, s, r, p)
	case ModeForward:
		err = rn.runForward(ctx, s, r, p)
	case ModeMixed:
		err = rn.runMixed(ctx, s, r, p)
	case ModeAccept:
		err = rn.runAccept(ctx, s, r, p)
	case ModeDrain:
		err = rn.runDrain(ctx, s, r, p)
	case ModeDispatch:
		err = rn.runDispatch(ctx, s, r, p)
	}
	if err != nil {
		return err
	}
	closeBackend()
	r.Groups = s.obs.groupReports()

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

// checkpoint runs CHECKPOINT before a measured phase, on PostgreSQL.
func (s *inProcess) checkpoint(ctx context.Context, r *Report) {
	if s.db.admin != nil {
		r.Settings.checkpoint(ctx, s.db.admin)
	}
}

// startSink starts forward's destination, c.Sink.
func startSink(ctx context.Context, c *Config) (sink, error) {
	if c.Sink == SinkNATS {
		return startNATSSink(ctx, c.NATSURL)
	}
	return startRecordingSink()
}

// serve starts Server.Run, the endpoints, the workers and the outbox dispatcher as
// serve runs them, and returns its address and what stops it. The server stops when
// the measurement is over, not at the first Ctrl-C: what is in flight is answered
// and counted.
func (s *inProcess) serve(ctx context.Context) (addr string, stop func() error, err error) {
	runCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- server.New(s.cfg, s.backend, s.metrics, s.logger).Run(runCtx) }()
	select {
	case addr = <-s.addrs:
	case err := <-done:
		stopServer()
		return "", nil, fmt.Errorf("the server stopped before listening: %w", err)
	case <-time.After(30 * time.Second):
		stopServer()
		<-done
		return "", nil, errors.New("the server did not listen within 30 s")
	}
	return addr, sync.OnceValue(func() error {
		stopServer()
		if err := <-done; err != nil {
			return fmt.Errorf("the server's shutdown: %w", err)
		}
		return nil
	}), nil
}

// endpointURL is the URL of the generated endpoint name on the server at addr.
func (s *inProcess) endpointURL(addr, name string) string {
	for _, ep := range s.cfg.Endpoints {
		if ep.Name == name {
			return "http://" + addr + ep.Path
		}
	}
	panic("bench: no generated endpoint " + name)
}

// runner is what every mode's sending needs.
type runner struct {
	c      *Config
	signer sign.Signer
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

// runSync measures the sync endpoint against Server.Run.
func (rn *runner) runSync(ctx context.Context, s *inProcess, r *Report, p *progress) error {
	addr, stop, err := s.serve(ctx)
	if err != nil {
		return err
	}
	defer stop()
	spec, answered := rn.spec(s.endpointURL(addr, endpointName))
	p.track(rn.c.Mode, "requests", answered.Load)
	res := runLoad(ctx, spec)
	p.untrack()
	r.setLoad(res)
	r.setRate(r.RequestRate, "req/s")
	return stop()
}

// serveEndpoints serves cfg's endpoints on 127.0.0.1 with serve's HTTP timeouts,
// without Server.Run's workers and dispatcher: for accept and drain's backlog, which
// are measured with no worker running.
func serveEndpoints(cfg *config.Config, backend *server.Backend, logger *slog.Logger) (string, func(), error) {
	mux := http.NewServeMux()
	for _, ep := range cfg.Endpoints {
		mux.Handle(ep.Path, backend.Inbox.Endpoint(ep.Name))
	}
	base, shutdown, err := serveLocal(mux, logger)
	if err != nil {
		return "", nil, err
	}
	return base + cfg.Endpoints[0].Path, shutdown, nil
}

// serveLocal serves h on a free port of 127.0.0.1 with serve's HTTP timeouts, and
// returns its base URL and what shuts it down (once, however often it is called).
func serveLocal(h http.Handler, logger *slog.Logger) (string, func(), error) {
	srv := &http.Server{
		Handler:           h,
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
	return "http://" + ln.Addr().String(), sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}), nil
}

// runAccept measures async accepts with no worker running.
func (rn *runner) runAccept(ctx context.Context, s *inProcess, r *Report, p *progress) error {
	url, shutdown, err := serveEndpoints(s.cfg, s.backend, s.logger)
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
