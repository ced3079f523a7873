// Package sign signs webhook requests the way each provider does: for the binary's
// `hookinbox send` and `hookinbox probe`, bench and chaos sender, and, through the
// public package hookinboxtest, for users' own tests. It is independent of the
// verifiers in package provider: it computes signatures from each provider's
// documented scheme, and internal/oracle checks them against the providers' own
// libraries.
//
// There is one signer per scheme (Stripe, GitHub, Shopify, Slack, StandardWebhooks,
// Svix, HMAC, Discord, SendGrid, Twilio, Square, Paddle, Linear, Zoom, GitLab), and
// For picks one by provider name. Schemes that send the event's id or type in
// headers have an EventSigner, whose Sign reads them from the body's "id" and "type"
// and whose SignEvent takes them as arguments. Schemes that sign the URL (Twilio,
// Square) have a URLSigner. For the schemes signed with a private key (Discord,
// SendGrid), PublicKey derives the key a receiver is configured with, and
// GenerateKey makes a new pair.
//
// Errors name the scheme and never contain a secret or a key.
//
//	req, err := sign.NewRequest(url, sign.Stripe(secret), body)
package sign

import (
	"bytes"
	"net/http"
	"time"
)

// Signer signs a body for one provider's scheme. Implementations are safe for
// concurrent use.
type Signer interface {
	// Sign returns the headers a provider would send with body at time at.
	Sign(body []byte, at time.Time) (http.Header, error)
}

// NewRequest returns a POST of body to url, signed now by s, with a JSON content
// type unless the signer sets another (Twilio's forms). A URLSigner signs for url.
func NewRequest(url string, s Signer, body []byte) (*http.Request, error) {
	var h http.Header
	var err error
	if us, ok := s.(URLSigner); ok {
		h, err = us.SignURL(url, body, time.Now())
	} else {
		h, err = s.Sign(body, time.Now())
	}
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range h {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return req, nil
}
