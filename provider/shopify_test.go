package provider_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"hash"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

const (
	// shopifyVectorSecret, shopifyVectorBody and shopifyVectorSignature are a
	// published Shopify webhook example from SQLPage's test suite (its sqlpage.hmac
	// with 'sha256-base64'), computed by an implementation that shares nothing with
	// this one. Shopify publishes no vector of its own.
	shopifyVectorSecret    = "test-webhook-secret"
	shopifyVectorBody      = `{"id":1234567890,"email":"customer@example.com","total_price":"123.45"}`
	shopifyVectorSignature = "QNyObTlKbMx2qDlPF/ZOZcBqg5OgPg+2oky3zldc0Gw="

	shopifyEventID   = "98880550-7158-44d4-b7cd-2c97c8a091b5"
	shopifyWebhookID = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
)

// shopifyBody is an order with irregular spacing, so that re-serializing it changes
// its bytes.
var shopifyBody = []byte(`{"id": 820982911946154508,  "email": "jon@example.com",
  "note": "` + testBodyMarker + `"}`)

// base64MAC returns the standard base64 HMAC of the concatenation of parts under
// secret, computed directly from the definition.
func base64MAC(newHash func() hash.Hash, secret string, parts ...[]byte) string {
	mac := hmac.New(newHash, []byte(secret))
	for _, p := range parts {
		mac.Write(p)
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func shopifyHeader(sig string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Shopify-Hmac-Sha256", sig)
	}
	h.Set("X-Shopify-Event-Id", shopifyEventID)
	h.Set("X-Shopify-Webhook-Id", shopifyWebhookID)
	h.Set("X-Shopify-Topic", "orders/create")
	h.Set("X-Shopify-Triggered-At", "2024-01-01T00:00:00Z")
	return h
}

func newTestShopify(t testing.TB, secrets ...string) *provider.Shopify {
	t.Helper()
	s, err := provider.NewShopify(provider.ShopifyConfig{Secrets: secrets})
	if err != nil {
		t.Fatalf("NewShopify: %v", err)
	}
	return s
}

func TestShopifyNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestShopify(t, testSecret)
	if got := v.Name(); got != "shopify" {
		t.Errorf("Name() = %q, want %q", got, "shopify")
	}
	if got := v.RetryWindow(); got < 4*time.Hour {
		t.Errorf("RetryWindow() = %s, shorter than Shopify's 4 hours of retries", got)
	}
}

func TestShopifyPublishedVector(t *testing.T) {
	t.Parallel()

	body := []byte(shopifyVectorBody)
	if got := base64MAC(sha256.New, shopifyVectorSecret, body); got != shopifyVectorSignature {
		t.Fatalf("the test's HMAC = %s, want the published %s", got, shopifyVectorSignature)
	}
	got, err := newTestShopify(t, shopifyVectorSecret).Verify(shopifyHeader(shopifyVectorSignature), body)
	if err != nil {
		t.Fatalf("Verify(published vector): %v", err)
	}
	if got.ID != shopifyEventID || got.Type != "orders/create" || !bytes.Equal(got.Body, body) || !got.Timestamp.IsZero() {
		t.Errorf("Verify = %+v", got)
	}
}

