package hookinboxtest_test

import (
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// TestSquare_PublishedVector signs the example that Square's SDKs verify in their
// webhooks helper tests (e.g. square-python-sdk, tests/webhooks_helper_test.py).
func TestSquare_PublishedVector(t *testing.T) {
	t.Parallel()

	body := []byte(`{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`)
	h, err := hookinboxtest.Square("Ibxx_5AKakO-3qeNVR61Dw", "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9").Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("X-Square-Hmacsha256-Signature"); got != "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=" {
		t.Errorf("signature %s, Square's example GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=", got)
	}
}
