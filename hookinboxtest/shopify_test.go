package hookinboxtest_test

import (
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// A published Shopify example from SQLPage's test suite (sqlpage.hmac with
// 'sha256-base64'), an implementation that shares nothing with this one; Shopify
// publishes no vector of its own.
func TestShopify_PublishedVector(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":1234567890,"email":"customer@example.com","total_price":"123.45"}`)
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	h, err := hookinboxtest.Shopify("test-webhook-secret").SignEvent(body, at, "ev_1", "orders/create")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get("X-Shopify-Hmac-Sha256"), "QNyObTlKbMx2qDlPF/ZOZcBqg5OgPg+2oky3zldc0Gw="; got != want {
		t.Errorf("X-Shopify-Hmac-Sha256 = %s, want %s", got, want)
	}
	if h.Get("X-Shopify-Event-Id") != "ev_1" || h.Get("X-Shopify-Topic") != "orders/create" ||
		h.Get("X-Shopify-Triggered-At") != "2024-01-02T03:04:05Z" {
		t.Errorf("headers = %v", h)
	}

	h, err = hookinboxtest.Shopify("test-webhook-secret").Sign(body, at)
	if err == nil {
		t.Errorf("Sign of a body with no type = %v, want an error", h)
	}
}
