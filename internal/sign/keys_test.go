package sign_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/sign"
	"github.com/hookinbox/hookinbox/provider"
)

// A generated pair works end to end: For signs with the private key, and the
// provider's verifier, configured with the public key, accepts; PublicKey derives
// the same public key from the private one.
func TestGenerateKey_PublicKeyVerifiesWhatForSigns(t *testing.T) {
	t.Parallel()

	bodies := map[string]string{
		"discord":  `{"id":"1","type":2}`,
		"sendgrid": `[{"event":"open","sg_event_id":"sg1"}]`,
	}
	for _, name := range sign.KeyPairProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			private, public, err := sign.GenerateKey(name)
			if err != nil {
				t.Fatal(err)
			}
			if derived, err := sign.PublicKey(name, private); err != nil || derived != public {
				t.Fatalf("PublicKey = %q, %v, want GenerateKey's %q", derived, err, public)
			}
			s, err := sign.For(name, []string{private}, nil)
			if err != nil {
				t.Fatal(err)
			}
			body := []byte(bodies[name])
			h, err := s.Sign(body, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			v, err := provider.New(name, provider.Options{PublicKeys: []string{public}})
			if err != nil {
				t.Fatalf("provider.New with the public key: %v", err)
			}
			if _, err := v.Verify(h, body); err != nil {
				t.Errorf("Verify: %v", err)
			}

			other, _, err := sign.GenerateKey(name)
			if err != nil {
				t.Fatal(err)
			}
			if other == private {
				t.Fatal("two generated keys are the same")
			}
			s, _ = sign.For(name, []string{other}, nil)
			h, _ = s.Sign(body, time.Now())
			if _, err := v.Verify(h, body); err == nil {
				t.Error("another generated key verified")
			}
		})
	}
}

func TestPublicKey_Refuses(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct{ provider, private, wantText string }{
		{"stripe", "whsec_x", "shared secret"},
		{"discord", "not-hex-SECRET", "not hex"},
		{"sendgrid", "bm90IGEga2V5LVNFQ1JFVA==", "not a DER ECDSA P-256 key"},
	} {
		_, err := sign.PublicKey(tt.provider, tt.private)
		if err == nil || !strings.Contains(err.Error(), tt.wantText) || strings.Contains(err.Error(), tt.private) {
			t.Errorf("PublicKey(%s) error = %v, want one saying %q without the key", tt.provider, err, tt.wantText)
		}
	}
	if _, _, err := sign.GenerateKey("github"); err == nil {
		t.Error("GenerateKey(github) succeeded")
	}
}
