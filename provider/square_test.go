package provider_test

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// The example that Square's SDKs verify in their webhooks helper tests (e.g.
// square-python-sdk, tests/webhooks_helper_test.py; the Java, Node, PHP and Ruby SDKs
// carry the same): signature key, notification URL, body and signature. There is no
// Square Go library in the module proxy to use as an oracle.
const (
	squareVectorKey  = "Ibxx_5AKakO-3qeNVR61Dw"
	squareVectorURL  = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
	squareVectorSig  = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
	squareVectorBody = `{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`
)

const squarePublicURL = "https://hooks.example.com/webhooks/square"

var squareBody = []byte(`{"merchant_id": "6SSW7HV8K2ST5", "type": "payment.updated",
  "event_id": "13b867cf-db3d-4b1c-90b6-2f32a9d78124", "created_at": "2024-01-01T00:00:00Z",
  "data": {"type": "payment", "id": "` + testBodyMarker + `"}}`)

func squareSignature(key, notificationURL string, body []byte) string {
	return base64MAC(sha256.New, key, []byte(notificationURL), body)
}

func squareHeader(sig string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Square-Hmacsha256-Signature", sig)
	}
	return h
}

func newTestSquare(t testing.TB, publicURL string, secrets ...string) *provider.Square {
	t.Helper()
	v, err := provider.NewSquare(provider.SquareConfig{Secrets: secrets, PublicURL: publicURL})
	if err != nil {
		t.Fatalf("NewSquare: %v", err)
	}
	return v
}

func TestSquareNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestSquare(t, "", testSecret)
	if v.Name() != "square" || v.RetryWindow() <= 0 {
		t.Errorf("Name, RetryWindow = %q, %s", v.Name(), v.RetryWindow())
	}
}

func TestSquarePublishedVector(t *testing.T) {
	t.Parallel()

	body := []byte(squareVectorBody)
	if got := squareSignature(squareVectorKey, squareVectorURL, body); got != squareVectorSig {
		t.Fatalf("the definition gives %s, Square's example %s", got, squareVectorSig)
	}
	// Through the request as received, and through the configured URL.
	r := httptest.NewRequest("POST", squareVectorURL, strings.NewReader(squareVectorBody))
	r.Header = squareHeader(squareVectorSig)
	for name, verify := range map[string]func() (provider.Verified, error){
		"VerifyRequest": func() (provider.Verified, error) { return newTestSquare(t, "", squareVectorKey).VerifyRequest(r, body) },
		"Verify": func() (provider.Verified, error) {
			return newTestSquare(t, squareVectorURL, squareVectorKey).Verify(r.Header, body)
		},
	} {
		got, err := verify()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.ID != "ac3ac95b-f97d-458c-a6e6-18981597e05f" || got.Type != "webhooks.test_notification" {
			t.Errorf("%s: ID, Type = %q, %q", name, got.ID, got.Type)
		}
	}
}

func TestSquarePublicURL(t *testing.T) {
	t.Parallel()

	sig := squareSignature(testSecret, squarePublicURL, squareBody)
	r := httptest.NewRequest("POST", "http://10.0.0.5:8080/square", strings.NewReader(string(squareBody)))
	r.Header = squareHeader(sig)
	if _, err := newTestSquare(t, "", testSecret).VerifyRequest(r, squareBody); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("without public_url: %v", err)
	}
	if _, err := newTestSquare(t, squarePublicURL, testSecret).VerifyRequest(r, squareBody); err != nil {
		t.Errorf("with public_url: %v", err)
	}
	if _, err := newTestSquare(t, "", testSecret).Verify(r.Header, squareBody); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("Verify without public_url: %v", err)
	}
}

func TestSquareRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestSquare(t, squarePublicURL, testSecret), squareRejections(), testSecret, testBodyMarker)
}

func squareRejections() []rejection {
	good := squareSignature(testSecret, squarePublicURL, squareBody)
	h := squareHeader
	sha1Only := http.Header{}
	sha1Only.Set("X-Square-Signature", "c2hhMQ==")
	return []rejection{
		{"no header", http.Header{}, squareBody, provider.ErrMissingSignature},
		{"only the SHA-1 header", sha1Only, squareBody, provider.ErrMissingSignature},
		{"wrong key", h(squareSignature(otherSecret, squarePublicURL, squareBody)), squareBody, provider.ErrNoValidSignature},
		{"signed for another URL", h(squareSignature(testSecret, squarePublicURL+"/x", squareBody)), squareBody, provider.ErrNoValidSignature},
		{"body alone signed", h(squareSignature(testSecret, "", squareBody)), squareBody, provider.ErrNoValidSignature},
		{"truncated signature", h(good[:40]), squareBody, provider.ErrNoValidSignature},
		{"last character changed", h(tamper.LastBase64Changed(good)), squareBody, provider.ErrNoValidSignature},
		{"one byte changed in body", h(good), tamper.OneByteChanged(squareBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", h(good), tamper.Reserialized(squareBody), provider.ErrNoValidSignature},
	}
}

func TestSquareRotation(t *testing.T) {
	t.Parallel()

	v := newTestSquare(t, squarePublicURL, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := v.Verify(squareHeader(squareSignature(secret, squarePublicURL, squareBody)), squareBody)
		if err != nil || got.SecretIndex != i {
			t.Errorf("key %d: SecretIndex %d, error %v", i, got.SecretIndex, err)
		}
	}
}

func TestSquareUnparsableEvent(t *testing.T) {
	t.Parallel()

	v := newTestSquare(t, squarePublicURL, testSecret)
	for _, body := range []string{`{"type":"payment.updated"}`, `{"event_id":"e"}`, `[]`, `{"event_id":1,"type":"x"}`} {
		b := []byte(body)
		if _, err := v.Verify(squareHeader(squareSignature(testSecret, squarePublicURL, b)), b); !errors.Is(err, provider.ErrUnparsableEvent) {
			t.Errorf("%s: Verify error %v", body, err)
		}
	}
}
