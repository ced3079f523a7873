package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/driver"
)

// cliActor is who the audit log records for an action taken with the command line:
// "cli:" and the operating system's user and host.
func cliActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "cli:" + name + "@" + host
}

// audited carries out a ConsoleAction as the command line's actor: the change and its
// audit entry in one transaction, as the console's own actions are.
func audited(ctx context.Context, b *server.Backend, a *driver.ConsoleAction) (int, error) {
	a.Actor = cliActor()
	return b.Executor.ConsoleApply(ctx, a)
}

// endpointJSON is an endpoint as endpoints list --json prints it. Field names are
// part of the CLI's contract.
type endpointJSON struct {
	Endpoint          string     `json:"endpoint"`
	Paused            bool       `json:"paused"`
	ChangedAt         *time.Time `json:"changed_at"`
	ChangedBy         string     `json:"changed_by,omitempty"`
	Pending           int64      `json:"pending"`
	NeedsReview       int64      `json:"needs_review"`
	OutboxPending     int64      `json:"outbox_pending"`
	OutboxNeedsReview int64      `json:"outbox_needs_review"`
}

func (a *app) endpointsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoints",
		Short: "List, pause and resume endpoints",
		Long: `Pause an endpoint while what its handler depends on is down, and resume it after.

A paused endpoint still verifies and stores every delivery, answering as usual (nothing
is refused or lost); its receipts and the outbox messages their processing wrote wait,
in every process, until it is resumed. The state is stored in the database
(hookinbox_endpoint), so every running serve obeys it without a restart, and each
pause and resume is in the audit log with the command line's user. A sync endpoint's
handler runs in the provider's request: a pause holds back its outbox messages only.

An endpoint's configured "paused: true" is its state until one is stored: serve stores
it at its first start, and from then on only these commands and the console change it.`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return usagef("endpoints needs a command: list, pause or resume; see hookinbox endpoints --help")
		},
	}
	cmd.AddCommand(a.endpointsListCommand(), a.endpointsPauseCommand(driver.ActionPause), a.endpointsPauseCommand(driver.ActionResume))
	return cmd
}

func (a *app) endpointsListCommand() *cobra.Command {
	var (
		f      dbFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the endpoints with their state and what waits",
		Example: `  hookinbox endpoints list --config examples/hookinbox.yaml`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withBackend(cmd.Context(), &f, true, func(cfg *config.Config, b *server.Backend) error {
				list, err := endpointList(cmd.Context(), cfg, b)
				if err != nil {
					return err
				}
				if asJSON {
					return json.NewEncoder(a.stdout).Encode(list)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ENDPOINT\tSTATE\tPENDING\tNEEDS_REVIEW\tOUTBOX_PENDING\tOUTBOX_NEEDS_REVIEW\tCHANGED\tBY")
				for _, e := range list {
					state, changed := "running", ""
					if e.Paused {
						state = "paused"
					}
					if e.ChangedAt != nil {
						changed = e.ChangedAt.Local().Format(time.DateTime)
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", e.Endpoint, state, e.Pending, e.NeedsReview,
						e.OutboxPending, e.OutboxNeedsReview, changed, e.ChangedBy)
				}
				return tw.Flush()
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// endpointList is the configured endpoints, and any other the database holds, with
// their stored states and what waits.
func endpointList(ctx context.Context, cfg *config.Config, b *server.Backend) ([]endpointJSON, error) {
	summaries, err := b.Executor.ConsoleEndpoints(ctx, time.Now().Truncate(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("error reading the endpoints: %w", err)
	}
	states, err := b.Executor.ConsoleEndpointStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("error reading the endpoints' states: %w", err)
	}
	byName := map[string]*endpointJSON{}
	var names []string
	entry := func(name string) *endpointJSON {
		if e, ok := byName[name]; ok {
			return e
		}
		e := &endpointJSON{Endpoint: name}
		byName[name] = e
		names = append(names, name)
		return e
	}
	for _, ep := range cfg.Endpoints {
		entry(ep.Name)
	}
	for _, s := range summaries {
		e := entry(s.Endpoint)
		e.Pending, e.NeedsReview, e.OutboxPending, e.OutboxNeedsReview = s.Pending, s.NeedsReview, s.OutboxPending, s.OutboxNeedsReview
	}
	for _, s := range states {
		e := entry(s.Endpoint)
		e.Paused, e.ChangedBy = s.Paused, s.ChangedBy
		at := s.ChangedAt
		e.ChangedAt = &at
	}
	slices.Sort(names)
	out := make([]endpointJSON, len(names))
	for i, n := range names {
		out[i] = *byName[n]
	}
	return out, nil
}

func (a *app) endpointsPauseCommand(action string) *cobra.Command {
	var (
		f    dbFlags
		note string
	)
	short, done, already := "Pause an endpoint: its receipts and outbox messages wait, receiving goes on", "paused", "already paused"
	if action == driver.ActionResume {
		short, done, already = "Resume a paused endpoint: what waited is available now", "resumed", "not paused"
	}
	cmd := &cobra.Command{
		Use:     action + " NAME",
		Short:   short,
		Example: fmt.Sprintf(`  hookinbox endpoints %s billing --note "ledger migration" --config examples/hookinbox.yaml`, action),
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			name := argv[0]
			return a.withBackend(cmd.Context(), &f, true, func(cfg *config.Config, b *server.Backend) error {
				if !slices.ContainsFunc(cfg.Endpoints, func(ep config.Endpoint) bool { return ep.Name == name }) {
					return usagef("no endpoint %q in the config", name)
				}
				n, err := audited(cmd.Context(), b, &driver.ConsoleAction{Action: action, Target: "endpoint " + name, Note: note, Endpoint: name})
				if err != nil {
					return fmt.Errorf("error storing the endpoint's state: %w", err)
				}
				if n == 0 {
					fmt.Fprintf(a.stdout, "%s was %s\n", name, already)
					return nil
				}
				// Running serve processes take what waited at their next poll.
				fmt.Fprintf(a.stdout, "%s %s\n", done, name)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&note, "note", "", "why, for the audit log")
	return cmd
}
