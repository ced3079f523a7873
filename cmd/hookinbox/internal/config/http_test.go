package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

func TestParse_HTTPDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("hookinbox.yaml", []byte("listen: 127.0.0.1:0\n"), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	want := config.HTTP{
		ReadHeaderTimeout: config.DefaultReadHeaderTimeout, ReadTimeout: config.DefaultReadTimeout,
		WriteTimeout: config.DefaultWriteTimeout, IdleTimeout: config.DefaultIdleTimeout,
		MaxHeaderBytes: config.DefaultMaxHeaderBytes, MaxConnections: config.DefaultMaxConnections,
		MaxInflightBodyBytes: config.DefaultMaxInflightBodyBytes,
	}
	if cfg.HTTP != want {
		t.Errorf("http = %+v, want %+v", cfg.HTTP, want)
	}
	if got := (config.HTTP{}).WithDefaults(); got != want {
		t.Errorf("zero HTTP WithDefaults = %+v, want %+v", got, want)
	}
}

func TestParse_HTTPBlock(t *testing.T) {
	t.Parallel()
	yaml := `
http:
  read_header_timeout: 2s
  read_timeout: 10s
  write_timeout: 15s
  idle_timeout: 30s
  max_header_bytes: 32768
  max_connections: 500
  max_connections_per_address: 50
  max_inflight_body_bytes: 8388608
`
	cfg, err := config.Parse("hookinbox.yaml", []byte(yaml), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	want := config.HTTP{ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 15 * time.Second,
		IdleTimeout: 30 * time.Second, MaxHeaderBytes: 32768, MaxConnections: 500,
		MaxConnectionsPerAddress: 50, MaxInflightBodyBytes: 8 << 20}
	if cfg.HTTP != want {
		t.Errorf("http = %+v, want %+v", cfg.HTTP, want)
	}
}

func TestParse_HTTPRefusesWithKeyAndReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, key, reason string }{
		{"http: {read_timeout: 0s}", "http.read_timeout", "must be positive"},
		{"http: {read_header_timeout: soon}", "http.read_header_timeout", "not a duration"},
		{"http: {read_header_timeout: 40s}", "http.read_timeout", "must not be shorter than http.read_header_timeout"},
		{"http: {max_connections: 0}", "http.max_connections", "at least 1"},
		{"http: {max_header_bytes: 1024}", "http.max_header_bytes", "at least 16384"},
		{"http: {max_body_bytes: 10}", "http.max_body_bytes", "unknown key"},
		{"http: {max_connections_per_address: 0}", "http.max_connections_per_address", "at least 1"},
		{"http: {max_connections: 10, max_connections_per_address: 11}", "http.max_connections_per_address", "above http.max_connections (10)"},
		{"http: {max_inflight_body_bytes: 0}", "http.max_inflight_body_bytes", "must be positive"},
		{"http: {max_inflight_body_bytes: -1}", "http.max_inflight_body_bytes", "must be positive"},
	} {
		_, err := config.Parse("hookinbox.yaml", []byte(tc.yaml), config.Options{LookupEnv: env(nil)})
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Key != tc.key || !strings.Contains(cerr.Reason, tc.reason) {
			t.Errorf("%s: error %v, want key %s and %q", tc.yaml, err, tc.key, tc.reason)
		}
	}
}

// The body budget must admit every endpoint's largest body: bodies over
// SmallBodyBytes share three quarters of it.
func TestParse_HTTPBodyBudgetAdmitsEveryEndpointsLargestBody(t *testing.T) {
	t.Parallel()
	parse := func(budget, maxBody int64) error {
		yaml := fmt.Sprintf("http: {max_inflight_body_bytes: %d}\nendpoints:\n"+
			"  - {name: a, path: /a, provider: stripe, secrets_env: STRIPE_NEW, handler: none}\n"+
			"  - {name: b, path: /b, provider: stripe, secrets_env: STRIPE_NEW, handler: none, max_body_bytes: %d}\n", budget, maxBody)
		_, err := config.Parse("hookinbox.yaml", []byte(yaml), config.Options{LookupEnv: secretsEnv})
		return err
	}
	for _, tc := range []struct {
		budget, maxBody int64
		ok              bool
	}{
		{4 << 20, 3 << 20, true},                              // 3/4 of 4 MiB is 3 MiB
		{4<<20 - 1, 3 << 20, false},                           // one byte short
		{2 << 20, 3 << 20, false},                             // beyond the budget
		{config.SmallBodyBytes, config.SmallBodyBytes, false}, // endpoint a's default 1 MiB does not fit
		{1398104, 1 << 10, true},                              // 1 MiB (endpoint a) fits three quarters of it
		{1398103, 1 << 10, false},
	} {
		err := parse(tc.budget, tc.maxBody)
		var cerr *config.Error
		switch {
		case tc.ok && err != nil:
			t.Errorf("budget %d, max_body_bytes %d: %v", tc.budget, tc.maxBody, err)
		case !tc.ok && (!errors.As(err, &cerr) || cerr.Key != "http.max_inflight_body_bytes" || !strings.Contains(cerr.Reason, "want at least")):
			t.Errorf("budget %d, max_body_bytes %d: error %v, want http.max_inflight_body_bytes and the least budget", tc.budget, tc.maxBody, err)
		}
	}
}
