package oracle_test

import (
	"fmt"
	"testing"

	"github.com/stripe/stripe-go/v82/webhook"
)

// FuzzStripeHeader checks that whatever provider.Stripe accepts, stripe-go accepts
// too: the oracle half of provider's FuzzStripeHeader, whose seeds it shares.
func FuzzStripeHeader(f *testing.F) {
	body := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	good := stripeGoSignature(body, fuzzSecret, testNow)
	ts := fmt.Sprintf("t=%d", testNow.Unix())
	f.Add(ts+",v1="+good, body)
	f.Add(ts+",v1="+good[:32]+",v1="+good+",v0="+good, body)
	f.Add("v1="+good+","+ts, body)

	s := newStripe(f, fixedNow, fuzzSecret)
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if _, err := s.Verify(headers("Stripe-Signature", header), body); err != nil {
			return
		}
		if err := webhook.ValidatePayloadIgnoringTolerance(body, header, fuzzSecret); err != nil {
			t.Fatalf("accepted header %q that stripe-go refuses: %v", header, err)
		}
	})
}
