package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/probe"
	"github.com/hookinbox/hookinbox/internal/sign"
)

// probeFlags are probe's options.
type probeFlags struct {
	target, provider               string
	secretEnv, secretFile, keyFile string
	options                        map[string]string
	checkDatabaseURL, checkSQL     string
	checkURL                       string
	facts, concurrency             int
	scenarios                      []string
	timeScale                      float64
	settle                         time.Duration
	json                           bool
	junit                          string
}

func (a *app) probeCommand() *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe --target URL --provider NAME (--secret-env VAR | --secret-file F | --private-key-file F) (--check-database-url URL --check-sql QUERY | --check-url URL)",
		Short: "Test any webhook receiver for lost and doubled events",
		Long: `Test a webhook receiver, yours or hookinbox, for lost and doubled events: deliver
signed events about made-up facts the way the provider delivers them, then read the
receiver's own record of what it applied and compare.

Each scenario delivers --facts facts of its own. A fact is one thing that happened at
the provider that the receiver must apply once, told by a few Event objects (for
stripe an invoice: invoice.created, invoice.finalized, then invoice.paid, or every
fourth invoice.voided; docs/PROBE.md lists every provider's):
  baseline       each event once, in order (always runs first; measures the
                 receiver's answer time)
  duplicates     each event twice at the same instant
  retries        the first attempt hung up while the receiver works (the provider's
                 timeout), then retries on the provider's schedule
  timeout        the first attempt hung up likewise, and a retry at once, while the
                 first copy may still run
  reorder        each fact's events in reverse order
  second-object  the outcome and a second Event object for the same fact at once
                 (stripe: invoice.payment_succeeded beside invoice.paid)
  burst          every event of every fact at once, each twice, in random order
Any answer but a 2xx is retried on the provider's documented schedule (stripe: 3
days of exponential backoff; svix and standardwebhooks: 5s, 5m, 30m, 2h, 5h, 10h,
10h; github: no retries, one manual redelivery), compressed by --time-scale.

The check is the receiver's own state: --check-sql runs on --check-database-url and
returns rows (fact_id text, applied integer), one per fact the receiver applied and
how many times, e.g.
  SELECT invoice_id AS fact_id, count(*) AS applied FROM payments GROUP BY invoice_id
(it may take the run's fact ids as $1, a text[]); or --check-url answers a GET with
the same as a JSON array: [{"fact_id": "in_...", "applied": 1}]. A fact acknowledged
(2xx) but applied 0 times is lost; applied more than once, doubled; never applied
and never acknowledged before the provider gave up, undelivered.

Output: a table per scenario and, for each failure, the fact and every delivery with
its answers; --json prints one object ({"lost": N, "doubled": N, "scenarios": [...]}),
--junit FILE writes JUnit XML for CI. Exit codes: 0 nothing lost, doubled or
undelivered; 1 something was; 2 usage errors, a target that cannot be reached, a
receiver that refuses every delivery (a wrong secret: 401), a check that fails or
returns other columns. Reference: docs/PROBE.md.`,
		Example: `  # a Stripe receiver of your own, judged by its payments table
  hookinbox probe --target http://127.0.0.1:8000/stripe/webhook --provider stripe \
      --secret-env STRIPE_WEBHOOK_SECRET \
      --check-database-url postgres://app@127.0.0.1:5432/app \
      --check-sql 'SELECT invoice_id AS fact_id, count(*) AS applied FROM payments GROUP BY invoice_id'

  # hookinbox serve with examples/hookinbox.yaml, quicker, in CI
  hookinbox probe --target http://127.0.0.1:8080/webhooks/stripe --provider stripe \
      --secret-env STRIPE_WEBHOOK_SECRET --check-database-url "$HOOKINBOX_DATABASE_URL" \
      --check-sql "SELECT invoice_id AS fact_id, count(*) AS applied FROM ledger_entries GROUP BY invoice_id
                   UNION ALL SELECT id, 1 FROM invoices WHERE status = 'void'" \
      --facts 10 --time-scale 100000 --junit probe.xml`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.probe(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "", "the receiver's webhook URL")
	fl.StringVar(&f.provider, "provider", "", "the provider to deliver as: "+strings.Join(sign.Names(), ", "))
	fl.StringVar(&f.secretEnv, "secret-env", "", "environment variable holding the signing secret (discord, sendgrid: the private key)")
	fl.StringVar(&f.secretFile, "secret-file", "", "file holding the signing secret")
	fl.StringVar(&f.keyFile, "private-key-file", "", "file holding the private key, for discord (Ed25519 seed, hex) and sendgrid (P-256, base64 DER)")
	fl.StringToStringVar(&f.options, "option", nil, "provider option key=value, as in hookinbox's endpoint options (hmac's scheme; public_url for twilio and square)")
	fl.StringVar(&f.checkDatabaseURL, "check-database-url", "", "the receiver's database, for --check-sql")
	fl.StringVar(&f.checkSQL, "check-sql", "", "query returning (fact_id text, applied integer) per applied fact")
	fl.StringVar(&f.checkURL, "check-url", "", "URL answering a GET with [{\"fact_id\": ..., \"applied\": N}]")
	fl.IntVar(&f.facts, "facts", 20, "facts per scenario")
	fl.StringSliceVar(&f.scenarios, "scenario", nil, "scenarios to run, comma-separated (default all): "+strings.Join(probe.Scenarios, ", "))
	fl.Float64Var(&f.timeScale, "time-scale", 3600, "compress the provider's retry schedule: 3600 makes an hour a second")
	fl.IntVar(&f.concurrency, "concurrency", 8, "facts delivered at once (burst: requests in flight)")
	fl.DurationVar(&f.settle, "settle", 2*time.Second, "how long to read the check again while acknowledged facts are unapplied, for a receiver that applies after answering (0: read it once)")
	fl.BoolVar(&f.json, "json", false, "print the report as one JSON object")
	fl.StringVar(&f.junit, "junit", "", "write the report as JUnit XML to this file")
	return cmd
}

