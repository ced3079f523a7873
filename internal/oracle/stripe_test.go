package oracle_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// stripeBody is a Stripe-shaped event with irregular spacing and key order.
var stripeBody = []byte(`{
  "type": "invoice.paid",   "id": "evt_1NG8Du2eZvKYlo2CUI79vXWy",
  "object": "event",
  "data": {"object": {"id": "in_1", "description": "` + testBodyMarker + `"}}
}`)

// stripeGoSigned returns the Stripe-Signature header stripe-go's test helper makes.
func stripeGoSigned(body []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
}

// stripeGoSignature returns stripe-go's v1 signature of body, in hex.
func stripeGoSignature(body []byte, secret string, at time.Time) string {
	return hex.EncodeToString(webhook.ComputeSignature(at, body, secret))
}

func newStripe(t testing.TB, now func() time.Time, secrets ...string) *provider.Stripe {
	t.Helper()
	s, err := provider.NewStripe(provider.StripeConfig{Secrets: secrets, NowFunc: now})
	if err != nil {
		t.Fatalf("NewStripe: %v", err)
	}
	return s
}

func TestStripe_VerifiesStripeGoSignature(t *testing.T) {
	t.Parallel()

	got, err := newStripe(t, fixedNow, testSecret).Verify(headers("Stripe-Signature", stripeGoSigned(stripeBody, testSecret, testNow)), stripeBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != "evt_1NG8Du2eZvKYlo2CUI79vXWy" || got.Type != "invoice.paid" || !bytes.Equal(got.Body, stripeBody) ||
		got.SecretIndex != 0 || !got.Timestamp.Equal(testNow) {
		t.Errorf("Verify = %+v", got)
	}
}

// TestStripe_VerifierAgreesWithStripeGo cross-checks verdicts with stripe-go on the
// real clock, which stripe-go always uses, in both directions: headers stripe-go
// signs, and headers built by hand.
func TestStripe_VerifierAgreesWithStripeGo(t *testing.T) {
	t.Parallel()

	s := newStripe(t, nil, testSecret)
	now := time.Now()
	good := stripeGoSignature(stripeBody, testSecret, now)
	wrong := stripeGoSignature(stripeBody, otherSecret, now)
	ts := fmt.Sprintf("t=%d", now.Unix())

	tests := []struct {
		name   string
		header string
		body   []byte
		wantOK bool
	}{
		{"stripe-go signed", stripeGoSigned(stripeBody, testSecret, now), stripeBody, true},
		{"good then extra schemes", ts + ",v1=" + good + ",v0=" + wrong, stripeBody, true},
		{"bad then good v1", ts + ",v1=" + wrong + ",v1=" + good, stripeBody, true},
		{"uppercase hex", ts + ",v1=" + strings.ToUpper(good), stripeBody, true},
		{"signature first", "v1=" + good + "," + ts, stripeBody, true},
		{"wrong secret", ts + ",v1=" + wrong, stripeBody, false},
		{"truncated", ts + ",v1=" + good[:32], stripeBody, false},
		{"body changed", ts + ",v1=" + good, append(bytes.Clone(stripeBody), ' '), false},
		{"v0 only", ts + ",v0=" + good, stripeBody, false},
		{"extra equals", ts + ",v1=" + good + ",x=a=b", stripeBody, false},
		{"stale", stripeGoSigned(stripeBody, testSecret, now.Add(-10*time.Minute)), stripeBody, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, ours := s.Verify(headers("Stripe-Signature", tt.header), tt.body)
			theirs := webhook.ValidatePayloadWithTolerance(tt.body, tt.header, testSecret, provider.DefaultTolerance)
			if (ours == nil) != tt.wantOK || (theirs == nil) != tt.wantOK {
				t.Errorf("ours: %v, stripe-go: %v, want ok %t", ours, theirs, tt.wantOK)
			}
		})
	}
}

// stripe-go, the independent verifier, accepts what the signer signs, under each
// secret of a rotation.
func TestStripe_SignerAcceptedByStripeGo(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	h, err := hookinboxtest.Stripe("whsec_old", "whsec_new").Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"whsec_old", "whsec_new"} {
		if err := webhook.ValidatePayload(body, h.Get("Stripe-Signature"), secret); err != nil {
			t.Errorf("secret %s: %v", secret, err)
		}
	}
}

// The signer writes stripe-go's test helper's header byte for byte, so that the
// tests of the root package and of provider, which sign with it or with the same
// definition since stripe-go left the library's go.mod, send what they sent before.
func TestStripe_SignerWritesStripeGoBytes(t *testing.T) {
	t.Parallel()

	for _, at := range []time.Time{testNow, time.Unix(0, 0), time.Now()} {
		for _, body := range [][]byte{stripeBody, nil, []byte(`{"id":"evt_1","type":"x"}`)} {
			h, err := hookinboxtest.Stripe(testSecret).Sign(body, at)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := h.Get("Stripe-Signature"), stripeGoSigned(body, testSecret, at); got != want {
				t.Errorf("at %d, body %.20q: the signer writes %q, stripe-go %q", at.Unix(), body, got, want)
			}
		}
	}
}
