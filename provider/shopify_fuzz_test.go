package provider_test

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"testing"

	"github.com/hookinbox/hookinbox/provider"
)

// FuzzShopifyHeader checks that nothing verifies that was not signed: whenever Verify
// accepts, the header is exactly the base64 HMAC of the body.
func FuzzShopifyHeader(f *testing.F) {
	body := []byte(`{"id":820982911946154508}`)
	good := base64MAC(sha256.New, fuzzSecret, body)
	f.Add(good, body)
	f.Add(good[:43]+"\n", body)
	f.Add(good[:24], body)
	f.Add("sha256="+good, body)
	f.Add(hexMAC(sha256.New, fuzzSecret, body), body)
	f.Add("", []byte(nil))

	s := newTestShopify(f, fuzzSecret)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := shopifyHeader("")
		h.Set("X-Shopify-Hmac-Sha256", sig)
		got, err := s.Verify(h, body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if want := base64MAC(sha256.New, fuzzSecret, body); sig != want {
			t.Fatalf("accepted signature %q, want %s", sig, want)
		}
		if got.ID != shopifyEventID || got.Type != "orders/create" || string(got.Body) != string(body) {
			t.Fatalf("Verify = %+v", got)
		}
	})
}

// FuzzShopifyEvent checks the id and type of correctly signed deliveries against
// their headers: the event id, else the webhook id, and the topic.
func FuzzShopifyEvent(f *testing.F) {
	f.Add(shopifyEventID, shopifyWebhookID, "orders/create")
	f.Add("", shopifyWebhookID, "orders/create")
	f.Add("", "", "orders/create")
	f.Add(shopifyEventID, "", "")

	s := newTestShopify(f, fuzzSecret)
	body := []byte(`{}`)
	sig := base64MAC(sha256.New, fuzzSecret, body)
	f.Fuzz(func(t *testing.T, eventID, webhookID, topic string) {
		h := http.Header{}
		h.Set("X-Shopify-Hmac-Sha256", sig)
		h.Set("X-Shopify-Event-Id", eventID)
		h.Set("X-Shopify-Webhook-Id", webhookID)
		h.Set("X-Shopify-Topic", topic)
		got, err := s.Verify(h, body)
		if err != nil {
			if !errors.Is(err, provider.ErrUnparsableEvent) {
				t.Fatalf("signed delivery refused with %v", err)
			}
			return
		}
		wantID := eventID
		if wantID == "" {
			wantID = webhookID
		}
		if got.ID != wantID || got.ID == "" || got.Type != topic || topic == "" {
			t.Fatalf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, wantID, topic)
		}
	})
}
