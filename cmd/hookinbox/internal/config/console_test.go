package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

const consoleEndpoint = `
endpoints:
  - {name: billing, path: /webhooks/stripe, provider: stripe, secrets_env: [S], handler: none}
`

func parseConsole(t *testing.T, block string, env map[string]string) (*config.Config, error) {
	t.Helper()
	all := map[string]string{"S": "whsec_x"}
	for k, v := range env {
		all[k] = v
	}
	return config.Parse("hookinbox.yaml", []byte(consoleEndpoint+block), config.Options{
		ResolveSecrets: true, LookupEnv: func(k string) (string, bool) { v, ok := all[k]; return v, ok },
	})
}

func TestConsole_OffWithoutTokens(t *testing.T) {
	t.Parallel()
	cfg, err := parseConsole(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Console != nil {
		t.Fatalf("console %+v; want off", cfg.Console)
	}
}

func TestConsole_TokensFromTheEnvironmentWithDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parseConsole(t, `
console:
  tokens:
    - {name: alice, token_env: TOK_A}
    - {name: viewer, token_env: TOK_V, read_only: true}
  redact: [card_number, email]
`, map[string]string{"TOK_A": "aaaaaaaaaaaaaaaaaaaa", "TOK_V": "vvvvvvvvvvvvvvvvvvvv"})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Console
	if c.Path != "/console" || c.Listen != "" || len(c.Tokens) != 2 || !c.Tokens[1].ReadOnly ||
		c.Tokens[0].Secret != "aaaaaaaaaaaaaaaaaaaa" || c.Tokens[0].Source != "env TOK_A" || len(c.Redact) != 2 {
		t.Fatalf("console %+v", c)
	}
}

func TestConsole_RefusesWhatWouldWeakenIt(t *testing.T) {
	t.Parallel()
	long := map[string]string{"T": "tttttttttttttttttttt", "SHORT": "short"}
	for _, tc := range []struct{ name, block, key, reason string }{
		{"inline token", "console: {tokens: [{name: a, token: hunter2hunter2hunter2}]}", "console.tokens[0].token", "never written in the config"},
		{"no token_env", "console: {tokens: [{name: a}]}", "console.tokens[0].token_env", "required"},
		{"unset variable", "console: {tokens: [{name: a, token_env: UNSET}]}", "console.tokens[0].token_env", "empty or unset"},
		{"short token", "console: {tokens: [{name: a, token_env: SHORT}]}", "console.tokens[0].token_env", "fewer than 16"},
		{"no name", "console: {tokens: [{token_env: T}]}", "console.tokens[0].name", "required"},
		{"duplicate name", "console: {tokens: [{name: a, token_env: T}, {name: a, token_env: T}]}", "console.tokens[1].name", "duplicate"},
		{"settings without tokens", "console: {path: /ops}", "console.tokens", "off until"},
		{"bad path", "console: {path: ops, tokens: [{name: a, token_env: T}]}", "console.path", "must start with /"},
		{"reserved path", "console: {path: /metrics, tokens: [{name: a, token_env: T}]}", "console.path", "reserved"},
		{"bad listen", "console: {listen: nowhere, tokens: [{name: a, token_env: T}]}", "console.listen", "host:port"},
		{"main listener", "listen: 127.0.0.1:8080\nconsole: {listen: 127.0.0.1:8080, tokens: [{name: a, token_env: T}]}", "console.listen", "main listener"},
		{"endpoint under it", "console: {path: /webhooks, tokens: [{name: a, token_env: T}]}", "endpoints[0].path", "under console.path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConsole(t, tc.block, long)
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("err %v; want key %s, reason containing %q", err, tc.key, tc.reason)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "tttt") {
				t.Fatalf("the error shows a token: %v", err)
			}
		})
	}
}
