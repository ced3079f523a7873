package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"
)

const (
	// squareSignatureHeader carries the base64 HMAC-SHA256 of the notification URL
	// followed by the body.
	squareSignatureHeader = "X-Square-Hmacsha256-Signature"
	// squareSHA1Header carries Square's legacy HMAC-SHA1 signature, which is never
	// accepted.
	squareSHA1Header = "X-Square-Signature"

	// squareRetryWindow is how long Square retries an unacknowledged notification.
	// Square's pages say 24 hours in one place and 72 in another; the longer one
	// is kept, since a receipt dropped too early lets a late retry take effect twice.
	squareRetryWindow = 72 * time.Hour
)

// SquareConfig configures a Square verifier.
type SquareConfig struct {
	// Secrets are the webhook subscription's signature keys. During a rotation
	// there are several, and a signature by any of them is accepted. At least one is
	// required, and none may be empty or have surrounding whitespace.
	Secrets []string

	// PublicURL is the subscription's notification URL as configured in Square,
	// without its query (param public_url). Square signs it with the body; behind a
	// proxy that changes the scheme, host or path, only this URL is the one Square
	// signed. Empty means the URL of the request as this server received it.
	PublicURL string
}

// Square verifies Square's webhook signatures (x-square-hmacsha256-signature). It is
// safe for concurrent use. It is a RequestVerifier: the signature covers the
// notification URL.
//
// Square signs no timestamp: the body's created_at is signed but stays the same on
// every retry, so it cannot bound a replay. A replay carries the same event_id, so
// it is a duplicate for as long as receipts are kept.
type Square struct {
	secrets   [][]byte
	publicURL string
}

var _ RequestVerifier = (*Square)(nil)

// NewSquare returns a Square verifier, or an error if cfg has no secrets, an empty,
// blank or whitespace-padded secret, or a PublicURL that is not an absolute http(s)
// URL without query.
func NewSquare(cfg SquareConfig) (*Square, error) {
	secrets, err := secretBytes("square", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	if err := checkPublicURL("square", cfg.PublicURL); err != nil {
		return nil, err
	}
	return &Square{secrets: secrets, publicURL: cfg.PublicURL}, nil
}

// Name returns "square".
func (*Square) Name() string { return "square" }

// RetryWindow returns 72 hours, the longer of the retry windows Square documents.
func (*Square) RetryWindow() time.Duration { return squareRetryWindow }

// Verify is VerifyRequest for a request to the configured PublicURL with no query.
// Without a PublicURL it refuses every request: the signed URL is unknown.
func (s *Square) Verify(h http.Header, body []byte) (Verified, error) {
	return s.verify(h, s.publicURL, body)
}

// VerifyRequest accepts the notification only if x-square-hmacsha256-signature is
// the standard, padded base64 HMAC-SHA256, under one of the configured signature
// keys, of the notification URL (see RequestVerifier) followed by body exactly as
// received. A request that carries only the legacy SHA-1 x-square-signature is
// refused as missing its signature.
//
// The body must be a JSON object: the id is its "event_id", the type its "type"
// (e.g. "payment.updated").
func (s *Square) VerifyRequest(r *http.Request, body []byte) (Verified, error) {
	return s.verify(r.Header, signedURL(r, s.publicURL), body)
}

func (s *Square) verify(h http.Header, notificationURL string, body []byte) (Verified, error) {
	sig, err := headerValue(h, "square", squareSignatureHeader, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if sig == "" {
		if sha1, _ := headerValue(h, "square", squareSHA1Header, ErrMalformedSignature); sha1 != "" {
			return Verified{}, fmt.Errorf("square: only the SHA-1 %s header, which is not accepted; no %s header: %w",
				squareSHA1Header, squareSignatureHeader, ErrMissingSignature)
		}
		return Verified{}, fmt.Errorf("square: no %s header: %w", squareSignatureHeader, ErrMissingSignature)
	}
	if want := base64.StdEncoding.EncodedLen(sha256.Size); len(sig) != want {
		return Verified{}, fmt.Errorf("square: %s is %d characters, want %d: %w", squareSignatureHeader, len(sig), want, ErrNoValidSignature)
	}
	if notificationURL == "" {
		return Verified{}, fmt.Errorf("square: the notification URL is signed and no public_url is configured: %w", ErrNoValidSignature)
	}
	index := matchMAC(s.secrets, sha256.New, [][]byte{[]byte(notificationURL), body}, base64Std, [][]byte{[]byte(sig)})
	if index < 0 {
		return Verified{}, fmt.Errorf("square: signature matches none of %d signature keys: %w", len(s.secrets), ErrNoValidSignature)
	}

	fields, err := eventObject("square", body)
	if err != nil {
		return Verified{}, err
	}
	id, err := eventString("square", fields, "event_id", false)
	if err != nil {
		return Verified{}, err
	}
	typ, err := eventString("square", fields, "type", false)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, BodyIsJSON: true}, nil
}
