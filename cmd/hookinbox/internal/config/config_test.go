package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/outbox"
)

const validYAML = `
database_url: postgres://127.0.0.1:5432/hookinbox
listen: 127.0.0.1:9090
endpoints:
  - name: billing
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [STRIPE_OLD, STRIPE_NEW]
    mode: hybrid
    handler: billing
    tolerance: 10m
    max_body_bytes: 2048
  - name: audit
    path: /webhooks/audit
    provider: stripe
    secrets_env: STRIPE_NEW
    handler: none
    paused: true
worker: {concurrency: 2, lease: 1m, max_attempts: 3, statement_timeout: 10s, poll_interval: 250ms}
retention: {processed: 96h}
admin: {token_env: HOOKINBOX_ADMIN_TOKEN}
shutdown_timeout: 5s
`

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

var secretsEnv = env(map[string]string{"STRIPE_OLD": "whsec_old", "STRIPE_NEW": "whsec_new"})

func TestParse_ValidConfig(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("hookinbox.yaml", []byte(validYAML), config.Options{ResolveSecrets: true, LookupEnv: secretsEnv})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != "postgres://127.0.0.1:5432/hookinbox" || cfg.Listen != "127.0.0.1:9090" {
		t.Errorf("database_url/listen = %q, %q", cfg.DatabaseURL, cfg.Listen)
	}
	if len(cfg.Endpoints) != 2 {
		t.Fatalf("got %d endpoints, want 2", len(cfg.Endpoints))
	}
	if cfg.Endpoints[0].Paused || !cfg.Endpoints[1].Paused {
		t.Errorf("paused = %v, %v; want the default false, then the configured true", cfg.Endpoints[0].Paused, cfg.Endpoints[1].Paused)
	}
	b := cfg.Endpoints[0]
	if b.Mode != hookinbox.ModeHybrid || b.Handler != config.HandlerBilling || b.Tolerance != 10*time.Minute || b.MaxBodyBytes != 2048 {
		t.Errorf("billing endpoint = %+v", b)
	}
	if got := strings.Join(b.SecretSources, ","); got != "env STRIPE_OLD,env STRIPE_NEW" {
		t.Errorf("secret sources = %s", got)
	}
	a := cfg.Endpoints[1]
	if a.Mode != hookinbox.ModeSync || a.Handler != config.HandlerNone || a.Tolerance != 0 {
		t.Errorf("audit endpoint = %+v", a)
	}
	want := hookinbox.WorkerConfig{Concurrency: 2, Lease: time.Minute, MaxAttempts: 3, StatementTimeout: 10 * time.Second, PollInterval: 250 * time.Millisecond}
	if cfg.Worker.Concurrency != want.Concurrency || cfg.Worker.Lease != want.Lease || cfg.Worker.MaxAttempts != want.MaxAttempts ||
		cfg.Worker.StatementTimeout != want.StatementTimeout || cfg.Worker.PollInterval != want.PollInterval {
		t.Errorf("worker = %+v", cfg.Worker)
	}
	if cfg.Retention != 96*time.Hour || cfg.ShutdownTimeout != 5*time.Second || cfg.AdminTokenEnv != "HOOKINBOX_ADMIN_TOKEN" {
		t.Errorf("retention/shutdown/admin = %s, %s, %s", cfg.Retention, cfg.ShutdownTimeout, cfg.AdminTokenEnv)
	}
}