func TestShopifyRejects(t *testing.T) {
	t.Parallel()

	good := base64MAC(sha256.New, testSecret, shopifyBody)
	empty := shopifyHeader("")
	empty.Set("X-Shopify-Hmac-Sha256", "")
	twoHeaders := shopifyHeader(good)
	twoHeaders.Add("X-Shopify-Hmac-Sha256", good)

	testRejections(t, newTestShopify(t, testSecret), []rejection{
		{"no header", shopifyHeader(""), shopifyBody, provider.ErrMissingSignature},
		{"nil header", nil, shopifyBody, provider.ErrMissingSignature},
		{"empty header", empty, shopifyBody, provider.ErrMissingSignature},
		{"two headers", twoHeaders, shopifyBody, provider.ErrMalformedSignature},
		{"header too long", shopifyHeader(good + strings.Repeat("A", 8<<10)), shopifyBody, provider.ErrMalformedSignature},
		{"garbage", shopifyHeader("garbage"), shopifyBody, provider.ErrNoValidSignature},
		{"hex instead of base64", shopifyHeader(hexMAC(sha256.New, testSecret, shopifyBody)), shopifyBody, provider.ErrNoValidSignature},
		{"wrong secret", shopifyHeader(base64MAC(sha256.New, otherSecret, shopifyBody)), shopifyBody, provider.ErrNoValidSignature},
		{"truncated signature", shopifyHeader(good[:24]), shopifyBody, provider.ErrNoValidSignature},
		{"padding dropped", shopifyHeader(strings.TrimRight(good, "=")), shopifyBody, provider.ErrNoValidSignature},
		{"last character changed", shopifyHeader(tamper.LastBase64Changed(good)), shopifyBody, provider.ErrNoValidSignature},
		{"url-safe alphabet", shopifyHeader(strings.NewReplacer("+", "-", "/", "_").Replace(base64MAC(sha256.New, testSecret, []byte("{}")))), []byte("{}"), provider.ErrNoValidSignature},
		{"one byte changed in body", shopifyHeader(good), tamper.OneByteChanged(shopifyBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", shopifyHeader(good), tamper.Reserialized(shopifyBody), provider.ErrNoValidSignature},
		{"empty body", shopifyHeader(good), nil, provider.ErrNoValidSignature},
		{"unknown algorithm alone (sha512)", shopifyHeader(base64MAC(sha512.New, testSecret, shopifyBody)), shopifyBody, provider.ErrNoValidSignature},
		{"prefixed", shopifyHeader("sha256=" + good), shopifyBody, provider.ErrNoValidSignature},
	}, testSecret, testBodyMarker)
}

// TestShopifyNonCanonicalBase64 checks that only the canonical encoding is accepted:
// Go's decoder ignores line breaks and non-zero padding bits, so decoding the header
// would accept strings that Shopify's own libraries refuse.
func TestShopifyNonCanonicalBase64(t *testing.T) {
	t.Parallel()

	s := newTestShopify(t, testSecret)
	body := []byte("{}")
	good := base64MAC(sha256.New, testSecret, body)
	raw, _ := base64.StdEncoding.DecodeString(good)
	// Same digest, different text: the last character's padding bits set.
	i := len(good) - 2
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	pos := strings.IndexByte(alphabet, good[i])
	noncanonical := good[:i] + string(alphabet[pos|1]) + good[i+1:]
	if decoded, err := base64.StdEncoding.DecodeString(noncanonical); err != nil || !bytes.Equal(decoded, raw) || noncanonical == good {
		t.Fatalf("test setup: %q does not decode to the same digest (%v)", noncanonical, err)
	}
	if _, err := s.Verify(shopifyHeader(noncanonical), body); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("Verify(non-canonical base64) error = %v, want %v", err, provider.ErrNoValidSignature)
	}
}

func TestShopifyRotation(t *testing.T) {
	t.Parallel()

	s := newTestShopify(t, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := s.Verify(shopifyHeader(base64MAC(sha256.New, secret, shopifyBody)), shopifyBody)
		if err != nil {
			t.Fatalf("secret %d: Verify: %v", i, err)
		}
		if got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex = %d", i, got.SecretIndex)
		}
	}
}

func TestShopifyEventIDAndType(t *testing.T) {
	t.Parallel()

	s := newTestShopify(t, testSecret)
	sig := base64MAC(sha256.New, testSecret, shopifyBody)
	tests := []struct {
		name     string
		edit     func(http.Header)
		wantID   string
		wantErr  bool
		wantText string
	}{
		{"event id preferred", func(http.Header) {}, shopifyEventID, false, ""},
		{"webhook id when there is no event id", func(h http.Header) { h.Del("X-Shopify-Event-Id") }, shopifyWebhookID, false, ""},
		{"no id", func(h http.Header) { h.Del("X-Shopify-Event-Id"); h.Del("X-Shopify-Webhook-Id") }, "", true, "no X-Shopify-Event-Id or X-Shopify-Webhook-Id"},
		{"no topic", func(h http.Header) { h.Del("X-Shopify-Topic") }, "", true, "no X-Shopify-Topic"},
		{"two event ids", func(h http.Header) { h.Add("X-Shopify-Event-Id", "other") }, "", true, "2 X-Shopify-Event-Id headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			h := shopifyHeader(sig)
			tt.edit(h)
			got, err := s.Verify(h, shopifyBody)
			if tt.wantErr {
				if !errors.Is(err, provider.ErrUnparsableEvent) || !strings.Contains(err.Error(), tt.wantText) {
					t.Fatalf("Verify error = %v, want %v mentioning %q", err, provider.ErrUnparsableEvent, tt.wantText)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.ID != tt.wantID || got.Type != "orders/create" {
				t.Errorf("ID, Type = %q, %q, want %q, orders/create", got.ID, got.Type, tt.wantID)
			}
		})
	}
}
