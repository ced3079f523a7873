package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-github/v74/github"
	"github.com/spf13/cobra"
	"github.com/stripe/stripe-go/v82"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/backfill"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
)

// backfillFlags are backfill's flags.
type backfillFlags struct {
	db         dbFlags
	endpoint   string
	since      string
	types      []string
	repo       string
	hookID     int64
	failedOnly bool
	keyEnv     string
	apiURL     string
	rate       float64
	pageSize   int
	restart    bool
	asJSON     bool
}

func (a *app) backfillCommand() *cobra.Command {
	var f backfillFlags
	cmd := &cobra.Command{
		Use:   "backfill --endpoint NAME [--since 96h] [flags]",
		Short: "Feed the events the receiver missed from the provider's API through the inbox",
		Long: `Feed the events the receiver missed from the provider's API through the inbox.

Run it after an outage longer than the provider's retry window (Stripe retries for 3
days, GitHub never): it pages through Stripe's event list (GET /v1/events) or a GitHub
hook's deliveries, and receives each event on the endpoint as a webhook delivery would
be received, under the same key (provider, endpoint, event id). An event received
before is a duplicate; a missed one is processed (sync endpoint) or stored pending for
serve's workers (async), and its receipt's origin is "backfill" (hookinbox events show).

The position is kept in the database after every event: a run stopped with Ctrl-C or
killed resumes where it stopped when the same command runs again (--restart starts
over). It cannot recover what the provider no longer keeps: Stripe lists the events of
the last 30 days, GitHub a hook's deliveries of the last 3 days.

The API key is read from the environment (--api-key-env: STRIPE_SECRET_KEY, or
GITHUB_TOKEN for GitHub), never from the config or a flag, and never printed. Requests
are paced (--rate) and a 429 waits for its Retry-After. See docs/BACKFILL.md.`,
		Example: `  STRIPE_SECRET_KEY=rk_live_... hookinbox backfill --config hookinbox.yaml --endpoint billing --since 96h
  GITHUB_TOKEN=ghp_... hookinbox backfill --config hookinbox.yaml --endpoint gateway --repo acme/app --hook-id 123 --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.runBackfill(ctx, &f)
		},
	}
	f.db.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.endpoint, "endpoint", "", "the endpoint that receives the provider's webhooks (required)")
	fl.StringVar(&f.since, "since", "", "only events created after: a duration back from now (96h) or a time (2026-11-20, 2026-11-20T08:00:00Z); default everything the provider keeps")
	fl.StringSliceVar(&f.types, "types", nil, "Stripe: event types to list: one with a wildcard (invoice.*) or up to 20 without; default every type")
	fl.StringVar(&f.repo, "repo", "", "GitHub: the repository OWNER/NAME of the hook")
	fl.Int64Var(&f.hookID, "hook-id", 0, "GitHub: the repository webhook's id")
	fl.BoolVar(&f.failedOnly, "failed-only", false, "GitHub: feed only the deliveries GitHub recorded as failed")
	fl.StringVar(&f.keyEnv, "api-key-env", "", "environment variable holding the API key (default STRIPE_SECRET_KEY, or GITHUB_TOKEN)")
	fl.StringVar(&f.apiURL, "api-url", "", "the provider's API base URL, for a test double (default the provider's own)")
	fl.Float64Var(&f.rate, "rate", 10, "most API requests per second")
	fl.IntVar(&f.pageSize, "page-size", 100, "events listed per request, at most 100")
	fl.BoolVar(&f.restart, "restart", false, "ignore an unfinished checkpoint and start from the beginning of the list")
	fl.BoolVar(&f.asJSON, "json", false, "print progress as JSON lines, one per page, the last with \"done\"")
	return cmd
}

// parseSince reads --since: a duration back from now, a date or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, usagef("--since %s: a duration must be positive", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("--since %q is neither a duration (96h) nor a time (2026-11-20 or 2026-11-20T08:00:00Z)", s)
}

// endpointOf returns the configured endpoint named name.
func endpointOf(cfg *config.Config, name string) (*config.Endpoint, error) {
	if name == "" {
		return nil, usagef("--endpoint is required: the endpoint that receives the provider's webhooks")
	}
	for i := range cfg.Endpoints {
		if cfg.Endpoints[i].Name == name {
			return &cfg.Endpoints[i], nil
		}
	}
	return nil, usagef("no endpoint %q in the config", name)
}

// apiKey reads the API key from the environment variable env, or def when env is "".
func (a *app) apiKey(env, def string) (string, error) {
	if env == "" {
		env = def
	}
	key, ok := a.lookupEnv(env)
	if !ok || strings.TrimSpace(key) == "" {
		return "", usagef("no API key: set %s (or name another variable with --api-key-env)", env)
	}
	return key, nil
}

func (a *app) runBackfill(ctx context.Context, f *backfillFlags) error {
	since, err := parseSince(f.since, time.Now())
	if err != nil {
		return err
	}
	if f.rate <= 0 {
		return usagef("--rate must be positive")
	}
	if f.pageSize < 1 || f.pageSize > 100 {
		return usagef("--page-size must be 1 to 100")
	}
	cfg, err := a.loadConfig(&f.db, true, false)
	if err != nil {
		return err
	}
	ep, err := endpointOf(cfg, f.endpoint)
	if err != nil {
		return err
	}
	client := backfill.NewHTTPClient(backfill.ClientConfig{
		Rate: f.rate,
		WaitFunc: func(wait time.Duration, status int) {
			fmt.Fprintf(a.stderr, "hookinbox: rate limited (%d): waiting %s\n", status, wait.Round(time.Second))
		},
	})
	var src backfill.Source
	switch ep.Verifier.Name() {
	case "stripe":
		if f.repo != "" || f.hookID != 0 || f.failedOnly {
			return usagef("--repo, --hook-id and --failed-only are for GitHub endpoints; %s is a Stripe endpoint", ep.Name)
		}
		key, err := a.apiKey(f.keyEnv, "STRIPE_SECRET_KEY")
		if err != nil {
			return err
		}
		sc := stripe.NewClient(key, stripe.WithBackends(backfill.StripeBackends(client, f.apiURL)))
		if src, err = backfill.NewStripe(sc, backfill.StripeConfig{Types: f.types, Since: since, PageSize: int64(f.pageSize)}); err != nil {
			return &usageError{err}
		}
	case "github":
		if len(f.types) > 0 {
			return usagef("--types is for Stripe endpoints; %s is a GitHub endpoint", ep.Name)
		}
		owner, repo, ok := strings.Cut(f.repo, "/")
		if !ok || owner == "" || repo == "" || f.hookID <= 0 {
			return usagef("a GitHub backfill needs --repo OWNER/NAME and --hook-id")
		}
		key, err := a.apiKey(f.keyEnv, "GITHUB_TOKEN")
		if err != nil {
			return err
		}
		gc := github.NewClient(client).WithAuthToken(key)
		if f.apiURL != "" {
			u, err := url.Parse(strings.TrimSuffix(f.apiURL, "/") + "/")
			if err != nil {
				return usagef("--api-url: %v", err)
			}
			gc.BaseURL = u
		}
		if src, err = backfill.NewGitHub(gc, backfill.GitHubConfig{
			Owner: owner, Repo: repo, HookID: f.hookID, Since: since, FailedOnly: f.failedOnly, PageSize: f.pageSize,
		}); err != nil {
			return &usageError{err}
		}
	default:
		return usagef("backfill lists Stripe and GitHub events; endpoint %s is %s", ep.Name, ep.Provider)
	}

	return a.withOpenBackend(ctx, &f.db, cfg, func(b *server.Backend) error {
		recv, ok := b.Inbox.(backfill.Receiver)
		if !ok {
			return errors.New("the inbox cannot receive events directly")
		}
		pr := newProgressPrinter(a.stdout, f.asJSON)
		res, err := backfill.Run(ctx, recv, b.Executor, src, &backfill.Config{
			Endpoint: ep.Name, Restart: f.restart, ProgressFunc: pr.print,
		})
		if res != nil {
			pr.finish(res, err)
		}
		if err != nil {
			return err
		}
		return nil
	})
}

// withOpenBackend opens the database of cfg for a command that feeds the inbox, with
// a current schema, and closes it afterwards.
func (a *app) withOpenBackend(ctx context.Context, f *dbFlags, cfg *config.Config, fn func(*server.Backend) error) error {
	b, err := a.openBackend(ctx, f, cfg, true)
	if err != nil {
		return err
	}
	defer b.Close()
	return fn(b)
}

// progressPrinter shows a backfill's progress: on a terminal one line rewritten after
// every event, elsewhere a line per page, or JSON lines with --json.
type progressPrinter struct {
	w        io.Writer
	asJSON   bool
	terminal bool
	pages    int
}

func newProgressPrinter(w io.Writer, asJSON bool) *progressPrinter {
	p := &progressPrinter{w: w, asJSON: asJSON}
	if f, ok := w.(*os.File); ok && !asJSON {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// progressJSON is a line of backfill --json. Field names are part of the CLI's
// contract.
type progressJSON struct {
	Checkpoint string         `json:"checkpoint"`
	Resumed    bool           `json:"resumed"`
	Pages      int            `json:"pages"`
	Fed        int64          `json:"fed"`
	Counts     map[string]int `json:"counts"`
	LastID     string         `json:"last_event_id,omitempty"`
	Done       bool           `json:"done"`
	Error      string         `json:"error,omitempty"`
}

func toProgressJSON(p backfill.Progress) progressJSON {
	pj := progressJSON{Checkpoint: p.Checkpoint, Resumed: p.Resumed, Pages: p.Pages, Fed: p.Fed, Counts: map[string]int{}, Done: p.Done}
	for k, v := range p.Counts {
		pj.Counts[string(k)] = v
	}
	if p.Last != nil {
		pj.LastID = p.Last.ID
	}
	return pj
}

// outcomeCounts prints a run's outcomes in a fixed order.
func outcomeCounts(c map[hookinbox.Outcome]int) string {
	var parts []string
	for _, o := range []hookinbox.Outcome{hookinbox.OutcomeProcessed, hookinbox.OutcomeAccepted, hookinbox.OutcomeIgnored, hookinbox.OutcomeDuplicate} {
		parts = append(parts, fmt.Sprintf("%d %s", c[o], o))
	}
	return strings.Join(parts, ", ")
}

func (p *progressPrinter) print(pr backfill.Progress) {
	switch {
	case p.asJSON:
		if pr.Last == nil && !pr.Done { // end of a page
			_ = json.NewEncoder(p.w).Encode(toProgressJSON(pr))
		}
	case p.terminal:
		last := ""
		if pr.Last != nil {
			last = fmt.Sprintf("  %s %s (%s)", pr.Last.ID, pr.Last.Type, pr.Last.Created.UTC().Format(time.DateTime))
		}
		fmt.Fprintf(p.w, "\r\033[Kpage %d, %d events: %s%s", pr.Pages, pr.Fed, outcomeCounts(pr.Counts), last)
	default:
		if pr.Last == nil && !pr.Done {
			fmt.Fprintf(p.w, "page %d, %d events: %s\n", pr.Pages, pr.Fed, outcomeCounts(pr.Counts))
		}
	}
}

func (p *progressPrinter) finish(res *backfill.Result, err error) {
	if p.asJSON {
		pj := toProgressJSON(res.Progress)
		if err != nil {
			pj.Error = err.Error()
		}
		_ = json.NewEncoder(p.w).Encode(pj)
		return
	}
	if p.terminal {
		fmt.Fprintln(p.w)
	}
	resumed := ""
	if res.Resumed {
		resumed = " (resumed)"
	}
	if err != nil {
		fmt.Fprintf(p.w, "stopped%s after %d events of %s: %s; run the same command again to resume\n",
			resumed, res.Fed, res.Checkpoint, outcomeCounts(res.Counts))
		return
	}
	fmt.Fprintf(p.w, "done%s: %d events of %s in %d pages: %s\n", resumed, res.Fed, res.Checkpoint, res.Pages, outcomeCounts(res.Counts))
}
