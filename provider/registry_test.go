package provider_test

import (
	"crypto/ed25519"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/provider"
)

// validParams are the least params each provider needs.
var validParams = map[string]map[string]string{
	"hmac": {"header": "X-Signature"},
}

// validOptions are the least options each provider needs: a secret, or a public key
// for the schemes that take public keys.
func validOptions(name string) provider.Options {
	if provider.TakesPublicKeys(name) {
		key, _ := provider.PlaceholderPublicKey(name)
		return provider.Options{PublicKeys: []string{key}, Params: validParams[name]}
	}
	return provider.Options{Secrets: []string{validSecret(name)}, Params: validParams[name]}
}

// validSecret is a secret each provider that takes secrets accepts.
func validSecret(name string) string {
	if name == "standardwebhooks" || name == "svix" {
		return swSecret
	}
	return testSecret
}

// wantName is the Name() of the verifier New builds for each provider name: its own,
// except svix, an alias of standardwebhooks (see New).
func wantName(name string) string {
	if name == "svix" {
		return "standardwebhooks"
	}
	return name
}

func TestNames(t *testing.T) {
	t.Parallel()

	want := []string{"discord", "github", "gitlab", "hmac", "linear", "paddle", "sendgrid", "shopify", "slack", "square", "standardwebhooks", "stripe", "svix", "twilio", "zoom"}
	if got := provider.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		v, err := provider.New(name, validOptions(name))
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if v.Name() != wantName(name) {
			t.Errorf("New(%q).Name() = %q, want %q", name, v.Name(), wantName(name))
		}
		if v.RetryWindow() <= 0 {
			t.Errorf("New(%q).RetryWindow() = %s", name, v.RetryWindow())
		}
	}
	if _, err := provider.New("bitbucket", provider.Options{Secrets: []string{testSecret}}); err == nil || !strings.Contains(err.Error(), "bitbucket") {
		t.Errorf("New(bitbucket) error = %v, want one naming it", err)
	}
}

// TestNewRefusesBadSecrets checks every provider: no secret, or an empty, blank or
// padded one, refuses to start, and the error names the secret's position only.
func TestNewRefusesBadSecrets(t *testing.T) {
	t.Parallel()

	for _, name := range provider.Names() {
		if provider.TakesPublicKeys(name) {
			continue // TestNewRefusesSecretsOrKeysOfTheOtherKind
		}
		good := validSecret(name)
		for _, tt := range []struct {
			what    string
			secrets []string
		}{
			{"nil", nil},
			{"none", []string{}},
			{"empty", []string{good, ""}},
			{"blank", []string{" \t\n"}},
			{"padded", []string{good + "\n"}},
			{"padded before", []string{" " + good}},
		} {
			v, err := provider.New(name, provider.Options{Secrets: tt.secrets, Params: validParams[name]})
			if err == nil {
				t.Errorf("%s, %s secrets: New = %v, want an error", name, tt.what, v)
				continue
			}
			checkErrorHides(t, err, good, strings.TrimPrefix(good, "whsec_"))
		}
	}
}

func TestNewRefusesNegativeTolerance(t *testing.T) {
	t.Parallel()

	for _, name := range []string{"stripe", "slack", "standardwebhooks", "svix", "hmac", "discord", "sendgrid", "paddle", "linear", "zoom"} {
		o := validOptions(name)
		o.Tolerance = -time.Second
		_, err := provider.New(name, o)
		if err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("New(%s) with a negative tolerance: error = %v", name, err)
		}
	}
}

func TestNewRefusesUnknownParams(t *testing.T) {
	t.Parallel()

	for _, name := range provider.Names() {
		params := map[string]string{"tolerence": "1m"}
		for k, v := range validParams[name] {
			params[k] = v
		}
		o := validOptions(name)
		o.Params = params
		_, err := provider.New(name, o)
		if err == nil || !strings.Contains(err.Error(), `"tolerence"`) {
			t.Errorf("New(%s) with an unknown param: error = %v, want one naming it", name, err)
		}
	}
}

// TestEveryProviderRefusesAnUnsignedRequest checks the one rejection all schemes share:
// a request with no signature headers is refused as missing its signature, however
// valid its body.
func TestEveryProviderRefusesAnUnsignedRequest(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"evt_1","type":"invoice.paid","event_id":"Ev1","event":{"type":"message"}}`)
	h := http.Header{}
	h.Set("X-GitHub-Delivery", githubDelivery)
	h.Set("X-GitHub-Event", "push")
	h.Set("X-Shopify-Event-Id", shopifyEventID)
	h.Set("X-Shopify-Topic", "orders/create")
	h.Set("X-Gitlab-Event", "Push Hook")
	h.Set("X-Gitlab-Event-UUID", gitlabUUID)
	h.Set("Linear-Delivery", linearDelivery)
	for _, name := range provider.Names() {
		v, err := provider.New(name, validOptions(name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(h, body); !errors.Is(err, provider.ErrMissingSignature) {
			t.Errorf("%s: Verify(unsigned) error = %v, want %v", name, err, provider.ErrMissingSignature)
		}
	}
}

// TestNewRefusesSecretsOrKeysOfTheOtherKind checks that a scheme signed with the
// provider's private key takes public keys and no secret, and every other scheme
// the reverse, and that public keys are checked like secrets.
func TestNewRefusesSecretsOrKeysOfTheOtherKind(t *testing.T) {
	t.Parallel()

	for _, name := range provider.Names() {
		o := validOptions(name)
		if provider.TakesPublicKeys(name) {
			o.Secrets = []string{testSecret}
		} else {
			o.PublicKeys = []string{"3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29"}
		}
		if _, err := provider.New(name, o); err == nil {
			t.Errorf("New(%s) with both secrets and public keys: no error", name)
		}
	}
	for _, name := range []string{"discord", "sendgrid"} {
		if !provider.TakesPublicKeys(name) {
			t.Fatalf("%s does not take public keys", name)
		}
		for _, keys := range [][]string{nil, {}, {""}, {"not a key"}} {
			if _, err := provider.New(name, provider.Options{PublicKeys: keys}); err == nil {
				t.Errorf("New(%s) with public keys %q: no error", name, keys)
			}
		}
	}
	if _, ok := provider.PlaceholderPublicKey("stripe"); ok {
		t.Error("stripe has a placeholder public key")
	}
}

// A placeholder public key verifies nothing: a verifier built with one (for an
// operator command) refuses every request, whoever signed it.
func TestPlaceholderPublicKeysVerifyNothing(t *testing.T) {
	t.Parallel()

	key, _ := provider.PlaceholderPublicKey("discord")
	d, err := provider.New("discord", provider.Options{PublicKeys: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"1","type":1}`)
	zeroSeed := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	if _, err := d.Verify(discordSigned(zeroSeed, time.Now(), body), body); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("placeholder Discord key: Verify error %v, want %v", err, provider.ErrNoValidSignature)
	}
}
