package config

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/provider"
)

// reservedPaths are served by the binary itself.
var reservedPaths = []string{"/healthz", "/readyz", "/metrics", "/admin"}

// validate turns the file's values, with environment overrides, into a Config, or
// returns the first problem as an *Error.
func validate(file string, fc *fileConfig, opts Options) (*Config, error) {
	v := &validator{file: file, opts: opts}
	cfg := &Config{
		Path:          file,
		DatabaseURL:   fc.DatabaseURL,
		Listen:        fc.Listen,
		AdminTokenEnv: fc.Admin.TokenEnv,
	}
	listenKey := "listen"
	if env, ok := opts.LookupEnv(EnvDatabaseURL); ok && env != "" {
		cfg.DatabaseURL = env
	}
	if err := v.database(cfg, fc); err != nil {
		return nil, err
	}
	if err := v.listener(cfg, fc); err != nil {
		return nil, err
	}
	if env, ok := opts.LookupEnv(EnvListen); ok && env != "" {
		cfg.Listen, listenKey = env, EnvListen
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return nil, v.keyError(listenKey, "%q is not a host:port address", cfg.Listen)
	}

	natsKey := "nats_url"
	cfg.NATSURL = fc.NATSURL
	if env, ok := opts.LookupEnv(EnvNATSURL); ok && env != "" {
		cfg.NATSURL, natsKey = env, EnvNATSURL
	}
	if cfg.NATSURL == "" {
		cfg.NATSURL = DefaultNATSURL
	}
	if err := checkNATSURL(cfg.NATSURL); err != nil {
		return nil, v.keyError(natsKey, "%v", err)
	}

	var err error
	if cfg.Accept, err = v.group("group_commit.accept", &fc.GroupCommit.Accept); err != nil {
		return nil, err
	}
	if cfg.Sync, err = v.group("group_commit.sync", &fc.GroupCommit.Sync); err != nil {
		return nil, err
	}
	cfg.PollOnly = fc.Worker.PollOnly
	cfg.RecordRequests = fc.RecordRequests == nil || *fc.RecordRequests
	if cfg.Worker, err = v.worker(&fc.Worker); err != nil {
		return nil, err
	}
	if cfg.Outbox, cfg.OutboxSink, err = v.outbox(&fc.Outbox); err != nil {
		return nil, err
	}
	if cfg.HTTP, err = v.http(&fc.HTTP); err != nil {
		return nil, err
	}
	if fc.Roles != nil {
		if cfg.Roles, err = ParseRoles(fc.Roles); err != nil {
			return nil, v.keyError("roles", "%s", err.Error())
		}
	}
	if cfg.ShutdownTimeout, err = v.duration("shutdown_timeout", fc.ShutdownTimeout, DefaultShutdownTimeout); err != nil {
		return nil, err
	}
	if cfg.Retention, err = v.duration("retention.processed", fc.Retention.Processed, DefaultRetention); err != nil {
		return nil, err
	}
	if iv := fc.Retention.Interval; iv != nil && strings.TrimSpace(*iv) == "off" {
		cfg.CleanerInterval = 0
	} else if cfg.CleanerInterval, err = v.duration("retention.interval", iv, DefaultCleanerInterval); err != nil {
		return nil, err
	}
	if cfg.PurgePayloadsAfter, err = v.duration("retention.payloads", fc.Retention.Payloads, 0); err != nil {
		return nil, err
	}

	names := map[string]int{}
	paths := map[string]int{}
	for i := range fc.Endpoints {
		ep, err := v.endpoint(i, &fc.Endpoints[i])
		if err != nil {
			return nil, err
		}
		if j, dup := names[ep.Name]; dup {
			return nil, v.keyError(fmt.Sprintf("endpoints[%d].name", i), "duplicate name %q (also endpoints[%d])", ep.Name, j)
		}
		if j, dup := paths[ep.Path]; dup {
			return nil, v.keyError(fmt.Sprintf("endpoints[%d].path", i), "duplicate path %q (also endpoints[%d])", ep.Path, j)
		}
		names[ep.Name], paths[ep.Path] = i, i
		cfg.Endpoints = append(cfg.Endpoints, *ep)
	}

	if err := v.bodyBudget(cfg.HTTP, cfg.Endpoints); err != nil {
		return nil, err
	}

	if cfg.Console, err = v.console(&fc.Console, cfg.Listen); err != nil {
		return nil, err
	}
	if c := cfg.Console; c != nil {
		for i, ep := range cfg.Endpoints {
			if c.Listen == "" && (ep.Path == c.Path || strings.HasPrefix(ep.Path, c.Path+"/")) {
				return nil, v.keyError(fmt.Sprintf("endpoints[%d].path", i), "%q is under console.path %q", ep.Path, c.Path)
			}
		}
	}

	// A receipt deleted before the provider stops retrying turns the late retry into
	// a new event, processed a second time.
	if window, ep := cfg.MaxRetryWindow(); cfg.Retention < window {
		return nil, v.keyError("retention.processed",
			"%s is shorter than the %s retry window of provider %s (endpoint %q): a late retry would be processed twice",
			cfg.Retention, window, ep.Provider, ep.Name)
	}
	return cfg, nil
}

