package server

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
)

// The default HTTP server timeouts (the config's http block sets them). They bound
// what a slow or malicious client can hold: headers must arrive within
// ReadHeaderTimeout, a body (at most max_body_bytes) within ReadTimeout. WriteTimeout
// covers the whole request including a sync handler's transaction; if it expires
// after commit the sender sees an error and its retry is a duplicate, so nothing is
// applied twice.
const (
	ReadHeaderTimeout = config.DefaultReadHeaderTimeout
	ReadTimeout       = config.DefaultReadTimeout
	WriteTimeout      = config.DefaultWriteTimeout
	IdleTimeout       = config.DefaultIdleTimeout
)

// statsCacheFor and statsTimeout bound the cost of a /metrics scrape.
const (
	statsCacheFor = 5 * time.Second
	statsTimeout  = 3 * time.Second
)

// ErrShutdownDeadline is returned by Run when in-flight requests, events or outbox
// deliveries did not finish within the shutdown timeout. Nothing acknowledged is
// lost: a request still in flight has not been answered 2xx, and an event or outbox
// message still in progress keeps its counted attempt and is claimed again when its
// lease ends.
var ErrShutdownDeadline = errors.New("shutdown deadline exceeded")

// Server serves a configuration: every endpoint on its path, /healthz, /readyz and
// /metrics, the workers and the outbox dispatcher — each of the three as the config's
// roles say.
type Server struct {
	cfg     *config.Config
	backend *Backend
	logger  *slog.Logger
	metrics *Metrics
	srv     *http.Server
	mux     *http.ServeMux
	budget  *bodyBudget

	// breakListener, for tests only, turns the listeners into one of their broken
	// variants (see listenerConfig).
	breakListener func(*listenerConfig)
	// main is the main listener once Serve has made it, for tests to observe.
	main atomic.Pointer[limitListener]
}

// New returns a server for cfg on backend. metrics must be the Observer the backend's
// inbox was opened with.
func New(cfg *config.Config, backend *Backend, metrics *Metrics, logger *slog.Logger) *Server {
	metrics.CollectStats(backend.Operator.Stats, statsCacheFor, statsTimeout, logger)
	metrics.CollectOutboxStats(backend.Outbox.Stats, statsCacheFor, statsTimeout, logger)
	metrics.CollectState(backend.CheckSchema, backend.Executor.ConsoleEndpointStates, cfg, statsCacheFor, statsTimeout, logger)
	metrics.SetRoles(cfg.Roles.List())
	limits := cfg.HTTP.WithDefaults()
	budget := newBodyBudget(limits, metrics, logger)
	mux := http.NewServeMux()
	gate := &schemaGate{backend: backend}
	if cfg.Roles.Has(config.RoleReceivers) {
		for _, ep := range cfg.Endpoints {
			// Every method: the endpoint itself answers 405 in JSON to anything but POST.
			mux.Handle(ep.Path, gate.wrap(budget.handler(backend.Inbox.Endpoint(ep.Name), ep.BodyLimit())))
		}
	}
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /readyz", &readiness{backend: backend, roles: cfg.Roles.List(), logger: logger, gate: gate})
	mux.Handle("GET /metrics", metrics.Handler())
	return &Server{cfg: cfg, backend: backend, logger: logger, metrics: metrics, mux: mux, budget: budget,
		srv: newHTTPServer(mux, limits, logger)}
}

func newHTTPServer(h http.Handler, limits config.HTTP, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      limits.WriteTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ConnState:         connState,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Listeners are serve's bound sockets: the main listener and, when console.listen
// is set, the console's own.
type Listeners struct {
	main, console net.Listener
}

// Listen binds cfg.Listen, and console.listen when the console has a listener of its
// own. serve binds before it opens the database, so that an address in use is
// refused before anything (a SQLite file) is created on disk.
func Listen(cfg *config.Config) (*Listeners, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("error listening on %s: %w", cfg.Listen, err)
	}
	ls := &Listeners{main: ln}
	if cfg.Console != nil && cfg.Console.Listen != "" {
		if ls.console, err = net.Listen("tcp", cfg.Console.Listen); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("error listening on console.listen %s: %w", cfg.Console.Listen, err)
		}
	}
	return ls, nil
}

// Close closes the listeners, for a caller that does not Serve them.
func (ls *Listeners) Close() {
	_ = ls.main.Close()
	if ls.console != nil {
		_ = ls.console.Close()
	}
}

// Run listens (Listen) and serves (Serve).
func (s *Server) Run(ctx context.Context) error {
	ls, err := Listen(s.cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ls)
}

