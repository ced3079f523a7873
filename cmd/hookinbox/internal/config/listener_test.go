package config_test

import (
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

const listenerYAML = `
database_url: postgres://app@pgbouncer:6432/app?default_query_exec_mode=exec
listener_database_url: postgres://app@db1:5432,db2:5432/app?target_session_attrs=read-write
endpoints:
  - {name: audit, path: /webhooks/audit, provider: stripe, secrets_env: STRIPE_NEW, handler: none}
`

func TestParse_ListenerDatabaseURL(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("hookinbox.yaml", []byte(listenerYAML), config.Options{LookupEnv: secretsEnv})
	if err != nil {
		t.Fatal(err)
	}
	if want := "postgres://app@db1:5432,db2:5432/app?target_session_attrs=read-write"; cfg.ListenerDatabaseURL != want {
		t.Errorf("ListenerDatabaseURL = %q, want %q", cfg.ListenerDatabaseURL, want)
	}
	cfg, err = config.Parse("hookinbox.yaml", []byte(listenerYAML), config.Options{LookupEnv: env(map[string]string{
		"STRIPE_NEW": "whsec_new", config.EnvListenerURL: "postgres://app@db3:5432/app",
	})})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenerDatabaseURL != "postgres://app@db3:5432/app" {
		t.Errorf("ListenerDatabaseURL = %q, want the environment's", cfg.ListenerDatabaseURL)
	}
}

func TestParse_ListenerDatabaseURLRefusals(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ yaml, want string }{
		"sqlite":    {"listener_database_url: sqlite:x.db\n", "want postgres://"},
		"mysql":     {"listener_database_url: mysql://h/db\n", "unsupported database URL"},
		"poll_only": {"listener_database_url: postgres://h/db\nworker: {poll_only: true}\n", "poll_only turns the listener off"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse("hookinbox.yaml", []byte(tc.yaml), config.Options{LookupEnv: secretsEnv})
			if err == nil || !strings.Contains(err.Error(), "listener_database_url") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want listener_database_url: ...%s", err, tc.want)
			}
		})
	}
}
