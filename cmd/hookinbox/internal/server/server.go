package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
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
	srv     *http.Server
	mux     *http.ServeMux
}

// New returns a server for cfg on backend. metrics must be the Observer the backend's
// inbox was opened with.
func New(cfg *config.Config, backend *Backend, metrics *Metrics, logger *slog.Logger) *Server {
	metrics.CollectStats(backend.Operator.Stats, statsCacheFor, statsTimeout, logger)
	metrics.CollectOutboxStats(backend.Outbox.Stats, statsCacheFor, statsTimeout, logger)
	metrics.CollectState(backend.CheckSchema, backend.Executor.ConsoleEndpointStates, cfg, statsCacheFor, statsTimeout, logger)
	metrics.SetRoles(cfg.Roles.List())
	limits := cfg.HTTP.WithDefaults()
	mux := http.NewServeMux()
	if cfg.Roles.Has(config.RoleReceivers) {
		for _, ep := range cfg.Endpoints {
			// Every method: the endpoint itself answers 405 in JSON to anything but POST.
			mux.Handle(ep.Path, backend.Inbox.Endpoint(ep.Name))
		}
	}
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /readyz", &readiness{backend: backend, roles: cfg.Roles.List(), logger: logger})
	mux.Handle("GET /metrics", metrics.Handler())
	return &Server{cfg: cfg, backend: backend, logger: logger, mux: mux, srv: newHTTPServer(mux, limits, logger)}
}

func newHTTPServer(h http.Handler, limits config.HTTP, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      limits.WriteTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Run listens on the configured address (and console.listen, when the console has a
// listener of its own), serves, and runs the workers and the
// outbox dispatcher (when the backend has sinks) until ctx is cancelled, then shuts
// down gracefully: it stops accepting connections, lets in-flight requests finish
// and be answered, stops the workers and the dispatcher from claiming and lets the
// events and deliveries in progress finish (a delivery is bounded by
// outbox.delivery_timeout), all within cfg.ShutdownTimeout. It returns nil after a
// complete shutdown and ErrShutdownDeadline if the deadline passed first.
//
// A 2xx is only ever answered after commit, so an interruption at any point, even a
// forced exit, loses nothing that was acknowledged.
func (s *Server) Run(ctx context.Context) error {
	consoleSrv, consoleLn, err := s.console()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		if consoleLn != nil {
			_ = consoleLn.Close()
		}
		return fmt.Errorf("error listening on %s: %w", s.cfg.Listen, err)
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
	maxConns := s.cfg.HTTP.WithDefaults().MaxConnections
	go func() { served <- s.srv.Serve(newLimitListener(ln, maxConns, s.logger)) }()
	if consoleSrv != nil {
		go func() { served <- consoleSrv.Serve(newLimitListener(consoleLn, maxConns, s.logger)) }()
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
// listener, or on console.listen's own, which it returns (listening) with its server.
func (s *Server) console() (*http.Server, net.Listener, error) {
	cc := s.cfg.Console
	if cc == nil {
		return nil, nil, nil
	}
	c, err := newConsole(s.cfg, s.backend, s.logger)
	if err != nil {
		return nil, nil, err
	}
	if cc.Listen == "" {
		s.mux.Handle(c.Path()+"/", c)
		s.mux.Handle(c.Path(), c)
		s.logger.Info("hookinbox: console", "path", c.Path(), "addr", s.cfg.Listen, "tokens", len(cc.Tokens))
		return nil, nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle(c.Path()+"/", c)
	mux.Handle(c.Path(), c)
	ln, err := net.Listen("tcp", cc.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("error listening on console.listen %s: %w", cc.Listen, err)
	}
	s.logger.Info("hookinbox: console", "path", c.Path(), "addr", ln.Addr().String(), "tokens", len(cc.Tokens))
	return newHTTPServer(mux, s.cfg.HTTP.WithDefaults(), s.logger), ln, nil
}
