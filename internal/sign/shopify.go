package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"
)

// Shopify returns a signer for Shopify's scheme: X-Shopify-Hmac-Sha256, the base64
// HMAC-SHA256 of the body under secret. It sends the id as X-Shopify-Event-Id and
// X-Shopify-Webhook-Id, the type as X-Shopify-Topic (e.g. "orders/create"), and at as
// X-Shopify-Triggered-At, which Shopify does not sign.
func Shopify(secret string) EventSigner { return shopifySigner{secret} }

type shopifySigner struct{ secret string }

func (s shopifySigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return signFromBody(s, "shopify", body, at, "X-Shopify-Event-Id", "X-Shopify-Topic")
}

func (s shopifySigner) SignEvent(body []byte, at time.Time, id, typ string) (http.Header, error) {
	if err := needEvent("shopify", "X-Shopify-Event-Id", id, "X-Shopify-Topic", typ); err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, []byte(s.secret))
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	h.Set("X-Shopify-Event-Id", id)
	h.Set("X-Shopify-Webhook-Id", id)
	h.Set("X-Shopify-Topic", typ)
	h.Set("X-Shopify-Triggered-At", at.UTC().Format(time.RFC3339Nano))
	return h, nil
}