// Serve serves on ls (from Listen with the same config), and runs the workers and the
// outbox dispatcher (when the backend has sinks) until ctx is cancelled, then shuts
// down gracefully: it stops accepting connections, lets in-flight requests finish
// and be answered, stops the workers and the dispatcher from claiming and lets the
// events and deliveries in progress finish (a delivery is bounded by
// outbox.delivery_timeout), all within cfg.ShutdownTimeout. It returns nil after a
// complete shutdown and ErrShutdownDeadline if the deadline passed first. Serve closes
// the listeners, also when it fails.
//
// A 2xx is only ever answered after commit, so an interruption at any point, even a
// forced exit, loses nothing that was acknowledged.
func (s *Server) Serve(ctx context.Context, ls *Listeners) error {
	ln := ls.main
	consoleSrv, err := s.console(ls.console)
	if err != nil {
		ls.Close()
		return err
	}
	endpoints := make([]string, 0, len(s.cfg.Endpoints))
	for _, ep := range s.cfg.Endpoints {
		endpoints = append(endpoints, fmt.Sprintf("%s %s (%s, %s, %s)", ep.Path, ep.Name, ep.Provider, ep.Mode, ep.Handler))
	}
	// The bound address, so that "listen: 127.0.0.1:0" can be found.
	if !s.cfg.Roles.Has(config.RoleReceivers) {
		endpoints = nil
	}
	s.logger.Info("hookinbox: listening", "addr", ln.Addr().String(), "endpoints", endpoints, "roles", s.cfg.Roles.List())

	// Workers and the dispatcher outlive ctx: they are stopped below, as part of the
	// shutdown sequence.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var work sync.WaitGroup
	// Before the workers start, so that an endpoint configured paused is paused when
	// they first claim; a database not ready yet is seeded by maintain later.
	seeded := seedEndpoints(ctx, s.cfg, s.backend.Executor, s.logger) == nil
	work.Go(func() { s.maintain(workCtx, seeded) })
	if s.cfg.Roles.Has(config.RoleWorkers) {
		work.Go(func() {
			if err := s.backend.Inbox.Run(workCtx); err != nil {
				s.logger.Error("hookinbox: workers stopped", "error", err.Error())
			}
		})
	}
	if s.cfg.Roles.Has(config.RoleWorkers) && s.cfg.CleanerInterval > 0 {
		work.Go(func() {
			if err := s.backend.Operator.RunCleaner(workCtx, hookinbox.CleanerConfig{Interval: s.cfg.CleanerInterval,
				Retention: s.cfg.Retention, PurgePayloadsAfter: s.cfg.PurgePayloadsAfter, Logger: s.logger}); err != nil {
				s.logger.Error("hookinbox: cleaner stopped", "error", err.Error())
			}
		})
	}
	if s.cfg.Roles.Has(config.RoleDispatcher) && s.backend.Dispatching() {
		work.Go(func() {
			if err := s.backend.Outbox.Run(workCtx); err != nil {
				s.logger.Error("hookinbox: outbox dispatcher stopped", "error", err.Error())
			}
		})
	}
	workersDone := make(chan struct{})
	go func() {
		work.Wait()
		close(workersDone)
	}()
	served := make(chan error, 2)
	limits := s.cfg.HTTP.WithDefaults()
	listener := func(ln net.Listener, name string) *limitListener {
		cfg := listenerConfig{name: name, max: limits.MaxConnections, perAddress: limits.MaxConnectionsPerAddress}
		if s.breakListener != nil {
			s.breakListener(&cfg)
		}
		return newLimitListener(ln, cfg, s.logger, s.metrics)
	}
	mainLn := listener(ln, "main")
	s.main.Store(mainLn)
	go func() { served <- s.srv.Serve(mainLn) }()
	if consoleSrv != nil {
		go func() { served <- consoleSrv.Serve(listener(ls.console, "console")) }()
	}

	select {
	case err := <-served:
		// A listener failed: nothing more can be received (or no console served). Stop
		// the workers too; the caller exits.
		if consoleSrv != nil {
			_ = consoleSrv.Close()
		}
		stopWork()
		<-workersDone
		return fmt.Errorf("error serving: %w", err)
	case <-ctx.Done():
	}

	s.logger.Info("hookinbox: shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	deadline, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	stopWork()
	// Request contexts are not cancelled by Shutdown: a handler in its transaction
	// commits and answers, or fails and answers 5xx.
	shutdownErr := s.srv.Shutdown(deadline)
	if consoleSrv != nil {
		if err := consoleSrv.Shutdown(deadline); err != nil {
			_ = consoleSrv.Close()
		}
	}
	select {
	case <-workersDone:
	case <-deadline.Done():
	}
	if shutdownErr != nil || deadline.Err() != nil {
		_ = s.srv.Close()
		s.logger.Warn("hookinbox: shutdown deadline exceeded; unanswered requests will be retried by their senders, events and outbox messages in progress when their lease ends",
			"timeout", s.cfg.ShutdownTimeout.String())
		return ErrShutdownDeadline
	}
	s.logger.Info("hookinbox: stopped")
	return nil
}

// console mounts the operator console when the config names its tokens: on the main
// listener, or on console.listen's own (ln), whose server it returns.
func (s *Server) console(ln net.Listener) (*http.Server, error) {
	cc := s.cfg.Console
	if cc == nil {
		return nil, nil
	}
	c, err := newConsole(s.cfg, s.backend, s.logger)
	if err != nil {
		return nil, err
	}
	if cc.Listen == "" {
		s.mux.Handle(c.Path()+"/", c)
		s.mux.Handle(c.Path(), c)
		s.logger.Info("hookinbox: console", "path", c.Path(), "addr", s.cfg.Listen, "tokens", len(cc.Tokens))
		return nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle(c.Path()+"/", c)
	mux.Handle(c.Path(), c)
	s.logger.Info("hookinbox: console", "path", c.Path(), "addr", ln.Addr().String(), "tokens", len(cc.Tokens))
	return newHTTPServer(mux, s.cfg.HTTP.WithDefaults(), s.logger), nil
}
