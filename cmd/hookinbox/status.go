package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/server"
)

// statusJSON is status --json's document. Field names are part of the CLI's contract.
type statusJSON struct {
	Unprocessed                 int64            `json:"unprocessed"`
	OldestUnprocessedAgeSeconds float64          `json:"oldest_unprocessed_age_seconds"`
	NeedsReview                 int64            `json:"needs_review"`
	ReceivedLastHour            map[string]int64 `json:"received_last_hour"`
}

func newStatusJSON(s *hookinbox.Stats) statusJSON {
	out := statusJSON{
		Unprocessed:                 s.Unprocessed,
		OldestUnprocessedAgeSeconds: s.OldestUnprocessedAge.Seconds(),
		NeedsReview:                 s.NeedsReview,
		ReceivedLastHour:            map[string]int64{},
	}
	for _, tc := range s.ReceivedLastHour {
		out.ReceivedLastHour[tc.EventType] = tc.Count
	}
	return out
}

func (a *app) statusCommand() *cobra.Command {
	var (
		f      dbFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show unprocessed receipts, the oldest one's age, needs review, and arrivals by type",
		Long: `Show the inbox's monitoring figures:

  unprocessed       receipts not yet processed, including those needing review
  oldest            how long the oldest unprocessed receipt has waited
  needs review      receipts that used every attempt; alert on anything but 0
  received (1 h)    receipts of the last hour, by event type

Needs review counts receipts at worker.max_attempts from the config (default 10).
With --json the figures are one JSON object:
  {"unprocessed":0,"oldest_unprocessed_age_seconds":0,"needs_review":0,
   "received_last_hour":{"invoice.paid":2}}`,
		Example: `  hookinbox status --config examples/hookinbox.yaml
  hookinbox status --database-url postgres://postgres@127.0.0.1:5432/postgres --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withBackend(cmd.Context(), &f, true, func(_ *config.Config, b *server.Backend) error {
				s, err := b.Inbox.Stats(cmd.Context())
				if err != nil {
					return fmt.Errorf("error reading status: %w", err)
				}
				if asJSON {
					return json.NewEncoder(a.stdout).Encode(newStatusJSON(s))
				}
				return a.printStatus(s)
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func (a *app) printStatus(s *hookinbox.Stats) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "unprocessed\t%d\n", s.Unprocessed)
	fmt.Fprintf(tw, "oldest unprocessed\t%s\n", s.OldestUnprocessedAge.Round(time.Second))
	fmt.Fprintf(tw, "needs review\t%d\n", s.NeedsReview)
	fmt.Fprintf(tw, "received last hour\t%d types\n", len(s.ReceivedLastHour))
	for _, tc := range s.ReceivedLastHour {
		fmt.Fprintf(tw, "  %s\t%d\n", tc.EventType, tc.Count)
	}
	return tw.Flush()
}
