package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/driver"
)

// rollupInterval is how often a process with the workers role brings the overview's
// per-minute counts up to date (ConsoleRollup): each run counts the few minutes
// since the last.
const rollupInterval = time.Minute

// seedTimeout bounds storing the endpoints' defaults at start.
const seedTimeout = 5 * time.Second

// seedEndpoints stores each configured endpoint's default state (endpoints[].paused)
// for the endpoints the database has no state of yet; an endpoint with a stored state
// keeps it. Every process does it at start: only the first one stores anything.
func seedEndpoints(ctx context.Context, cfg *config.Config, ex driver.Executor, logger *slog.Logger) error {
	seeds := make([]driver.EndpointSeed, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		seeds[i] = driver.EndpointSeed{Endpoint: ep.Name, Paused: ep.Paused}
	}
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	n, err := ex.ConsoleSeedEndpoints(ctx, seeds, "config")
	if err != nil {
		return err
	}
	if n > 0 {
		logger.Info("hookinbox: stored the endpoints' configured states", "endpoints", n)
	}
	for _, ep := range cfg.Endpoints {
		if ep.Paused {
			logger.Info("hookinbox: endpoint configured paused; the database's state wins once it has one (hookinbox endpoints list)", "endpoint", ep.Name)
		}
	}
	return nil
}

// maintain stores the endpoints' defaults once the schema lets it (seeded says the
// start already did), and, in a process with the workers role, rolls up the
// overview's counts every rollupInterval, until ctx ends.
func (s *Server) maintain(ctx context.Context, seeded bool) {
	tick := time.NewTicker(rollupInterval)
	defer tick.Stop()
	for {
		if !seeded {
			seeded = seedEndpoints(ctx, s.cfg, s.backend.Executor, s.logger) == nil
		}
		if s.cfg.Roles.Has(config.RoleWorkers) {
			rctx, cancel := context.WithTimeout(ctx, rollupInterval)
			if _, err := s.backend.Executor.ConsoleRollup(rctx, time.Now().Add(-driver.RollupLag)); err != nil && ctx.Err() == nil {
				s.logger.Warn("hookinbox: error rolling up the overview's counts; the console counts live meanwhile", "error", err.Error())
			}
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
