package hookinbox

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// CleanerConfig configures RunCleaner.
type CleanerConfig struct {
	// Interval is the time between two passes; the first runs at once.
	//
	// Defaults to 1 hour.
	Interval time.Duration
	// Retention is Cleanup's OlderThan. It is never shorter than the Operator's
	// MinRetention (the providers' retry windows): there is no Force here.
	//
	// Defaults to Cleanup's default, 720 hours.
	Retention time.Duration
	// PurgePayloadsAfter, when positive, also purges the payloads of receipts
	// processed longer ago than this (PurgePayloads).
	PurgePayloadsAfter time.Duration
	// BatchSize is how many rows one statement deletes or purges.
	//
	// Defaults to 1000.
	BatchSize int
	// Logger receives a line per pass that changed something, and errors.
	//
	// Defaults to slog.Default().
	Logger *slog.Logger
}

// RunCleaner runs Cleanup (and PurgePayloads, if configured) every Interval until ctx
// ends, so that the inbox, outbox and effect tables stay bounded without a cron job.
// Each pass works in batches of BatchSize rows, one short statement each, so it never
// holds locks that receivers or workers wait on for long. Several processes may run it
// on one database: they delete disjoint batches, or find nothing left to delete. A pass
// that fails is logged and tried again at the next interval; RunCleaner returns only
// when ctx ends (nil), or at once when Retention is shorter than MinRetention.
func (o *Operator) RunCleaner(ctx context.Context, config CleanerConfig) error {
	if config.Interval <= 0 {
		config.Interval = time.Hour
	}
	if config.Logger == nil {
		config.Logger = slog.Default()
	}
	params := CleanupParams{OlderThan: config.Retention, BatchSize: config.BatchSize}
	if params.OlderThan == 0 {
		params.OlderThan = 720 * time.Hour
	}
	if minimum := o.config.MinRetention; params.OlderThan < minimum {
		return fmt.Errorf("hookinbox: cleaner: %w: %s < %s", ErrRetentionTooShort, params.OlderThan, minimum)
	}
	ticker := time.NewTicker(config.Interval)
	defer ticker.Stop()
	for {
		o.cleanOnce(ctx, config, params)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

func (o *Operator) cleanOnce(ctx context.Context, config CleanerConfig, params CleanupParams) {
	start := time.Now()
	res, err := o.Cleanup(ctx, params)
	if err != nil && ctx.Err() == nil {
		config.Logger.ErrorContext(ctx, "hookinbox: cleaner pass failed", "error", err.Error())
	}
	purged := 0
	if config.PurgePayloadsAfter > 0 && ctx.Err() == nil {
		purged, err = o.PurgePayloads(ctx, PurgeParams{OlderThan: config.PurgePayloadsAfter, BatchSize: config.BatchSize})
		if err != nil && ctx.Err() == nil {
			config.Logger.ErrorContext(ctx, "hookinbox: cleaner's payload purge failed", "error", err.Error())
		}
	}
	if res.Receipts+res.OutboxMessages+res.Effects+purged > 0 {
		config.Logger.InfoContext(ctx, "hookinbox: cleaner pass",
			"receipts_deleted", res.Receipts, "outbox_messages_deleted", res.OutboxMessages,
			"effects_deleted", res.Effects, "payloads_purged", purged, "duration", time.Since(start).String())
	}
}
