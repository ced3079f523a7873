package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/internal/config"
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

func TestParse_RefusesWithKeyAndReason(t *testing.T) {
	t.Parallel()
	ep := func(extra string) string {
		return "endpoints:\n  - name: b\n    path: /s\n    provider: stripe\n    handler: billing\n    secrets_env: [STRIPE_NEW]\n" + extra
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
		{"forward handler", "endpoints:\n  - {name: b, path: /s, provider: stripe, handler: forward, secrets_env: [STRIPE_NEW]}\n", "endpoints[0].handler", "not yet supported"},
		{"unknown option", ep("    options: {header: X-Sig}\n"), "endpoints[0].options", "option"},
		{"statement timeout above lease", "worker: {lease: 10s, statement_timeout: 20s}\n", "worker.statement_timeout", "shorter than worker.lease"},
		{"zero concurrency", "worker: {concurrency: 0}\n", "worker.concurrency", "at least 1"},
		{"bad listen", "listen: 8080\n", "listen", "host:port"},
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
