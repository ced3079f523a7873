package provider_test

import (
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

// validSecret is a secret each provider accepts.
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

	want := []string{"github", "hmac", "shopify", "slack", "standardwebhooks", "stripe", "svix"}
	if got := provider.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		v, err := provider.New(name, provider.Options{Secrets: []string{validSecret(name)}, Params: validParams[name]})
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
	if _, err := provider.New("gitlab", provider.Options{Secrets: []string{testSecret}}); err == nil || !strings.Contains(err.Error(), "gitlab") {
		t.Errorf("New(gitlab) error = %v, want one naming it", err)
	}
}

// TestNewRefusesBadSecrets checks every provider: no secret, or an empty, blank or
// padded one, refuses to start, and the error names the secret's position only.
func TestNewRefusesBadSecrets(t *testing.T) {
	t.Parallel()

	for _, name := range provider.Names() {
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

	for _, name := range []string{"stripe", "slack", "standardwebhooks", "svix", "hmac"} {
		_, err := provider.New(name, provider.Options{Secrets: []string{validSecret(name)}, Params: validParams[name], Tolerance: -time.Second})
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
		_, err := provider.New(name, provider.Options{Secrets: []string{validSecret(name)}, Params: params})
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
	for _, name := range provider.Names() {
		v, err := provider.New(name, provider.Options{Secrets: []string{validSecret(name)}, Params: validParams[name]})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(h, body); !errors.Is(err, provider.ErrMissingSignature) {
			t.Errorf("%s: Verify(unsigned) error = %v, want %v", name, err, provider.ErrMissingSignature)
		}
	}
}
