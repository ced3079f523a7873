package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// receiptJSON is a receipt as events list/show --json print it.
type receiptJSON struct {
	Provider    string     `json:"provider"`
	Endpoint    string     `json:"endpoint"`
	EventID     string     `json:"event_id"`
	EventType   string     `json:"event_type"`
	State       string     `json:"state"`
	Outcome     string     `json:"outcome,omitempty"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error,omitempty"`
	ReceivedAt  time.Time  `json:"received_at"`
	AvailableAt time.Time  `json:"available_at"`
	ProcessedAt *time.Time `json:"processed_at"`
	// Conflicts counts later deliveries of the key with another body (the first kept).
	Conflicts  int    `json:"conflicts"`
	BodySHA256 string `json:"body_sha256,omitempty"`
	// Origin is where the receipt came from: delivery, backfill or reconcile (events
	// show only).
	Origin  string          `json:"origin,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// state is what an operator needs to know of a receipt, from its stored state:
// processed or ignored (done, by its outcome), pending (workers will retry it),
// needs_review (workers gave up) or discarded.
func state(r *hookinboxtype.Receipt) string {
	if r.State == hookinboxtype.StateProcessed && r.Outcome != "" {
		return string(r.Outcome)
	}
	return string(r.State)
}

func newReceiptJSON(r *hookinboxtype.Receipt, withPayload bool) receiptJSON {
	out := receiptJSON{
		Provider: r.Provider, Endpoint: r.Endpoint, EventID: r.EventID, EventType: r.EventType,
		State: state(r), Outcome: string(r.Outcome), Attempts: r.Attempts, LastError: r.LastError,
		ReceivedAt: r.ReceivedAt, AvailableAt: r.AvailableAt, ProcessedAt: r.ProcessedAt,
		Conflicts: r.Conflicts, BodySHA256: hex.EncodeToString(r.BodySHA256),
	}
	if withPayload {
		out.Payload = r.Payload
	}
	return out
}

func (a *app) eventsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List, show and retry received events",
		Long: `Inspect and repair the inbox's receipts: list them, show one with its payload, and
make unprocessed ones available to the workers again.

A receipt is identified by PROVIDER ENDPOINT EVENT_ID, as "events list" prints them.
Each receipt stores its state: pending, processed (or ignored: no handler for its
type), needs_review (it used every attempt its worker allowed, worker.max_attempts)
or discarded. Every command reads the stored state, so it agrees with every running
serve whatever configuration it was started with.`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return usagef("events needs a command: list, show or retry; see hookinbox events --help")
		},
	}
	cmd.AddCommand(a.eventsListCommand(), a.eventsShowCommand(), a.eventsRetryCommand())
	return cmd
}

func (a *app) eventsListCommand() *cobra.Command {
	var (
		f           dbFlags
		asJSON      bool
		needsReview bool
		unprocessed bool
		conflicts   bool
		endpoint    string
		limit       int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List receipts, newest first",
		Example: `  hookinbox events list --needs-review --config examples/hookinbox.yaml
  hookinbox events list --endpoint billing --limit 20 --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usagef("--limit must be at least 1")
			}
			return a.withBackend(cmd.Context(), &f, true, func(_ *config.Config, b *server.Backend) error {
				list, err := b.Operator.ListReceipts(cmd.Context(), hookinbox.ListParams{
					Endpoint: endpoint, NeedsReview: needsReview, Unprocessed: unprocessed, Conflicts: conflicts, Limit: limit,
				})
				if err != nil {
					return fmt.Errorf("error listing receipts: %w", err)
				}
				if asJSON {
					out := make([]receiptJSON, 0, len(list))
					for _, r := range list {
						out = append(out, newReceiptJSON(r, false))
					}
					return json.NewEncoder(a.stdout).Encode(out)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RECEIVED\tPROVIDER\tENDPOINT\tEVENT_ID\tTYPE\tSTATE\tATTEMPTS\tLAST_ERROR")
				for _, r := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.ReceivedAt.Local().Format(time.DateTime),
						r.Provider, r.Endpoint, r.EventID, r.EventType, state(r), r.Attempts, truncate(r.LastError, 60))
				}
				return tw.Flush()
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().BoolVar(&needsReview, "needs-review", false, "only receipts that used every attempt")
	cmd.Flags().BoolVar(&unprocessed, "unprocessed", false, "only unprocessed receipts")
	cmd.Flags().BoolVar(&conflicts, "conflicts", false, "only receipts repeated by a delivery with another body (the first body was kept)")
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "only receipts of this endpoint")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many receipts")
	return cmd
}

