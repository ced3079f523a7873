package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"
)

const (
	// shopifySignatureHeader carries Shopify's base64 HMAC-SHA256 of the body.
	shopifySignatureHeader = "X-Shopify-Hmac-Sha256"
	// shopifyEventIDHeader identifies the event; Shopify documents the same value
	// across deliveries as the mark of a duplicate.
	shopifyEventIDHeader = "X-Shopify-Event-Id"
	// shopifyWebhookIDHeader identifies the delivery. It is the id of deliveries that
	// predate X-Shopify-Event-Id.
	shopifyWebhookIDHeader = "X-Shopify-Webhook-Id"
	// shopifyTopicHeader is the event's topic, e.g. "orders/create".
	shopifyTopicHeader = "X-Shopify-Topic"

	// shopifyRetryWindow covers Shopify's retries with a wide margin. Since September
	// 2024 Shopify retries 8 times over 4 hours; before, 19 times over 48 hours. A
	// receipt kept too long costs a row; one dropped too early lets a late retry take
	// effect twice. So the window is the longer schedule.
	shopifyRetryWindow = 48 * time.Hour
)

// ShopifyConfig configures a Shopify verifier.
type ShopifyConfig struct {
	// Secrets are the app's client secrets (or, for webhooks made in the admin, the
	// store's webhook signing secret). During a rotation there are several, and a
	// signature by any of them is accepted. At least one is required, and none may be
	// empty or have surrounding whitespace.
	Secrets []string
}

// Shopify verifies Shopify's webhook signatures (X-Shopify-Hmac-Sha256). It is safe for
// concurrent use.
//
// Shopify signs the body only. Its scheme has no signed timestamp: X-Shopify-Triggered-At
// says when the event happened but is not signed, so it is not checked and
// Verified.Timestamp is zero. A captured delivery can be replayed at any time, and the
// event id and topic travel in headers that are not signed, so a replay can carry a
// fresh id and pass the inbox's duplicate check. Handlers of Shopify events should be
// idempotent on the body's own identifiers.
type Shopify struct {
	secrets [][]byte
}

var _ Verifier = (*Shopify)(nil)

// NewShopify returns a Shopify verifier, or an error if cfg has no secrets, or an
// empty, blank or whitespace-padded secret. Errors identify a secret by its position,
// never by its value.
func NewShopify(cfg ShopifyConfig) (*Shopify, error) {
	secrets, err := secretBytes("shopify", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	return &Shopify{secrets: secrets}, nil
}

// Name returns "shopify".
func (*Shopify) Name() string { return "shopify" }

// RetryWindow returns 48 hours: Shopify's retry schedule (8 retries over 4 hours since
// September 2024, 19 over 48 hours before) with margin.
func (*Shopify) RetryWindow() time.Duration { return shopifyRetryWindow }

// Verify accepts the delivery only if X-Shopify-Hmac-Sha256 is the standard, padded
// base64 HMAC-SHA256, under one of the configured secrets, of body exactly as
// received. The event's id is X-Shopify-Event-Id, or X-Shopify-Webhook-Id when there
// is none; its type is X-Shopify-Topic.
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (s *Shopify) Verify(h http.Header, body []byte) (Verified, error) {
	sig, err := headerValue(h, "shopify", shopifySignatureHeader, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if sig == "" {
		return Verified{}, fmt.Errorf("shopify: no %s header: %w", shopifySignatureHeader, ErrMissingSignature)
	}
	// A value of another length cannot be the encoding of an HMAC-SHA256; the
	// comparison would refuse it anyway, and this says why.
	if want := base64.StdEncoding.EncodedLen(sha256.Size); len(sig) != want {
		return Verified{}, fmt.Errorf("shopify: %s is %d characters, want %d: %w",
			shopifySignatureHeader, len(sig), want, ErrNoValidSignature)
	}
	index := matchMAC(s.secrets, sha256.New, [][]byte{body}, base64Std, [][]byte{[]byte(sig)})
	if index < 0 {
		return Verified{}, fmt.Errorf("shopify: signature matches none of %d secrets: %w", len(s.secrets), ErrNoValidSignature)
	}

	id, typ, err := shopifyEvent(h)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index}, nil
}

// shopifyEvent extracts the id and type of a verified delivery from its headers.
func shopifyEvent(h http.Header) (id, typ string, err error) {
	if id, err = headerValue(h, "shopify", shopifyEventIDHeader, ErrUnparsableEvent); err != nil {
		return "", "", err
	}
	if id == "" {
		if id, err = headerValue(h, "shopify", shopifyWebhookIDHeader, ErrUnparsableEvent); err != nil {
			return "", "", err
		}
	}
	if id == "" {
		return "", "", fmt.Errorf("shopify: no %s or %s header: %w",
			shopifyEventIDHeader, shopifyWebhookIDHeader, ErrUnparsableEvent)
	}
	if typ, err = headerValue(h, "shopify", shopifyTopicHeader, ErrUnparsableEvent); err != nil {
		return "", "", err
	}
	if typ == "" {
		return "", "", fmt.Errorf("shopify: no %s header: %w", shopifyTopicHeader, ErrUnparsableEvent)
	}
	return id, typ, nil
}
