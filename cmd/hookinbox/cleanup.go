package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
)

func (a *app) cleanupCommand() *cobra.Command {
	var (
		f         dbFlags
		olderThan time.Duration
		dryRun    bool
		force     bool
		payloads  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete processed receipts, published outbox messages and recorded effects older than the retention",
		Long: `Delete processed receipts, published outbox messages and recorded effects older than
--older-than (default: retention.processed in the config, else 720h), in batches, and
the attempt and delivery histories (the console's rows per attempt) finished before it.
Unprocessed receipts, undelivered messages and effects whose call is in progress are
never deleted.

A receipt is what turns a provider's retry into a duplicate (and a recorded effect
what keeps the retry's handler from calling the provider again), so the retention
must be at least the longest retry window of the configured providers (Stripe: 72h;
72h without a config). A shorter one is refused with exit 2 unless --force: a retry
arriving after its receipt was deleted would be processed again.

--payloads-older-than (default: retention.payloads in the config, else off) also
replaces with JSON null the payloads of receipts processed longer ago than that,
keeping the receipts, so retries stay duplicates: for bodies with personal data. It
may be shorter than the retry windows.

--dry-run counts what would be deleted and deletes nothing.

serve runs the same cleanup in process every retention.interval (default 1h; off
turns it off), with the same rule.`,
		Example: `  hookinbox cleanup --config examples/hookinbox.yaml --dry-run
  hookinbox cleanup --older-than 2160h`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("older-than") && olderThan <= 0 {
				return usagef("--older-than must be positive")
			}
			if cmd.Flags().Changed("payloads-older-than") && payloads <= 0 {
				return usagef("--payloads-older-than must be positive")
			}
			return a.withBackend(cmd.Context(), &f, true, func(cfg *config.Config, b *server.Backend) error {
				if !cmd.Flags().Changed("older-than") {
					olderThan = cfg.Retention
				}
				res, err := b.Operator.Cleanup(cmd.Context(), hookinbox.CleanupParams{OlderThan: olderThan, DryRun: dryRun, Force: force})
				if errors.Is(err, hookinbox.ErrRetentionTooShort) {
					return &usageError{fmt.Errorf("--older-than %s: %w (%s): a late retry would be processed again; pass --force to delete anyway",
						olderThan, hookinbox.ErrRetentionTooShort, b.Operator.MinRetention())}
				}
				if err != nil {
					return fmt.Errorf("error cleaning up after %d deletions: %w", res.Receipts+res.OutboxMessages+res.Effects+res.Attempts+res.Deliveries, err)
				}
				what := fmt.Sprintf("%d processed receipts, %d published outbox messages and %d recorded effects older than %s, and %d attempt and %d delivery history rows",
					res.Receipts, res.OutboxMessages, res.Effects, olderThan, res.Attempts, res.Deliveries)
				if !cmd.Flags().Changed("payloads-older-than") {
					payloads = cfg.PurgePayloadsAfter
				}
				if payloads > 0 {
					n, err := b.Operator.PurgePayloads(cmd.Context(), hookinbox.PurgeParams{OlderThan: payloads, DryRun: dryRun})
					if err != nil {
						return fmt.Errorf("error purging payloads after deleting %s: %w", what, err)
					}
					what += fmt.Sprintf(", and the payloads of %d receipts processed more than %s ago", n, payloads)
				}
				if dryRun {
					fmt.Fprintf(a.stdout, "would delete %s (dry run)\n", what)
				} else {
					fmt.Fprintf(a.stdout, "deleted %s\n", what)
				}
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "retention: delete what is done and older than this (default retention.processed, else 720h)")
	cmd.Flags().DurationVar(&payloads, "payloads-older-than", 0, "also purge the payloads of receipts processed longer ago than this (default retention.payloads, else off)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count, do not delete")
	cmd.Flags().BoolVar(&force, "force", false, "allow a retention shorter than the providers' retry windows")
	return cmd
}
