package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/server"
)

func (a *app) cleanupCommand() *cobra.Command {
	var (
		f         dbFlags
		olderThan time.Duration
		dryRun    bool
		force     bool
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete processed receipts older than the retention",
		Long: `Delete processed receipts older than --older-than (default: retention.processed in
the config, else 720h), in batches. Unprocessed receipts are never deleted.

A receipt is what turns a provider's retry into a duplicate, so the retention must be
at least the longest retry window of the configured providers (Stripe: 72h; 72h
without a config). A shorter one is refused with exit 2 unless --force: a retry
arriving after its receipt was deleted would be processed again.

--dry-run counts what would be deleted and deletes nothing.`,
		Example: `  hookinbox cleanup --config examples/hookinbox.yaml --dry-run
  hookinbox cleanup --older-than 2160h`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("older-than") && olderThan <= 0 {
				return usagef("--older-than must be positive")
			}
			return a.withBackend(cmd.Context(), &f, true, func(cfg *config.Config, b *server.Backend) error {
				if !cmd.Flags().Changed("older-than") {
					olderThan = cfg.Retention
				}
				n, err := b.Operator.Cleanup(cmd.Context(), hookinbox.CleanupParams{OlderThan: olderThan, DryRun: dryRun, Force: force})
				if errors.Is(err, hookinbox.ErrRetentionTooShort) {
					return &usageError{fmt.Errorf("--older-than %s: %w (%s): a late retry would be processed again; pass --force to delete anyway",
						olderThan, hookinbox.ErrRetentionTooShort, b.Operator.MinRetention())}
				}
				if err != nil {
					return fmt.Errorf("error cleaning up after %d deletions: %w", n, err)
				}
				if dryRun {
					fmt.Fprintf(a.stdout, "would delete %d processed receipts older than %s (dry run)\n", n, olderThan)
				} else {
					fmt.Fprintf(a.stdout, "deleted %d processed receipts older than %s\n", n, olderThan)
				}
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "retention: delete processed receipts older than this (default retention.processed, else 720h)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count, do not delete")
	cmd.Flags().BoolVar(&force, "force", false, "allow a retention shorter than the providers' retry windows")
	return cmd
}
