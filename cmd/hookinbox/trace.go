package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
)

// startTracing sets up OpenTelemetry from the standard environment (see
// server.NewTracing) and says whether it is on.
func (a *app) startTracing(ctx context.Context, logger *slog.Logger) (*server.Tracing, error) {
	t, err := server.NewTracing(ctx, a.lookupEnv)
	if err != nil {
		return nil, &usageError{err}
	}
	if t.Provider != nil {
		logger.Info("hookinbox: tracing on", "otlp_endpoint", t.Endpoint, "db_spans", t.DB)
	}
	return t, nil
}

// stopTracing exports the spans still buffered, bounded so that an unreachable
// collector cannot hold the exit.
func (a *app) stopTracing(t *server.Tracing, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		logger.Warn("hookinbox: error exporting the last spans", "error", err.Error())
	}
}
