package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/outbox"
)

// statusJSON is status --json's document. Field names are part of the CLI's contract.
type statusJSON struct {
	Unprocessed                 int64            `json:"unprocessed"`
	OldestUnprocessedAgeSeconds float64          `json:"oldest_unprocessed_age_seconds"`
	NeedsReview                 int64            `json:"needs_review"`
	ReceivedLastHour            map[string]int64 `json:"received_last_hour"`
	Outbox                      outboxStatusJSON `json:"outbox"`
	Tables                      []tableJSON      `json:"tables"`
}

// tableJSON is one table's size in status --json; -1 is unknown.
type tableJSON struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// outboxStatusJSON is the outbox's part of status --json.
type outboxStatusJSON struct {
	Pending                 int64   `json:"pending"`
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
	NeedsReview             int64   `json:"needs_review"`
}

func newStatusJSON(s *hookinbox.Stats, o *outbox.Stats) statusJSON {
	out := statusJSON{
		Unprocessed:                 s.Unprocessed,
		OldestUnprocessedAgeSeconds: s.OldestUnprocessedAge.Seconds(),
		NeedsReview:                 s.NeedsReview,
		ReceivedLastHour:            map[string]int64{},
		Outbox: outboxStatusJSON{
			Pending:                 o.Pending,
			OldestPendingAgeSeconds: o.OldestPendingAge.Seconds(),
			NeedsReview:             o.NeedsReview,
		},
	}
	for _, tc := range s.ReceivedLastHour {
		out.ReceivedLastHour[tc.EventType] = tc.Count
	}
	for _, t := range s.Tables {
		out.Tables = append(out.Tables, tableJSON(t))
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
		Short: "Show unprocessed receipts, the oldest one's age, needs review, arrivals by type, and the outbox",
		Long: `Show the inbox's and the outbox's monitoring figures:

  unprocessed            receipts not yet processed, including those needing review
  oldest unprocessed     how long the oldest unprocessed receipt has waited
  needs review           receipts that used every attempt; alert on anything but 0
  received last hour     receipts of the last hour, by event type
  outbox pending         outbox messages not yet delivered, including those needing
                         review and those no sink delivers (billing's without outbox.sink)
  outbox oldest pending  how long the oldest undelivered message has waited
  outbox needs review    messages that used every delivery attempt
  tables                 the size of the inbox, outbox and effect tables with their
                         indexes, and their rows (PostgreSQL: the planner's estimate,
                         unknown before the table's first VACUUM or ANALYZE)

Needs review counts the receipts and messages whose stored state is needs_review:
they used every attempt their worker (worker.max_attempts) or dispatcher
(outbox.max_attempts) allowed.
With --json the figures are one JSON object:
  {"unprocessed":0,"oldest_unprocessed_age_seconds":0,"needs_review":0,
   "received_last_hour":{"invoice.paid":2},
   "outbox":{"pending":0,"oldest_pending_age_seconds":0,"needs_review":0},
   "tables":[{"table":"hookinbox_inbox","rows":2,"bytes":49152}, ...]}
(rows or bytes -1: unknown).`,
		Example: `  hookinbox status --config examples/hookinbox.yaml
  hookinbox status --database-url postgres://postgres@127.0.0.1:5432/postgres --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withBackend(cmd.Context(), &f, true, func(_ *config.Config, b *server.Backend) error {
				s, err := b.Operator.Stats(cmd.Context())
				if err != nil {
					return fmt.Errorf("error reading status: %w", err)
				}
				o, err := b.Outbox.Stats(cmd.Context())
				if err != nil {
					return fmt.Errorf("error reading the outbox's status: %w", err)
				}
				if asJSON {
					return json.NewEncoder(a.stdout).Encode(newStatusJSON(s, o))
				}
				return a.printStatus(s, o)
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func (a *app) printStatus(s *hookinbox.Stats, o *outbox.Stats) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "unprocessed\t%d\n", s.Unprocessed)
	fmt.Fprintf(tw, "oldest unprocessed\t%s\n", s.OldestUnprocessedAge.Round(time.Second))
	fmt.Fprintf(tw, "needs review\t%d\n", s.NeedsReview)
	fmt.Fprintf(tw, "received last hour\t%d types\n", len(s.ReceivedLastHour))
	for _, tc := range s.ReceivedLastHour {
		fmt.Fprintf(tw, "  %s\t%d\n", tc.EventType, tc.Count)
	}
	fmt.Fprintf(tw, "outbox pending\t%d\n", o.Pending)
	fmt.Fprintf(tw, "outbox oldest pending\t%s\n", o.OldestPendingAge.Round(time.Second))
	fmt.Fprintf(tw, "outbox needs review\t%d\n", o.NeedsReview)
	fmt.Fprintf(tw, "tables\t\n")
	for _, t := range s.Tables {
		rows, size := "rows unknown", "size unknown"
		if t.Rows >= 0 {
			rows = fmt.Sprintf("%d rows", t.Rows)
		}
		if t.Bytes >= 0 {
			size = humanBytes(t.Bytes)
		}
		fmt.Fprintf(tw, "  %s\t%s, %s\n", t.Table, rows, size)
	}
	return tw.Flush()
}

// humanBytes writes n in the largest binary unit that keeps it at least 1.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
