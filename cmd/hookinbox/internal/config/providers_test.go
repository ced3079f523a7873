package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/provider"
)

const discordKey = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29"

// Public keys come from the file or the environment, as secrets come from the
// environment; a URL-signed scheme takes its public URL as an option.
func TestParse_PublicKeysAndPublicURL(t *testing.T) {
	t.Parallel()
	yaml := `
endpoints:
  - {name: discord, path: /discord, provider: discord, public_keys: [` + discordKey + `], public_keys_env: [DISCORD_NEW], handler: none}
  - {name: twilio, path: /twilio, provider: twilio, secrets_env: TWILIO_AUTH_TOKEN, handler: none,
     options: {public_url: "https://hooks.example.com/twilio"}}
  - {name: gitlab, path: /gitlab, provider: gitlab, secrets_env: GITLAB_TOKEN, handler: none}
retention: {processed: 720h}
`
	lookup := env(map[string]string{"DISCORD_NEW": discordKey, "TWILIO_AUTH_TOKEN": "tok", "GITLAB_TOKEN": "glt"})
	cfg, err := config.Parse("hookinbox.yaml", []byte(yaml), config.Options{ResolveSecrets: true, LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Endpoints[0]
	if d.Verifier.Name() != "discord" || strings.Join(d.SecretSources, ",") != "config public_keys[0],env DISCORD_NEW" {
		t.Errorf("discord endpoint: %s, sources %v", d.Verifier.Name(), d.SecretSources)
	}
	if _, ok := cfg.Endpoints[1].Verifier.(provider.RequestVerifier); !ok {
		t.Errorf("twilio verifier %T is not a RequestVerifier", cfg.Endpoints[1].Verifier)
	}
	if w, ep := cfg.MaxRetryWindow(); ep.Name != "gitlab" || w.Hours() != 168 {
		t.Errorf("longest retry window %s of %s, want gitlab's 168h", w, ep.Name)
	}

	// Operator commands read no environment: a placeholder stands in.
	if _, err := config.Parse("hookinbox.yaml", []byte(yaml), config.Options{LookupEnv: env(nil)}); err != nil {
		t.Errorf("without resolving secrets: %v", err)
	}
}

func TestParse_RefusesKeysOfTheWrongKind(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ endpoint, key, want string }{
		{`{name: d, path: /d, provider: discord, secrets_env: S, handler: none}`, "endpoints[0].secrets_env", "public keys, not a secret"},
		{`{name: d, path: /d, provider: sendgrid, handler: none}`, "endpoints[0].public_keys", "required"},
		{`{name: d, path: /d, provider: discord, public_keys: [abcd], handler: none}`, "endpoints[0].public_keys", "public key 0"},
		{`{name: d, path: /d, provider: discord, public_keys_env: [UNSET], handler: none}`, "endpoints[0].public_keys_env[0]", "UNSET is empty or unset"},
		{`{name: s, path: /s, provider: stripe, secrets_env: S, public_keys: [k], handler: none}`, "endpoints[0].public_keys", "not public keys"},
		{`{name: t, path: /t, provider: twilio, secrets_env: S, handler: none, options: {public_url: "https://h/x?q=1"}}`, "endpoints[0].options", "query"},
		{`{name: q, path: /q, provider: square, secrets_env: S, handler: none, options: {url: "https://h/x"}}`, "endpoints[0].options", `"url"`},
	} {
		yaml := "endpoints:\n  - " + tt.endpoint + "\n"
		_, err := config.Parse("c.yaml", []byte(yaml), config.Options{ResolveSecrets: true, LookupEnv: env(map[string]string{"S": "secret"})})
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(ce.Reason, tt.want) {
			t.Errorf("%s: error %v, want key %s and %q", tt.endpoint, err, tt.key, tt.want)
		}
	}
}
