package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/outbox"
)

// outboxMessageJSON is an outbox message as outbox list --json prints it. Field
// names are part of the CLI's contract.
type outboxMessageJSON struct {
	ID            int64      `json:"id"`
	Destination   string     `json:"destination"`
	EventType     string     `json:"event_type"`
	AggregateType string     `json:"aggregate_type"`
	AggregateID   string     `json:"aggregate_id"`
	Source        sourceJSON `json:"source"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	PublishedAt   *time.Time `json:"published_at"`
}

// sourceJSON is the receipt whose processing wrote an outbox message.
type sourceJSON struct {
	Provider string `json:"provider"`
	Endpoint string `json:"endpoint"`
	EventID  string `json:"event_id"`
}

// newOutboxMessageJSON prints the message's stored state: published, pending (the
// dispatcher will deliver or retry it, if it has a sink for its destination),
// needs_review (it used every attempt) or discarded.
func newOutboxMessageJSON(m *hookinboxtype.OutboxMessage) outboxMessageJSON {
	return outboxMessageJSON{
		ID: m.ID, Destination: m.Destination, EventType: m.EventType,
		AggregateType: m.AggregateType, AggregateID: m.AggregateID,
		Source:      sourceJSON{Provider: m.Source.Provider, Endpoint: m.Source.Endpoint, EventID: m.Source.EventID},
		State:       string(m.State),
		Attempts:    m.Attempts,
		LastError:   m.LastError,
		CreatedAt:   m.CreatedAt,
		PublishedAt: m.PublishedAt,
	}
}

func (a *app) outboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "List, retry and redeliver outbox messages (forwarded events, billing notifications)",
		Long: `Inspect and repair the outbox: the messages that handlers wrote for delivery by
serve's dispatcher. Each forwarded event is one message, with destination
"endpoint:<name>"; the billing handler writes messages without a destination, which
go to outbox.sink, or stay pending when it is not configured.

A message is identified by its ID, as "outbox list" prints it. Each message stores its
state: pending, published, needs_review (it used every delivery attempt its
dispatcher allowed, outbox.max_attempts) or discarded, so every command agrees with
every running serve.`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return usagef("outbox needs a command: list, retry or redeliver; see hookinbox outbox --help")
		},
	}
	cmd.AddCommand(a.outboxListCommand(), a.outboxRetryCommand(), a.outboxRedeliverCommand())
	return cmd
}

func (a *app) outboxListCommand() *cobra.Command {
	var (
		f           dbFlags
		asJSON      bool
		needsReview bool
		pending     bool
		limit       int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List outbox messages, newest first",
		Long: `List outbox messages, newest first, with their state: published, pending (to be
delivered or retried) or needs_review (every attempt used), and the last delivery
error. Payloads are not printed.`,
		Example: `  hookinbox outbox list --needs-review --config examples/hookinbox.yaml
  hookinbox outbox list --pending --limit 20 --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usagef("--limit must be at least 1")
			}
			return a.withBackend(cmd.Context(), &f, true, func(_ *config.Config, b *server.Backend) error {
				list, err := b.Outbox.List(cmd.Context(), outbox.ListParams{NeedsReview: needsReview, Pending: pending, Limit: limit})
				if err != nil {
					return fmt.Errorf("error listing outbox messages: %w", err)
				}
				if asJSON {
					out := make([]outboxMessageJSON, 0, len(list))
					for _, m := range list {
						out = append(out, newOutboxMessageJSON(m))
					}
					return json.NewEncoder(a.stdout).Encode(out)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tCREATED\tDESTINATION\tTYPE\tSOURCE\tSTATE\tATTEMPTS\tLAST_ERROR")
				for _, m := range list {
					dest := m.Destination
					if dest == "" {
						dest = "(none)"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s %s %s\t%s\t%d\t%s\n", m.ID, m.CreatedAt.Local().Format(time.DateTime),
						dest, m.EventType, m.Source.Provider, m.Source.Endpoint, m.Source.EventID,
						string(m.State), m.Attempts, truncate(m.LastError, 60))
				}
				return tw.Flush()
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().BoolVar(&needsReview, "needs-review", false, "only messages that used every attempt")
	cmd.Flags().BoolVar(&pending, "pending", false, "only messages not yet delivered (including those needing review)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many messages")
	return cmd
}

func (a *app) outboxRetryCommand() *cobra.Command {
	var (
		f              dbFlags
		allNeedsReview bool
	)
	cmd := &cobra.Command{
		Use:   "retry (ID | --all-needs-review)",
		Short: "Make undelivered outbox messages available to the dispatcher again",
		Long: `Reset an undelivered outbox message's attempts to zero and make it available now,
typically after fixing the receiver it goes to; a running "hookinbox serve" delivers
it on its next poll (outbox.poll_interval). Delivered messages are never touched, and
a message whose destination has no sink in serve's config stays pending.

With one ID: exits 1 if there is no such message or it is already delivered.
With --all-needs-review: retries every message that needs review and prints how many.
Each retry is in the audit log with the command line's user.`,
		Example: `  hookinbox outbox retry 42 --config examples/hookinbox.yaml
  hookinbox outbox retry --all-needs-review --config examples/hookinbox.yaml`,
		Args: args(func(cmd *cobra.Command, argv []string) error {
			switch {
			case allNeedsReview && len(argv) > 0:
				return errors.New("give ID or --all-needs-review, not both")
			case !allNeedsReview && len(argv) != 1:
				return fmt.Errorf("want ID or --all-needs-review, got %d arguments", len(argv))
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var id int64
			if !allNeedsReview {
				var err error
				if id, err = strconv.ParseInt(argv[0], 10, 64); err != nil || id < 1 {
					return usagef("ID %q is not an outbox message id (a positive number, as outbox list prints it)", argv[0])
				}
			}
			return a.withBackend(cmd.Context(), &f, true, func(_ *config.Config, b *server.Backend) error {
				if allNeedsReview {
					n, err := audited(cmd.Context(), b, &driver.ConsoleAction{
						Action: driver.ActionRetryOutbox, Target: "all outbox messages that need review",
						OutboxFilter: &driver.OutboxFilter{State: hookinboxtype.StateNeedsReview}, Limit: math.MaxInt32,
						FromStates: []hookinboxtype.State{hookinboxtype.StateNeedsReview},
					})
					if err != nil {
						return fmt.Errorf("error retrying outbox messages that need review: %w", err)
					}
					fmt.Fprintf(a.stdout, "retrying %d outbox messages\n", n)
					return nil
				}
				ok, err := a.outboxAction(cmd, b, driver.ActionRetryOutbox, id, "")
				if err != nil {
					return fmt.Errorf("error retrying outbox message: %w", err)
				}
				if !ok {
					return fmt.Errorf("no undelivered outbox message %d (absent or already delivered)", id)
				}
				fmt.Fprintf(a.stdout, "retrying outbox message %d\n", id)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&allNeedsReview, "all-needs-review", false, "retry every message that needs review")
	return cmd
}

// outboxAction retries or redelivers one message as the command line's actor, and
// reports whether it changed.
func (a *app) outboxAction(cmd *cobra.Command, b *server.Backend, action string, id int64, note string) (bool, error) {
	n, err := audited(cmd.Context(), b, &driver.ConsoleAction{
		Action: action, Target: "outbox " + strconv.FormatInt(id, 10), Note: note, OutboxID: id,
	})
	return n > 0, err
}

func (a *app) outboxRedeliverCommand() *cobra.Command {
	var (
		f    dbFlags
		note string
	)
	cmd := &cobra.Command{
		Use:   "redeliver ID",
		Short: "Deliver a published outbox message again, under its Idempotency-Key",
		Long: `Make a published outbox message pending again with its attempts reset, so that a
running "hookinbox serve" delivers it once more at its next poll, with the same
Idempotency-Key (derived from its source event and its id): for a receiver that lost
what it had accepted. A receiver that keeps its keys ignores a message it still has.
The redelivery is in the audit log with the command line's user.

Exits 1 if there is no such message or it is not published (retry an undelivered one).`,
		Example: `  hookinbox outbox redeliver 42 --note "the CRM restored a backup" --config examples/hookinbox.yaml`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := strconv.ParseInt(argv[0], 10, 64)
			if err != nil || id < 1 {
				return usagef("ID %q is not an outbox message id (a positive number, as outbox list prints it)", argv[0])
			}
			return a.withBackend(cmd.Context(), &f, true, func(_ *config.Config, b *server.Backend) error {
				ok, err := a.outboxAction(cmd, b, driver.ActionRedeliver, id, note)
				if err != nil {
					return fmt.Errorf("error redelivering outbox message: %w", err)
				}
				if !ok {
					return fmt.Errorf("no published outbox message %d (absent or not delivered yet)", id)
				}
				fmt.Fprintf(a.stdout, "redelivering outbox message %d\n", id)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&note, "note", "", "why, for the audit log")
	return cmd
}