func TestParse_Defaults(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("c.yaml", []byte(""), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != config.DefaultListen || cfg.Retention != config.DefaultRetention || cfg.ShutdownTimeout != config.DefaultShutdownTimeout {
		t.Errorf("defaults = %+v", cfg)
	}
	if cfg.CleanerInterval != config.DefaultCleanerInterval || cfg.PurgePayloadsAfter != 0 {
		t.Errorf("cleaner defaults = %s, %s", cfg.CleanerInterval, cfg.PurgePayloadsAfter)
	}
}

func TestParse_CleanerOffAndPayloadPurge(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("c.yaml", []byte("retention: {interval: off, payloads: 168h}\n"), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CleanerInterval != 0 || cfg.PurgePayloadsAfter != 168*time.Hour {
		t.Errorf("cleaner = %s, purge after %s; want off and 168h", cfg.CleanerInterval, cfg.PurgePayloadsAfter)
	}
	if _, err := config.Parse("c.yaml", []byte("retention: {interval: often}\n"), config.Options{LookupEnv: env(nil)}); err == nil || !strings.Contains(err.Error(), "retention.interval") {
		t.Errorf("interval not a duration: %v", err)
	}
}

func TestParse_EnvironmentOverridesFile(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"HOOKINBOX_DATABASE_URL": "postgres://other/db", "HOOKINBOX_LISTEN": "0.0.0.0:1234", "STRIPE_OLD": "a", "STRIPE_NEW": "b"}
	cfg, err := config.Parse("c.yaml", []byte(validYAML), config.Options{ResolveSecrets: true, LookupEnv: env(vars)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != "postgres://other/db" || cfg.Listen != "0.0.0.0:1234" {
		t.Errorf("database_url/listen = %q, %q", cfg.DatabaseURL, cfg.Listen)
	}
}

func TestParse_SecretsFromFilesRelativeToConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stripe.secret"), []byte("whsec_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := `
endpoints:
  - {name: b, path: /s, provider: stripe, handler: billing, secrets_file: stripe.secret}
`
	cfg, err := config.Parse(filepath.Join(dir, "c.yaml"), []byte(yaml), config.Options{ResolveSecrets: true, LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Endpoints[0].SecretSources[0], "file "+filepath.Join(dir, "stripe.secret"); got != want {
		t.Errorf("source = %q, want %q", got, want)
	}
}

// Operator commands run without the service's secrets, and still know the
// providers' retry windows.
func TestParse_WithoutResolvingSecrets(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("c.yaml", []byte(validYAML), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if w, ep := cfg.MaxRetryWindow(); w != 72*time.Hour || ep.Provider != "stripe" {
		t.Errorf("max retry window = %s (%v)", w, ep)
	}
}

// provider: svix is accepted, as `hookinbox send --provider svix` offers it, and
// builds the Standard Webhooks verifier, named standardwebhooks (see provider.New), with
// its options; with or without the secrets resolved.
func TestParse_SvixProvider(t *testing.T) {
	t.Parallel()
	yaml := `
endpoints:
  - {name: svix, path: /webhooks/svix, provider: svix, handler: none, secrets_env: [SVIX_SECRET], options: {retry_window: 96h}}
retention: {processed: 96h}
`
	lookup := env(map[string]string{"SVIX_SECRET": "whsec_aG9va2luYm94LXN2aXgtdGVzdC1rZXk="})
	for _, resolve := range []bool{true, false} {
		cfg, err := config.Parse("c.yaml", []byte(yaml), config.Options{ResolveSecrets: resolve, LookupEnv: lookup})
		if err != nil {
			t.Fatalf("ResolveSecrets %t: %v", resolve, err)
		}
		ep := cfg.Endpoints[0]
		if ep.Provider != "svix" || ep.Verifier.Name() != "standardwebhooks" || ep.Verifier.RetryWindow() != 96*time.Hour {
			t.Errorf("ResolveSecrets %t: provider %q, verifier %q with retry window %s; want svix, standardwebhooks, 96h",
				resolve, ep.Provider, ep.Verifier.Name(), ep.Verifier.RetryWindow())
		}
	}

	// Its retry window counts against retention like any provider's.
	_, err := config.Parse("c.yaml", []byte(strings.Replace(yaml, "processed: 96h", "processed: 72h", 1)), config.Options{LookupEnv: lookup})
	var cerr *config.Error
	if !errors.As(err, &cerr) || cerr.Key != "retention.processed" || !strings.Contains(err.Error(), "provider svix") {
		t.Errorf("retention shorter than svix's retry window: error = %v", err)
	}
}

func TestParse_RefusesWithKeyAndReason(t *testing.T) {
	t.Parallel()
	ep := func(extra string) string {
		return "endpoints:\n  - name: b\n    path: /s\n    provider: stripe\n    handler: billing\n    secrets_env: [STRIPE_NEW]\n" + extra
	}
	fwd := func(target string) string {
		return "endpoints:\n  - {name: b, path: /s, provider: github, handler: forward, secrets_env: [STRIPE_NEW], forward: " + target + "}\n"
	}
	tests := []struct {
		name, yaml, key, reason string
	}{
		{"unknown key", ep("    tolerence: 5m\n"), "endpoints[0].tolerence", "unknown key"},
		{"unknown top-level key", "databse_url: x\n", "databse_url", "unknown key"},
		{"wrong type", "worker: {concurrency: whsec_many}\n", "worker.concurrency", "cannot unmarshal"},
		{"unknown provider", "endpoints:\n  - {name: b, path: /s, provider: strpe, handler: none, secrets_env: [STRIPE_NEW]}\n", "endpoints[0].provider", `unknown provider "strpe"`},
		{"empty secret", "endpoints:\n  - {name: b, path: /s, provider: stripe, handler: none, secrets_env: [EMPTY]}\n", "endpoints[0].secrets_env[0]", "EMPTY is empty"},
		{"unset secret", "endpoints:\n  - {name: b, path: /s, provider: stripe, handler: none, secrets_env: [UNSET]}\n", "endpoints[0].secrets_env[0]", "UNSET is empty or unset"},
		{"padded secret", "endpoints:\n  - {name: b, path: /s, provider: stripe, handler: none, secrets_env: [PADDED]}\n", "endpoints[0].secrets_env[0]", "whitespace"},
		{"no secrets", "endpoints:\n  - {name: b, path: /s, provider: stripe, handler: none}\n", "endpoints[0].secrets_env", "required"},
		{"inline secret", ep("    secret: whsec_oops\n"), "endpoints[0].secret", "inline secrets are not allowed"},
		{"duplicate path", ep("  - {name: c, path: /s, provider: stripe, handler: none, secrets_env: [STRIPE_NEW]}\n"), "endpoints[1].path", `duplicate path "/s"`},
		{"duplicate name", ep("  - {name: b, path: /t, provider: stripe, handler: none, secrets_env: [STRIPE_NEW]}\n"), "endpoints[1].name", `duplicate name "b"`},
		{"reserved path", "endpoints:\n  - {name: b, path: /metrics, provider: stripe, handler: none, secrets_env: [STRIPE_NEW]}\n", "endpoints[0].path", "reserved"},
		{"retention shorter than retry window", ep("retention: {processed: 48h}\n"), "retention.processed", "shorter than the 72h0m0s retry window of provider stripe"},
		{"tolerance zero", ep("    tolerance: 0s\n"), "endpoints[0].tolerance", "must be positive"},
		{"tolerance negative", ep("    tolerance: -1m\n"), "endpoints[0].tolerance", "must be positive"},
		{"tolerance not a duration", ep("    tolerance: 5\n"), "endpoints[0].tolerance", "not a duration"},
		{"unknown mode", ep("    mode: later\n"), "endpoints[0].mode", `unknown mode "later"`},
		{"no handler", "endpoints:\n  - {name: b, path: /s, provider: stripe, secrets_env: [STRIPE_NEW]}\n", "endpoints[0].handler", "required"},
		{"forward without a sink", "endpoints:\n  - {name: b, path: /s, provider: stripe, handler: forward, secrets_env: [STRIPE_NEW]}\n", "endpoints[0].forward", "required with handler forward"},
		{"forward with both sinks", fwd("{url: http://127.0.0.1:9000/events, nats_subject: hooks.x}"), "endpoints[0].forward", "not both"},
		{"forward with neither sink", fwd("{}"), "endpoints[0].forward", "needs url"},
		{"forward to a relative url", fwd("{url: /events}"), "endpoints[0].forward.url", "not an absolute http or https URL"},
		{"forward to another scheme", fwd("{url: 'ftp://127.0.0.1/events'}"), "endpoints[0].forward.url", `"ftp://127.0.0.1/events" is not an absolute http`},
		{"forward url hides its password", fwd("{url: 'tcp://user:whsec_pw@127.0.0.1/x'}"), "endpoints[0].forward.url", "user:xxxxx@"},
		{"forward to an empty url", fwd("{url: ''}"), "endpoints[0].forward.url", "required"},
		{"forward to a wildcard subject", fwd("{nats_subject: 'hooks.*'}"), "endpoints[0].forward.nats_subject", "wildcard"},
		{"forward to a full wildcard subject", fwd("{nats_subject: 'hooks.>'}"), "endpoints[0].forward.nats_subject", "wildcard"},
		{"forward to a subject with an empty token", fwd("{nats_subject: hooks..github}"), "endpoints[0].forward.nats_subject", "empty token"},
		{"forward to a subject with a space", fwd("{nats_subject: 'hooks github'}"), "endpoints[0].forward.nats_subject", "whitespace"},
		{"forward with an unknown key", fwd("{subject: hooks.github}"), "endpoints[0].forward.subject", "unknown key"},
		{"forward target on another handler", ep("    forward: {url: http://127.0.0.1:9000/events}\n"), "endpoints[0].forward", "only used with handler forward, not billing"},
		{"bad nats_url", "nats_url: 127.0.0.1:4222\n", "nats_url", "not a NATS URL"},
		{"nats_url with another scheme", "nats_url: http://127.0.0.1:4222\n", "nats_url", `unknown scheme "http"`},
		{"outbox delivery timeout above lease", "outbox: {lease: 10s, delivery_timeout: 10s}\n", "outbox.delivery_timeout", "shorter than outbox.lease (10s)"},
		{"outbox delivery timeout above the default lease", "outbox: {delivery_timeout: 2m}\n", "outbox.delivery_timeout", "shorter than outbox.lease (1m0s)"},
		{"outbox zero max attempts", "outbox: {max_attempts: 0}\n", "outbox.max_attempts", "at least 1"},
		{"outbox negative concurrency", "outbox: {concurrency: -1}\n", "outbox.concurrency", "at least 1"},
		{"outbox bad poll interval", "outbox: {poll_interval: often}\n", "outbox.poll_interval", "not a duration"},
		{"outbox zero lease", "outbox: {lease: 0s}\n", "outbox.lease", "must be positive"},
		{"outbox unknown key", "outbox: {retries: 3}\n", "outbox.retries", "unknown key"},
		{"outbox sink with neither", "outbox: {sink: {}}\n", "outbox.sink", "needs url"},
		{"outbox sink wildcard", "outbox: {sink: {nats_subject: 'billing.>'}}\n", "outbox.sink.nats_subject", "wildcard"},
		{"outbox zero batch size", "outbox: {batch_size: 0}\n", "outbox.batch_size", "at least 1"},
		{"sink zero concurrency", "outbox: {sink: {url: 'http://127.0.0.1:9000/x', concurrency: 0}}\n", "outbox.sink.concurrency", "at least 1"},
		{"sink rate zero", "outbox: {sink: {url: 'http://127.0.0.1:9000/x', rate: 0}}\n", "outbox.sink.rate", "must be positive"},
		{"forward rate negative", fwd("{url: http://127.0.0.1:9000/events, rate: -5}"), "endpoints[0].forward.rate", "must be positive"},
		{"forward ordered not a bool", fwd("{url: http://127.0.0.1:9000/events, ordered: maybe}"), "endpoints[0].forward.ordered", "cannot unmarshal"},
		{"forward ordered", fwd("{url: http://127.0.0.1:9000/events, ordered: true}"), "endpoints[0].forward.ordered", "its own aggregate"},
		{"unknown option", ep("    options: {header: X-Sig}\n"), "endpoints[0].options", "option"},
		{"statement timeout above lease", "worker: {lease: 10s, statement_timeout: 20s}\n", "worker.statement_timeout", "shorter than worker.lease"},
		{"zero concurrency", "worker: {concurrency: 0}\n", "worker.concurrency", "at least 1"},
		{"bad listen", "listen: 8080\n", "listen", "host:port"},
		{"database_url of another database", "database_url: 'mysql://u:whsec_pw@127.0.0.1/db'\n", "database_url", `unsupported database URL: scheme "mysql" (want postgres://, postgresql:// or sqlite:PATH)`},
		{"database_url without a scheme", "database_url: hookinbox.db\n", "database_url", "no scheme"},
		{"database_url sqlite://", "database_url: 'sqlite:///var/lib/hookinbox.db'\n", "database_url", "write sqlite:PATH, not sqlite://PATH"},
		{"database_url sqlite with parameters", "database_url: 'sqlite:h.db?_pragma=synchronous(OFF)'\n", "database_url", "takes no parameters"},
		{"database_url and sqlite_path", "database_url: postgres://127.0.0.1/db\nsqlite_path: h.db\n", "sqlite_path", "give database_url or sqlite_path, not both"},
		{"sqlite_path padded", "sqlite_path: ' h.db'\n", "sqlite_path", "spaces"},
		{"bad shutdown timeout", "shutdown_timeout: soon\n", "shutdown_timeout", "not a duration"},
	}
	vars := env(map[string]string{"STRIPE_NEW": "whsec_new", "EMPTY": "", "PADDED": " whsec_x\n"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Parse("c.yaml", []byte(tt.yaml), config.Options{ResolveSecrets: true, LookupEnv: vars})
			var cerr *config.Error
			if !errors.As(err, &cerr) {
				t.Fatalf("error = %v, want a *config.Error", err)
			}
			if cerr.Key != tt.key || !strings.Contains(cerr.Reason, tt.reason) {
				t.Errorf("error = %q (key %q), want key %q and a reason containing %q", err, cerr.Key, tt.key, tt.reason)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "config c.yaml: "+tt.key+": ") {
				t.Errorf("message %q is not one line naming the file and key", msg)
			}
			if strings.Contains(err.Error(), "whsec_") {
				t.Errorf("message %q contains a secret", err)
			}
		})
	}
}

func TestLoad_MissingFile(t *testing.T) {
	t.Parallel()
	_, err := config.Load(filepath.Join(t.TempDir(), "absent.yaml"), config.Options{})
	var cerr *config.Error
	if !errors.As(err, &cerr) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("error = %v", err)
	}
}

func TestParse_ForwardAndOutbox(t *testing.T) {
	t.Parallel()
	const yaml = `
nats_url: nats://nats-1:4222,nats://nats-2:4222
endpoints:
  - {name: gw, path: /gh, provider: github, mode: async, handler: forward, secrets_env: [STRIPE_NEW], forward: {url: "https://svc.internal/events", concurrency: 8, rate: 50}}
  - {name: js, path: /st, provider: stripe, handler: forward, secrets_env: [STRIPE_NEW], forward: {nats_subject: hooks.stripe}}
outbox: {concurrency: 2, lease: 30s, max_attempts: 5, delivery_timeout: 5s, poll_interval: 200ms, sink: {url: "http://127.0.0.1:9000/billing", ordered: true}}
`
	cfg, err := config.Parse("c.yaml", []byte(yaml), config.Options{ResolveSecrets: true, LookupEnv: secretsEnv})
	if err != nil {
		t.Fatal(err)
	}
	if f := cfg.Endpoints[0].Forward; cfg.Endpoints[0].Handler != config.HandlerForward || f == nil || f.URL != "https://svc.internal/events" || f.NATSSubject != "" {
		t.Errorf("gw endpoint = %+v, forward %+v", cfg.Endpoints[0], f)
	} else if o := f.Options; o.Concurrency != 8 || o.Rate != 50 || o.Ordered {
		t.Errorf("gw forward options = %+v, want concurrency 8, rate 50", o)
	}
	if o := cfg.Endpoints[1].Forward.Options; o != (outbox.SinkOptions{}) {
		t.Errorf("js forward options = %+v, want the defaults", o)
	}
	if f := cfg.Endpoints[1].Forward; f == nil || f.NATSSubject != "hooks.stripe" || f.URL != "" || f.String() != "nats_subject hooks.stripe" {
		t.Errorf("js forward = %+v", f)
	}
	if cfg.NATSURL != "nats://nats-1:4222,nats://nats-2:4222" || !cfg.UsesNATS() {
		t.Errorf("nats_url = %q, uses NATS %v", cfg.NATSURL, cfg.UsesNATS())
	}
	o := cfg.Outbox
	if o.Concurrency != 2 || o.Lease != 30*time.Second || o.MaxAttempts != 5 || o.DeliveryTimeout != 5*time.Second || o.PollInterval != 200*time.Millisecond {
		t.Errorf("outbox = %+v", o)
	}
	if cfg.OutboxSink == nil || cfg.OutboxSink.URL != "http://127.0.0.1:9000/billing" || !cfg.OutboxSink.Options.Ordered {
		t.Errorf("outbox.sink = %+v", cfg.OutboxSink)
	}
}

// Operator commands and serve must agree on max_attempts, so the defaults are set
// even when the file has no outbox block; NATS is not needed without a subject.
func TestParse_OutboxDefaultsAndNATSURLFromEnvironment(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("c.yaml", []byte(validYAML), config.Options{LookupEnv: env(map[string]string{"HOOKINBOX_NATS_URL": "nats://other:4222"})})
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Outbox
	if o.Concurrency != 32 || o.Lease != time.Minute || o.MaxAttempts != 20 || o.DeliveryTimeout != 10*time.Second || o.PollInterval != time.Second {
		t.Errorf("outbox defaults = %+v", o)
	}
	if cfg.OutboxSink != nil || cfg.UsesNATS() || cfg.NATSURL != "nats://other:4222" {
		t.Errorf("outbox.sink = %v, uses NATS %v, nats_url %q", cfg.OutboxSink, cfg.UsesNATS(), cfg.NATSURL)
	}
	// A short lease shortens the default delivery timeout with it.
	cfg, err = config.Parse("c.yaml", []byte("outbox: {lease: 4s}\n"), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Outbox.DeliveryTimeout != 2*time.Second || cfg.NATSURL != config.DefaultNATSURL {
		t.Errorf("delivery timeout = %s, nats_url %q", cfg.Outbox.DeliveryTimeout, cfg.NATSURL)
	}
	_, err = config.Parse("c.yaml", []byte(""), config.Options{LookupEnv: env(map[string]string{"HOOKINBOX_NATS_URL": "4222"})})
	var cerr *config.Error
	if !errors.As(err, &cerr) || cerr.Key != "HOOKINBOX_NATS_URL" {
		t.Errorf("a bad HOOKINBOX_NATS_URL: %v", err)
	}
}

func TestParseDatabaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want config.Database
	}{
		{"postgres://u@h:5432/db?pool_max_conns=8", config.Database{Driver: config.DriverPostgres, URL: "postgres://u@h:5432/db?pool_max_conns=8"}},
		{"postgresql://h/db", config.Database{Driver: config.DriverPostgres, URL: "postgresql://h/db"}},
		{"sqlite:hookinbox.db", config.Database{Driver: config.DriverSQLite, Path: "hookinbox.db"}},
		{"sqlite:./data/h.db", config.Database{Driver: config.DriverSQLite, Path: "./data/h.db"}},
		{"sqlite:/var/lib/hookinbox/h.db", config.Database{Driver: config.DriverSQLite, Path: "/var/lib/hookinbox/h.db"}},
		{"sqlite:dir with spaces/h#1.db", config.Database{Driver: config.DriverSQLite, Path: "dir with spaces/h#1.db"}},
	}
	for _, tt := range tests {
		got, err := config.ParseDatabaseURL(tt.raw, config.SourceFlag)
		tt.want.Source = config.SourceFlag
		if err != nil || got != tt.want {
			t.Errorf("ParseDatabaseURL(%q) = %+v, %v; want %+v", tt.raw, got, err, tt.want)
		}
	}
	for _, raw := range []string{"", "mysql://h/db", "sqlite://h.db", "sqlite:", "sqlite:h.db?mode=ro", "file:h.db", "h.db", "postgres://u:pw@h:port/db"} {
		_, err := config.ParseDatabaseURL(raw, config.SourceFlag)
		if !errors.Is(err, config.ErrUnsupportedDatabase) {
			t.Errorf("ParseDatabaseURL(%q) = %v, want ErrUnsupportedDatabase", raw, err)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("ParseDatabaseURL(%q) = %v: the message quotes a password", raw, err)
		}
	}
	if s := (config.Database{Driver: config.DriverPostgres, URL: "postgres://u:secret@h/db"}).String(); strings.Contains(s, "secret") {
		t.Errorf("String() = %q shows the password", s)
	}
}

// Without a database URL the binary uses a SQLite file: ./hookinbox.db in the working
// directory, or sqlite_path. Paths written in the config file are relative to it;
// the environment's, to the working directory.
func TestParse_DatabaseDefaultsToSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, yaml string
		env        map[string]string
		want       config.Database
	}{
		{"nothing", "", nil, config.Database{Driver: config.DriverSQLite, Path: "./hookinbox.db", Source: config.SourceDefault}},
		{"sqlite_path relative", "sqlite_path: data/h.db\n", nil, config.Database{Driver: config.DriverSQLite, Path: filepath.Join(dir, "data/h.db"), Source: "sqlite_path"}},
		{"sqlite_path absolute", "sqlite_path: /var/lib/h.db\n", nil, config.Database{Driver: config.DriverSQLite, Path: "/var/lib/h.db", Source: "sqlite_path"}},
		{"database_url sqlite relative", "database_url: sqlite:h.db\n", nil, config.Database{Driver: config.DriverSQLite, Path: filepath.Join(dir, "h.db"), Source: "database_url"}},
		{"database_url sqlite absolute", "database_url: sqlite:/var/lib/h.db\n", nil, config.Database{Driver: config.DriverSQLite, Path: "/var/lib/h.db", Source: "database_url"}},
		{"environment sqlite relative", "", map[string]string{"HOOKINBOX_DATABASE_URL": "sqlite:h.db"}, config.Database{Driver: config.DriverSQLite, Path: "h.db", Source: "HOOKINBOX_DATABASE_URL"}},
		{"database_url postgres", "database_url: postgres://h/db\n", nil, config.Database{Driver: config.DriverPostgres, URL: "postgres://h/db", Source: "database_url"}},
		{"environment over sqlite_path", "sqlite_path: h.db\n", map[string]string{"HOOKINBOX_DATABASE_URL": "postgres://h/db"},
			config.Database{Driver: config.DriverPostgres, URL: "postgres://h/db", Source: "HOOKINBOX_DATABASE_URL"}},
	}
	for _, tt := range tests {
		cfg, err := config.Parse(filepath.Join(dir, "c.yaml"), []byte(tt.yaml), config.Options{LookupEnv: env(tt.env)})
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if cfg.Database != tt.want {
			t.Errorf("%s: database = %+v, want %+v", tt.name, cfg.Database, tt.want)
		}
	}
	cfg, err := config.Default(config.Options{LookupEnv: env(nil)})
	if err != nil || cfg.Database.Path != config.DefaultSQLitePath {
		t.Errorf("Default: database = %+v, %v", cfg.Database, err)
	}
	_, err = config.Default(config.Options{LookupEnv: env(map[string]string{"HOOKINBOX_DATABASE_URL": "mysql://h/db"})})
	var cerr *config.Error
	if !errors.As(err, &cerr) || cerr.Key != "HOOKINBOX_DATABASE_URL" || !strings.Contains(cerr.Reason, `scheme "mysql"`) {
		t.Errorf("a bad HOOKINBOX_DATABASE_URL: %v", err)
	}
}