type validator struct {
	file string
	opts Options
}

func (v *validator) keyError(key, format string, args ...any) *Error {
	return errorf(v.file, key, format, args...)
}

// duration parses an optional Go duration string, which must be positive when given.
func (v *validator) duration(key string, s *string, def time.Duration) (time.Duration, error) {
	if s == nil {
		return def, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(*s))
	if err != nil {
		return 0, v.keyError(key, "%q is not a duration (write e.g. 30s, 2m, 720h)", *s)
	}
	if d <= 0 {
		return 0, v.keyError(key, "must be positive, got %s", *s)
	}
	return d, nil
}

// atLeastOne reads an optional count, which must be at least 1 when given.
func (v *validator) atLeastOne(key string, n *int, def int) (int, error) {
	if n == nil {
		return def, nil
	}
	if *n < 1 {
		return 0, v.keyError(key, "must be at least 1, got %d", *n)
	}
	return *n, nil
}

func (v *validator) worker(fw *fileWorker) (hookinbox.WorkerConfig, error) {
	var w hookinbox.WorkerConfig
	var err error
	if w.Concurrency, err = v.atLeastOne("worker.concurrency", fw.Concurrency, 0); err != nil {
		return w, err
	}
	if w.MaxAttempts, err = v.atLeastOne("worker.max_attempts", fw.MaxAttempts, 0); err != nil {
		return w, err
	}
	if w.BatchSize, err = v.atLeastOne("worker.batch_size", fw.BatchSize, 0); err != nil {
		return w, err
	}
	if w.Lease, err = v.duration("worker.lease", fw.Lease, 0); err != nil {
		return w, err
	}
	if w.StatementTimeout, err = v.duration("worker.statement_timeout", fw.StatementTimeout, 0); err != nil {
		return w, err
	}
	if w.PollInterval, err = v.duration("worker.poll_interval", fw.PollInterval, 0); err != nil {
		return w, err
	}
	// The statement timeout must end a stuck transaction before the lease hands the
	// receipt to another worker.
	if d := w.WithDefaults(); d.StatementTimeout >= d.Lease {
		return w, v.keyError("worker.statement_timeout", "%s must be shorter than worker.lease (%s)", d.StatementTimeout, d.Lease)
	}
	return w, nil
}

func (v *validator) group(key string, fg *fileGroup) (hookinbox.GroupConfig, error) {
	var g hookinbox.GroupConfig
	var err error
	if g.Flushers, err = v.atLeastOne(key+".flushers", fg.Flushers, 0); err != nil {
		return g, err
	}
	if g.MaxBatch, err = v.atLeastOne(key+".max_batch", fg.MaxBatch, 0); err != nil {
		return g, err
	}
	if g.QueueSize, err = v.atLeastOne(key+".queue_size", fg.QueueSize, 0); err != nil {
		return g, err
	}
	return g, nil
}

