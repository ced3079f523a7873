package hookinboxtest_test

import (
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// stripe-go, the independent verifier, accepts what the signer signs.
func TestStripe_AcceptedByStripeGo(t *testing.T) {
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
