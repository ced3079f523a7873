package config_test

import (
	"errors"
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
`
	cfg, err := config.Parse("hookinbox.yaml", []byte(yaml), config.Options{LookupEnv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	want := config.HTTP{ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 15 * time.Second,
		IdleTimeout: 30 * time.Second, MaxHeaderBytes: 32768, MaxConnections: 500}
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
	} {
		_, err := config.Parse("hookinbox.yaml", []byte(tc.yaml), config.Options{LookupEnv: env(nil)})
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Key != tc.key || !strings.Contains(cerr.Reason, tc.reason) {
			t.Errorf("%s: error %v, want key %s and %q", tc.yaml, err, tc.key, tc.reason)
		}
	}
}