func TestParse_GroupCommitAndBatchSize(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("c.yaml", []byte(`
worker: {batch_size: 7}
group_commit: {accept: {flushers: 3, max_batch: 100, queue_size: 50}, sync: {max_batch: 1}}
`), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Worker.BatchSize != 7 || cfg.Accept.Flushers != 3 || cfg.Accept.MaxBatch != 100 || cfg.Accept.QueueSize != 50 ||
		cfg.Sync.MaxBatch != 1 || cfg.Sync.Flushers != 0 {
		t.Fatalf("worker %+v, accept %+v, sync %+v", cfg.Worker, cfg.Accept, cfg.Sync)
	}
	_, err = config.Parse("c.yaml", []byte(`group_commit: {sync: {flushers: 0}}`), config.Options{LookupEnv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "group_commit.sync.flushers: must be at least 1") {
		t.Fatalf("flushers 0: %v", err)
	}
}

func TestParse_Roles(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("c.yaml", []byte(`roles: [workers, dispatcher]`), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Roles.Has(config.RoleReceivers) || !cfg.Roles.Has(config.RoleWorkers) || !cfg.Roles.Has(config.RoleDispatcher) {
		t.Fatalf("roles %v", cfg.Roles.List())
	}
	if all, err := config.Parse("c.yaml", []byte(``), config.Options{LookupEnv: env(nil)}); err != nil || len(all.Roles.List()) != 3 {
		t.Fatalf("default roles %v, %v; want all three", all.Roles.List(), err)
	}
	if _, err := config.Parse("c.yaml", []byte(`roles: [receiver]`), config.Options{LookupEnv: env(nil)}); err == nil || !strings.Contains(err.Error(), `roles: unknown role "receiver"`) {
		t.Fatalf("unknown role: %v", err)
	}
}
