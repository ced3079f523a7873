package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/stripe/stripe-go/v82"

	"github.com/hookinbox/hookinbox/backfill"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/reconcile"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
)

func (a *app) reconcileCommand() *cobra.Command {
	var (
		f        dbFlags
		endpoint string
		since    string
		repair   bool
		asJSON   bool
		keyEnv   string
		apiURL   string
		rate     float64
	)
	cmd := &cobra.Command{
		Use:   "reconcile --endpoint NAME [--since 720h] [--repair] [flags]",
		Short: "Compare the billing invoices with Stripe's and repair the drift through the inbox",
		Long: `Compare the billing invoices with Stripe's and repair the drift through the inbox.

It lists the Stripe invoices changed since --since (those created since, and those an
invoice event since names: Stripe has no filter by update time) with stripe-go,
compares each one's status and amount paid with the local invoices table, and prints
the drift: missing_locally, status_differs, amount_differs.

With --repair each drifted invoice's state is received on the billing endpoint as a
synthetic event of the type its status stands for (paid: invoice.paid), under a key
made of the invoice and that state (reconcile_in_123_paid_1200), so the billing
handlers apply it with their guards and a repeat run is a duplicate. Its receipt's
origin is "reconcile". What the handlers cannot resolve stays as a billing anomaly for
a person: a payment for a void invoice (payment_for_void_invoice), a paid invoice's
second amount (reconcile_amount_differs), a status that cannot be reached
(reconcile_status_differs). Exits 1 while an invoice still differs after the repair,
or differs without --repair.

The API key is read from the environment (--api-key-env, default STRIPE_SECRET_KEY),
never printed. See docs/BACKFILL.md.`,
		Example: `  STRIPE_SECRET_KEY=rk_live_... hookinbox reconcile --config hookinbox.yaml --endpoint billing --since 720h
  STRIPE_SECRET_KEY=rk_live_... hookinbox reconcile --config hookinbox.yaml --endpoint billing --since 2026-11-01 --repair --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			from, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			if rate <= 0 {
				return usagef("--rate must be positive")
			}
			cfg, err := a.loadConfig(&f, true, false)
			if err != nil {
				return err
			}
			ep, err := endpointOf(cfg, endpoint)
			if err != nil {
				return err
			}
			if ep.Handler != config.HandlerBilling || ep.Verifier.Name() != "stripe" {
				return usagef("reconcile compares the billing domain: endpoint %s must be a stripe endpoint with handler billing", ep.Name)
			}
			key, err := a.apiKey(keyEnv, "STRIPE_SECRET_KEY")
			if err != nil {
				return err
			}
			client := backfill.NewHTTPClient(backfill.ClientConfig{Rate: rate, WaitFunc: func(wait time.Duration, status int) {
				fmt.Fprintf(a.stderr, "hookinbox: rate limited (%d): waiting %s\n", status, wait.Round(time.Second))
			}})
			sc := stripe.NewClient(key, stripe.WithBackends(backfill.StripeBackends(client, apiURL)))
			return a.withOpenBackend(ctx, &f, cfg, func(b *server.Backend) error {
				recv, ok := b.Inbox.(backfill.Receiver)
				if !ok || b.Billing == nil {
					return errors.New("the inbox cannot receive events directly")
				}
				res, err := reconcile.Run(ctx, sc, reconcile.Local{Billing: b.Billing, Inbox: recv, Executor: b.Executor},
					&reconcile.Config{Endpoint: ep.Name, Since: from, Repair: repair})
				if err != nil {
					return err
				}
				if err := a.printDrift(res, repair, asJSON); err != nil {
					return err
				}
				if open := unresolved(res); open > 0 {
					return fmt.Errorf("%d invoices differ from Stripe's", open)
				}
				return nil
			})
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&endpoint, "endpoint", "", "the billing endpoint that receives Stripe's webhooks (required)")
	fl.StringVar(&since, "since", "", "invoices changed after: a duration back from now (720h) or a time (2026-11-01); default every invoice")
	fl.BoolVar(&repair, "repair", false, "feed each drifted invoice's state through the inbox as a synthetic event")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	fl.StringVar(&keyEnv, "api-key-env", "", "environment variable holding the Stripe API key (default STRIPE_SECRET_KEY)")
	fl.StringVar(&apiURL, "api-url", "", "Stripe's API base URL, for a test double (default Stripe's own)")
	fl.Float64Var(&rate, "rate", 10, "most API requests per second")
	return cmd
}

// unresolved counts the invoices that still differ: all of them without a repair,
// those the repair did not resolve with one (pending ones included).
func unresolved(res *reconcile.Result) int {
	n := 0
	for _, d := range res.Drift {
		if !d.Resolved {
			n++
		}
	}
	return n
}

// driftJSON is reconcile --json's document. Field names are part of the CLI's
// contract.
type driftJSON struct {
	Compared int         `json:"compared"`
	Drift    []driftItem `json:"drift"`
}

type driftItem struct {
	InvoiceID    string `json:"invoice_id"`
	Kind         string `json:"kind"`
	LocalStatus  string `json:"local_status,omitempty"`
	LocalAmount  *int64 `json:"local_amount_paid,omitempty"`
	StripeStatus string `json:"stripe_status"`
	StripeAmount int64  `json:"stripe_amount_paid"`
	EventID      string `json:"event_id,omitempty"`
	Outcome      string `json:"outcome,omitempty"`
	Resolved     bool   `json:"resolved"`
	Anomaly      string `json:"anomaly,omitempty"`
}

func (a *app) printDrift(res *reconcile.Result, repair, asJSON bool) error {
	if asJSON {
		doc := driftJSON{Compared: res.Compared, Drift: []driftItem{}}
		for _, d := range res.Drift {
			it := driftItem{InvoiceID: d.Remote.ID, Kind: string(d.Kind), StripeStatus: d.Remote.Status, StripeAmount: d.Remote.AmountPaid,
				EventID: d.EventID, Outcome: string(d.Outcome), Resolved: d.Resolved, Anomaly: d.Anomaly}
			if d.Local != nil {
				it.LocalStatus, it.LocalAmount = d.Local.Status, &d.Local.AmountPaid
			}
			doc.Drift = append(doc.Drift, it)
		}
		return json.NewEncoder(a.stdout).Encode(doc)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	head := "INVOICE\tDRIFT\tLOCAL\tSTRIPE"
	if repair {
		head += "\tREPAIR\tRESULT"
	}
	fmt.Fprintln(tw, head)
	for _, d := range res.Drift {
		local := "-"
		if d.Local != nil {
			local = d.Local.Status + " " + strconv.FormatInt(d.Local.AmountPaid, 10)
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s %d", d.Remote.ID, d.Kind, local, d.Remote.Status, d.Remote.AmountPaid)
		if repair {
			result := "resolved"
			switch {
			case d.Anomaly != "":
				result = "anomaly " + d.Anomaly
			case !d.Resolved:
				result = "pending for the workers"
			}
			line += fmt.Sprintf("\t%s %s\t%s", d.EventType, d.Outcome, result)
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "%d invoices compared, %d differ, %d still differ\n", res.Compared, len(res.Drift), unresolved(res))
	return err
}