func (v *validator) endpoint(i int, fe *fileEndpoint) (*Endpoint, error) {
	key := func(k string) string { return fmt.Sprintf("endpoints[%d].%s", i, k) }
	ep := &Endpoint{Name: fe.Name, Path: fe.Path, Provider: fe.Provider, Options: fe.Options, Paused: fe.Paused}

	if ep.Name == "" {
		return nil, v.keyError(key("name"), "required")
	}
	if err := checkPath(fe.Path); err != nil {
		return nil, v.keyError(key("path"), "%v", err)
	}
	if ep.Provider == "" {
		return nil, v.keyError(key("provider"), "required (one of %s)", strings.Join(provider.Names(), ", "))
	}
	if !slices.Contains(provider.Names(), ep.Provider) {
		return nil, v.keyError(key("provider"), "unknown provider %q (known: %s)", ep.Provider, strings.Join(provider.Names(), ", "))
	}
	if fe.Secret.Kind != 0 || fe.Secrets.Kind != 0 {
		k := "secret"
		if fe.Secrets.Kind != 0 {
			k = "secrets"
		}
		return nil, v.keyError(key(k), "inline secrets are not allowed; name an environment variable in secrets_env or a file in secrets_file")
	}

	switch m := hookinbox.Mode(fe.Mode); m {
	case "":
		ep.Mode = hookinbox.ModeSync
	case hookinbox.ModeSync, hookinbox.ModeAsync, hookinbox.ModeHybrid:
		ep.Mode = m
	default:
		return nil, v.keyError(key("mode"), "unknown mode %q (want sync, async or hybrid)", fe.Mode)
	}

	switch h := Handler(fe.Handler); h {
	case "":
		return nil, v.keyError(key("handler"), "required (billing, forward or none)")
	case HandlerBilling:
		if ep.Provider != "stripe" {
			return nil, v.keyError(key("handler"), "billing applies Stripe invoice events; provider must be stripe, not %q", ep.Provider)
		}
		ep.Handler = h
	case HandlerNone:
		ep.Handler = h
	case HandlerForward:
		if fe.Forward == nil {
			return nil, v.keyError(key("forward"), "required with handler forward: {url: http://...} or {nats_subject: ...}")
		}
		fwd, err := v.sink(key("forward"), fe.Forward)
		if err != nil {
			return nil, err
		}
		if fwd.Options.Ordered {
			// ForwardTo writes each event as its own aggregate (provider, event id):
			// there is nothing to order, and the setting would promise what it cannot.
			return nil, v.keyError(key("forward.ordered"), "a forwarded event is its own aggregate (provider and event id), so there is no order to keep; ordered applies to outbox.sink, whose handlers write several messages per aggregate")
		}
		ep.Handler, ep.Forward = h, fwd
	default:
		return nil, v.keyError(key("handler"), "unknown handler %q (want billing, forward or none)", fe.Handler)
	}
	if fe.Forward != nil && ep.Handler != HandlerForward {
		return nil, v.keyError(key("forward"), "only used with handler forward, not %s", ep.Handler)
	}

	if fe.Tolerance != nil {
		// The library reads zero as "default"; an explicit 0 in a file is more likely
		// an attempt to disable the replay check, which is never allowed.
		d, err := time.ParseDuration(strings.TrimSpace(*fe.Tolerance))
		if err != nil {
			return nil, v.keyError(key("tolerance"), "%q is not a duration (write e.g. 5m)", *fe.Tolerance)
		}
		if d <= 0 {
			return nil, v.keyError(key("tolerance"), "must be positive, got %s (omit it for the provider's default)", *fe.Tolerance)
		}
		ep.Tolerance = d
	}
	if fe.MaxBodyBytes != nil {
		if *fe.MaxBodyBytes <= 0 {
			return nil, v.keyError(key("max_body_bytes"), "must be positive, got %d", *fe.MaxBodyBytes)
		}
		ep.MaxBodyBytes = *fe.MaxBodyBytes
	}

	var secrets, publicKeys, sources []string
	var err error
	if provider.TakesPublicKeys(ep.Provider) {
		publicKeys, sources, err = v.publicKeys(i, fe)
	} else {
		secrets, sources, err = v.secrets(i, fe)
	}
	if err != nil {
		return nil, err
	}
	ep.SecretSources = sources
	ep.Verifier, err = provider.New(ep.Provider, provider.Options{
		Secrets: secrets, PublicKeys: publicKeys, Tolerance: ep.Tolerance, Params: ep.Options,
	})
	if err != nil {
		// Name, tolerance and secrets were checked above: what is left is options,
		// or the public keys' values.
		k := key("options")
		switch {
		case len(publicKeys) > 0 && strings.Contains(err.Error(), "public key"):
			k = key("public_keys")
		case len(ep.Options) == 0:
			k = fmt.Sprintf("endpoints[%d]", i)
		}
		return nil, v.keyError(k, "%s", oneLine(err.Error()))
	}
	return ep, nil
}

// checkPath accepts an exact path that the HTTP mux can route and that does not
// shadow the binary's own routes.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("required")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q must start with /", p)
	case p == "/" || strings.HasSuffix(p, "/"):
		// A trailing slash makes a subtree pattern that catches every path below it.
		return fmt.Errorf("%q must not end with /", p)
	case strings.ContainsAny(p, "{} \t\r\n?#"):
		return fmt.Errorf("%q must be a plain path (no spaces, wildcards, query or fragment)", p)
	}
	for _, r := range reservedPaths {
		if p == r || strings.HasPrefix(p, r+"/") {
			return fmt.Errorf("%q is reserved for the binary's own %s", p, r)
		}
	}
	return nil
}