// probe runs the probe and prints its report.
func (a *app) probe(cmd *cobra.Command, f *probeFlags) error {
	cfg, err := a.probeConfig(f)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.checkURL != "" {
		cfg.Check = &probe.URLCheck{URL: f.checkURL, Client: &http.Client{Timeout: 30 * time.Second}}
	} else {
		check, err := probe.NewSQLCheck(ctx, f.checkDatabaseURL, f.checkSQL)
		if err != nil {
			return probeError(err)
		}
		defer check.Close(cmd.Context())
		cfg.Check = check
	}
	report, err := probe.Run(ctx, cfg)
	if err != nil {
		return probeError(err)
	}
	if f.json {
		err = report.WriteJSON(a.stdout)
	} else {
		err = report.WriteTable(a.stdout)
	}
	if err != nil {
		return err
	}
	if f.junit != "" {
		file, err := os.Create(f.junit)
		if err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
		err = report.WriteJUnit(file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--junit %s: %w", f.junit, err)
		}
	}
	if report.Failed() {
		return fmt.Errorf("probe: %d lost, %d doubled, %d undelivered", report.Lost, report.Doubled, report.Undelivered)
	}
	return nil
}

// probeError makes the probe's input errors usage errors (exit 2).
func probeError(err error) error {
	var ie *probe.InputError
	if errors.As(err, &ie) {
		return usagef("probe: %v", err)
	}
	return err
}

// probeConfig checks the flags and builds the run's configuration, all but the check.
func (a *app) probeConfig(f *probeFlags) (*probe.Config, error) {
	switch {
	case f.target == "":
		return nil, usagef("--target: the receiver's webhook URL is required")
	case f.provider == "":
		return nil, usagef("--provider is required: one of %s", strings.Join(sign.Names(), ", "))
	case !slices.Contains(sign.Names(), f.provider):
		return nil, usagef("--provider %s: unknown (known: %s)", f.provider, strings.Join(sign.Names(), ", "))
	case f.checkURL != "" && (f.checkDatabaseURL != "" || f.checkSQL != ""):
		return nil, usagef("give --check-url, or --check-database-url with --check-sql, not both")
	case f.checkURL == "" && (f.checkDatabaseURL == "" || f.checkSQL == ""):
		return nil, usagef("no check: give --check-database-url with --check-sql, or --check-url; the probe judges by the receiver's own state")
	case f.facts < 1:
		return nil, usagef("--facts must be at least 1")
	case f.concurrency < 1:
		return nil, usagef("--concurrency must be at least 1")
	case f.timeScale < 1:
		return nil, usagef("--time-scale must be at least 1")
	}
	if u, err := url.Parse(f.target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--target %q: not an http:// or https:// URL", f.target)
	}
	for _, s := range f.scenarios {
		if !slices.Contains(probe.Scenarios, s) {
			return nil, usagef("--scenario %s: unknown (known: %s)", s, strings.Join(probe.Scenarios, ", "))
		}
	}
	secret, err := a.probeSecret(f)
	if err != nil {
		return nil, err
	}
	signer, err := sign.For(f.provider, []string{secret}, f.options)
	if err != nil {
		return nil, usagef("--provider %s: %v", f.provider, err)
	}
	settle := f.settle
	if settle <= 0 {
		settle = -1
	}
	return &probe.Config{
		Target: f.target, Provider: f.provider, Signer: signer, Options: f.options, Facts: f.facts,
		Scenarios: f.scenarios, TimeScale: f.timeScale, Concurrency: f.concurrency, Settle: settle,
	}, nil
}

// probeSecret reads the one secret (or private key) the flags name.
func (a *app) probeSecret(f *probeFlags) (string, error) {
	given := 0
	for _, s := range []string{f.secretEnv, f.secretFile, f.keyFile} {
		if s != "" {
			given++
		}
	}
	private := f.provider == "discord" || f.provider == "sendgrid"
	switch {
	case given == 0:
		return "", usagef("no signing secret: give --secret-env VAR, --secret-file F or, for discord and sendgrid, --private-key-file F")
	case given > 1:
		return "", usagef("give one of --secret-env, --secret-file and --private-key-file")
	case f.keyFile != "" && !private:
		return "", usagef("--private-key-file: %s signs with a shared secret; use --secret-env or --secret-file", f.provider)
	case f.secretEnv != "":
		secret, _ := a.lookupEnv(f.secretEnv)
		if strings.TrimSpace(secret) == "" {
			return "", usagef("--secret-env: environment variable %s is empty or unset", f.secretEnv)
		}
		return secret, nil
	}
	name, path := "--secret-file", f.secretFile
	if f.keyFile != "" {
		name, path = "--private-key-file", f.keyFile
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usagef("%s: %v", name, err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", usagef("%s %s is empty", name, path)
	}
	return secret, nil
}
