package probe

import (
	"bytes"
	"cmp"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// testKeys returns, for a provider, the secret the probe signs with and the options
// hookinbox's verifier is built with (secrets or public keys).
func testKeys(t *testing.T, name string) (string, provider.Options) {
	t.Helper()
	switch name {
	case "discord":
		key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
		return hex.EncodeToString(key.Seed()), provider.Options{PublicKeys: []string{hookinboxtest.DiscordPublicKey(key)}}
	case "sendgrid":
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		public, err := hookinboxtest.SendGridPublicKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(der), provider.Options{PublicKeys: []string{public}}
	case "standardwebhooks", "svix":
		return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", provider.Options{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}
	}
	return "probe-secret", provider.Options{Secrets: []string{"probe-secret"}}
}

// TestLives_EveryProviderVerifiedByHookinbox builds each provider's facts for every
// scenario, signs every event as the probe sends it, and verifies it with hookinbox's
// own verifier of that provider: it must accept it, with the event's id (the same
// for its every copy and retry) and type.
func TestLives_EveryProviderVerifiedByHookinbox(t *testing.T) {
	t.Parallel()
	options := map[string]map[string]string{
		"hmac":     {"header": "X-Signature"},
		"hmac-ids": {"header": "X-Signature", "id_header": "X-Event-Id", "type_field": "event.kind"},
	}
	for _, name := range append(hookinboxtest.Names(), "hmac-ids") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			providerName, _, _ := strings.Cut(name, "-")
			k, ok := kinds[providerName]
			if !ok {
				t.Fatalf("no kind for %s", providerName)
			}
			if _, ok := schedules[providerName]; !ok {
				t.Fatalf("no schedule for %s", providerName)
			}
			secret, o := testKeys(t, providerName)
			o.Params = options[name]
			signer, err := hookinboxtest.SignerFor(providerName, []string{secret}, o.Params)
			if err != nil {
				t.Fatal(err)
			}
			v, err := provider.New(providerName, o)
			if err != nil {
				t.Fatal(err)
			}
			const target = "http://127.0.0.1:8080/webhooks/probe?x=1"
			ids := &idSource{run: "test01"}
			seen := map[string]bool{}
			for i, scenario := range Scenarios {
				f, err := k.newFact("test01", scenario, i, int64(1_000_000_000_000+i), ids, o.Params)
				if err != nil {
					t.Fatal(err)
				}
				if seen[f.ID] {
					t.Errorf("fact id %s twice", f.ID)
				}
				seen[f.ID] = true
				if !slices.ContainsFunc(f.Events, func(e *Event) bool { return e.Role == RoleOutcome }) {
					t.Errorf("%s's life %s has no outcome", f.ID, f.Life)
				}
				var firstIDs []string
				for _, e := range f.Events {
					for attempt := range 2 {
						at := time.Now().Add(time.Duration(attempt) * time.Second)
						body := e.bodyAt(at)
						h, err := SignedHeaders(target, signer, body, e.ID, cmp.Or(e.signType, e.Type), at)
						if err != nil {
							t.Fatalf("%s: %v", e.label(), err)
						}
						r := httptest.NewRequest("POST", target, bytes.NewReader(body))
						r.Header = h
						var got provider.Verified
						if rv, ok := v.(provider.RequestVerifier); ok {
							got, err = rv.VerifyRequest(r, body)
						} else {
							got, err = v.Verify(h, body)
						}
						if err != nil {
							t.Fatalf("%s attempt %d refused: %v", e.label(), attempt, err)
						}
						if e.ID != "" && got.ID != e.ID {
							t.Errorf("%s: verified id %q", e.label(), got.ID)
						}
						if want := cmp.Or(e.signType, e.Type); got.Type != want && got.Type != e.Type {
							t.Errorf("%s: verified type %q", e.label(), got.Type)
						}
						if attempt == 0 {
							firstIDs = append(firstIDs, got.ID)
						} else if got.ID != firstIDs[len(firstIDs)-1] {
							t.Errorf("%s: a retry's id %q differs from the first attempt's %q: it would not be a duplicate", e.label(), got.ID, firstIDs[len(firstIDs)-1])
						}
					}
				}
				slices.Sort(firstIDs)
				if len(slices.Compact(firstIDs)) != len(f.Events) {
					t.Errorf("%s: two of its Event objects share an id: %v", f.ID, firstIDs)
				}
			}
		})
	}
}

func TestSchedules_AsDocumented(t *testing.T) {
	t.Parallel()
	stripe := schedules["stripe"]
	if w := stripe.Window(); w > 72*time.Hour || w < 48*time.Hour {
		t.Errorf("stripe retries over %s, want up to 3 days", w)
	}
	for i := 1; i < len(stripe.Retries); i++ {
		if stripe.Retries[i] != 2*stripe.Retries[i-1] {
			t.Errorf("stripe's retries are not exponential: %v", stripe.Retries)
		}
	}
	svix := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	for _, name := range []string{"svix", "standardwebhooks"} {
		if !slices.Equal(schedules[name].Retries, svix) {
			t.Errorf("%s retries %v, want Svix's published %v", name, schedules[name].Retries, svix)
		}
	}
	if s := schedules["shopify"]; len(s.Retries) != 8 || s.Window() > 5*time.Hour {
		t.Errorf("shopify: %d retries over %s, want 8 over about 4 hours", len(s.Retries), s.Window())
	}
	if s := schedules["paddle"]; len(s.Retries) != 60 || s.Window() > 74*time.Hour || s.Window() < 70*time.Hour {
		t.Errorf("paddle: %d retries over %s, want 60 over 3 days", len(s.Retries), s.Window())
	}
	for _, name := range []string{"discord", "twilio"} {
		if len(schedules[name].Retries) != 0 {
			t.Errorf("%s retries; it does not", name)
		}
	}
}