func (a *app) eventsShowCommand() *cobra.Command {
	var (
		f      dbFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "show PROVIDER ENDPOINT EVENT_ID",
		Short:   "Show one receipt with its payload",
		Long:    "Show one receipt with its payload. Exits 1 if there is no such receipt.",
		Example: `  hookinbox events show stripe billing evt_1 --config examples/hookinbox.yaml`,
		Args:    args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			key := hookinboxtype.Key{Provider: argv[0], Endpoint: argv[1], EventID: argv[2]}
			return a.withBackend(cmd.Context(), &f, true, func(_ *config.Config, b *server.Backend) error {
				r, err := b.Operator.GetReceipt(cmd.Context(), key)
				if err != nil {
					return fmt.Errorf("error reading receipt: %w", err)
				}
				if r == nil {
					return fmt.Errorf("no receipt %s %s %s", key.Provider, key.Endpoint, key.EventID)
				}
				rj := newReceiptJSON(r, true)
				if rj.Origin, err = receiptOrigin(cmd.Context(), b, key); err != nil {
					return err
				}
				if asJSON {
					return json.NewEncoder(a.stdout).Encode(rj)
				}
				return a.printReceipt(rj)
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func (a *app) printReceipt(rj receiptJSON) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "provider\t%s\nendpoint\t%s\nevent id\t%s\ntype\t%s\nstate\t%s\nattempts\t%d\n",
		rj.Provider, rj.Endpoint, rj.EventID, rj.EventType, rj.State, rj.Attempts)
	if rj.Origin != "" {
		fmt.Fprintf(tw, "origin\t%s\n", rj.Origin)
	}
	fmt.Fprintf(tw, "received\t%s\n", rj.ReceivedAt.Local().Format(time.RFC3339))
	if rj.ProcessedAt != nil {
		fmt.Fprintf(tw, "processed\t%s\n", rj.ProcessedAt.Local().Format(time.RFC3339))
	} else {
		fmt.Fprintf(tw, "available\t%s\n", rj.AvailableAt.Local().Format(time.RFC3339))
	}
	if rj.LastError != "" {
		fmt.Fprintf(tw, "last error\t%s\n", rj.LastError)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, rj.Payload, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(rj.Payload)
	}
	_, err := fmt.Fprintf(a.stdout, "payload\n%s\n", pretty.String())
	return err
}

func (a *app) eventsRetryCommand() *cobra.Command {
	var (
		f              dbFlags
		allNeedsReview bool
	)
	cmd := &cobra.Command{
		Use:   "retry (PROVIDER ENDPOINT EVENT_ID | --all-needs-review)",
		Short: "Make unprocessed receipts available to the workers again",
		Long: `Reset an unprocessed receipt's attempts to zero and make it available now, typically
after fixing what made it fail; a running "hookinbox serve" picks it up on its next
poll (worker.poll_interval). Processed receipts are never touched. Each retry is in
the audit log (the console's Audit log page) with the command line's user.

With one receipt: exits 1 if it does not exist or is already processed.
With --all-needs-review: retries every receipt that needs review and prints how many.`,
		Example: `  hookinbox events retry stripe billing evt_1 --config examples/hookinbox.yaml
  hookinbox events retry --all-needs-review --config examples/hookinbox.yaml`,
		Args: args(func(cmd *cobra.Command, argv []string) error {
			switch {
			case allNeedsReview && len(argv) > 0:
				return errors.New("give PROVIDER ENDPOINT EVENT_ID or --all-needs-review, not both")
			case !allNeedsReview && len(argv) != 3:
				return fmt.Errorf("want PROVIDER ENDPOINT EVENT_ID or --all-needs-review, got %d arguments", len(argv))
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.withBackend(cmd.Context(), &f, true, func(_ *config.Config, b *server.Backend) error {
				if allNeedsReview {
					n, err := audited(cmd.Context(), b, &driver.ConsoleAction{
						Action: driver.ActionRetry, Target: "all receipts that need review",
						Filter: &driver.ReceiptFilter{State: hookinboxtype.StateNeedsReview}, Limit: math.MaxInt32,
						FromStates: []hookinboxtype.State{hookinboxtype.StateNeedsReview},
					})
					if err != nil {
						return fmt.Errorf("error retrying receipts that need review: %w", err)
					}
					fmt.Fprintf(a.stdout, "retrying %d receipts\n", n)
					return nil
				}
				key := hookinboxtype.Key{Provider: argv[0], Endpoint: argv[1], EventID: argv[2]}
				missing := fmt.Errorf("no unprocessed receipt %s %s %s (absent or already processed)", key.Provider, key.Endpoint, key.EventID)
				r, err := b.Operator.GetReceipt(cmd.Context(), key)
				if err != nil {
					return fmt.Errorf("error retrying receipt: %w", err)
				}
				if r == nil {
					return missing
				}
				n, err := audited(cmd.Context(), b, &driver.ConsoleAction{
					Action: driver.ActionRetry, Target: "event " + key.Provider + "/" + key.Endpoint + "/" + key.EventID, Key: &key,
				})
				if err != nil {
					return fmt.Errorf("error retrying receipt: %w", err)
				}
				if n == 0 {
					return missing
				}
				fmt.Fprintf(a.stdout, "retrying %s %s %s\n", key.Provider, key.Endpoint, key.EventID)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&allNeedsReview, "all-needs-review", false, "retry every receipt that needs review")
	return cmd
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
