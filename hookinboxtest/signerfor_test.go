package hookinboxtest_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSignerFor_VerifiedByEveryProvider signs with SignerFor and verifies with
// provider.New for every provider, with the same secrets and params: what `hookinbox
// send` sends, the receiver accepts.
func TestSignerFor_VerifiedByEveryProvider(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"evt_1","type":"invoice.paid","event_id":"Ev1","event":{"type":"app_mention"}}`)
	tests := []struct {
		provider, verifier string
		secrets            []string
		params             map[string]string
		wantID, wantType   string
	}{
		{"stripe", "stripe", []string{"whsec_a", "whsec_b"}, nil, "evt_1", "invoice.paid"},
		{"github", "github", []string{"gh"}, nil, "evt_1", "invoice.paid"},
		{"shopify", "shopify", []string{"sh"}, nil, "evt_1", "invoice.paid"},
		{"slack", "slack", []string{"sl"}, nil, "Ev1", "app_mention"},
		{"standardwebhooks", "standardwebhooks", []string{swSecret, swOtherSecret}, map[string]string{"retry_window": "24h"}, "evt_1", "invoice.paid"},
		{"svix", "svix", []string{swOtherSecret}, nil, "evt_1", "invoice.paid"},
		{"hmac", "hmac", []string{"hm"}, map[string]string{
			"header": "X-Sig", "prefix": "sha512=", "algorithm": "sha512", "encoding": "base64",
			"timestamp_header": "X-Ts", "id_header": "X-Id", "signed_payload": "{id}:{timestamp}:{body}",
			"type_field": "event.type", "retry_window": "1h",
		}, "evt_1", "app_mention"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()

			s, err := hookinboxtest.SignerFor(tt.provider, tt.secrets, tt.params)
			if err != nil {
				t.Fatalf("SignerFor: %v", err)
			}
			h, err := s.Sign(body, time.Now())
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			for i := range tt.secrets {
				v, err := provider.New(tt.verifier, provider.Options{Secrets: tt.secrets[i : i+1], Params: tt.params})
				if err != nil {
					t.Fatalf("provider.New: %v", err)
				}
				got, err := v.Verify(h, body)
				if i > 0 && tt.provider != "stripe" && tt.provider != "standardwebhooks" {
					// Schemes with one signature sign with the first secret only.
					if err == nil {
						t.Errorf("secret %d verified a single-signature scheme", i)
					}
					continue
				}
				if err != nil {
					t.Fatalf("secret %d: Verify: %v", i, err)
				}
				if got.ID != tt.wantID || got.Type != tt.wantType {
					t.Errorf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, tt.wantID, tt.wantType)
				}
			}
		})
	}
}

// TestNames_SameAsProviders checks both directions between send and config: every
// provider a config accepts is one SignerFor (`hookinbox send --provider`) signs for,
// and every one it signs for is one a config accepts.
func TestNames_SameAsProviders(t *testing.T) {
	t.Parallel()

	if got, want := hookinboxtest.Names(), provider.Names(); !slices.Equal(got, want) {
		t.Fatalf("hookinboxtest.Names() = %v, provider.Names() = %v; want the same", got, want)
	}
	for _, name := range provider.Names() {
		secret := "k"
		if name == "standardwebhooks" || name == "svix" {
			secret = swSecret
		}
		if k, ok := privateKeys()[name]; ok {
			secret = k
		}
		var params map[string]string
		if name == "hmac" {
			params = map[string]string{"header": "X-Sig"}
		}
		if _, err := hookinboxtest.SignerFor(name, []string{secret}, params); err != nil {
			t.Errorf("SignerFor(%q): %v", name, err)
		}
	}
}

func TestSignerFor_Refuses(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		provider string
		secrets  []string
		params   map[string]string
		wantText string
	}{
		{"unknown provider", "bitbucket", []string{"k"}, nil, `"bitbucket"`},
		{"discord key not hex", "discord", []string{"k"}, nil, "not hex"},
		{"sendgrid key not DER", "sendgrid", []string{"aGVsbG8="}, nil, "not a DER ECDSA P-256 key"},
		{"no secrets", "github", nil, nil, "no secrets"},
		{"empty secret", "stripe", []string{"whsec_a", " "}, nil, "secret 1 is empty"},
		{"unknown param", "hmac", []string{"k"}, map[string]string{"header": "X-Sig", "heder": "X"}, `"heder"`},
		{"param of a scheme without params", "slack", []string{"k"}, map[string]string{"prefix": "v0="}, `"prefix"`},
		{"hmac without header", "hmac", []string{"k"}, nil, "no signature header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s, err := hookinboxtest.SignerFor(tt.provider, tt.secrets, tt.params)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("SignerFor = %v, %v, want an error mentioning %q", s, err, tt.wantText)
			}
		})
	}
}
