// Package hookinboxtest signs webhook requests the way each provider does, for users'
// own tests. It is independent of the verifiers in package provider: it computes
// signatures from each provider's documented scheme, and the repository's test-only
// module internal/oracle checks them against the providers' own libraries. The
// signing code is the one `hookinbox send` uses.
//
// There is one signer per scheme (Stripe, GitHub, Shopify, Slack, StandardWebhooks,
// Svix, HMAC, Discord, SendGrid, Twilio, Square, Paddle, Linear, Zoom, GitLab), and
// SignerFor picks one by provider name. Schemes that send the event's id or type in
// headers have an EventSigner, whose Sign reads them from the body's "id" and "type"
// and whose SignEvent takes them as arguments. Schemes that sign the URL (Twilio,
// Square) have a URLSigner.
//
//	req, err := hookinboxtest.NewRequest(srv.URL+"/webhooks/stripe", hookinboxtest.Stripe(secret), body)
package hookinboxtest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"fmt"
	"net/http"

	"github.com/hookinbox/hookinbox/internal/sign"
)

// Signer signs a body for one provider's scheme: Sign(body, at) returns the headers
// the provider would send with body at time at. Implementations are safe for
// concurrent use.
type Signer = sign.Signer

// EventSigner is a Signer for a scheme that carries the event's id or type in headers
// rather than in the signed body: GitHub, Shopify, Standard Webhooks (the id) and the
// generic hmac scheme when configured with id or type headers. Sign takes them from
// the body's top-level "id" and "type"; SignEvent(body, at, id, typ) takes them as
// arguments, for real payloads that have no such fields:
//
//	h, err := hookinboxtest.GitHub(secret).SignEvent(body, time.Now(), "72d3162e-cc78-11e3-81ab-4c9367dc0958", "issues")
type EventSigner = sign.EventSigner

// URLSigner is a Signer for a scheme that signs the URL the provider calls as well
// as the body: Twilio and Square. SignURL(url, body, at) signs for the signer's
// public URL (when it has one) with url's query, else url; Sign signs for the public
// URL alone and fails when there is none.
type URLSigner = sign.URLSigner

// HMACScheme describes a generic HMAC scheme as the hmac provider's params do; see
// the fields for the param names and defaults.
type HMACScheme = sign.HMACScheme

// NewRequest returns a POST of body to url, signed now by s, with a JSON content
// type unless the signer sets another (Twilio's forms). A URLSigner signs for url.
func NewRequest(url string, s Signer, body []byte) (*http.Request, error) {
	return sign.NewRequest(url, s, body)
}

// Names lists the providers SignerFor knows, sorted: the names a config's provider
// key accepts (provider.Names).
func Names() []string { return sign.Names() }

// SignerFor returns the signer of the named provider, as `hookinbox send --provider`
// selects it, with the endpoint's secrets and params. For discord and sendgrid the
// secrets are private keys (ParseDiscordKey, ParseSendGridKey); twilio and square
// sign for the param public_url when it is set. Schemes that carry several
// signatures (stripe, standardwebhooks, svix, paddle) sign with every secret, the
// others with the first. It refuses no secrets, an empty secret, an unknown param
// and, for hmac, a scheme HMAC refuses; errors never contain a secret.
func SignerFor(provider string, secrets []string, params map[string]string) (Signer, error) {
	s, err := sign.For(provider, secrets, params)
	return s, wrap(err)
}

// Stripe returns a signer for Stripe's v1 scheme (Stripe-Signature) with secret
// (whsec_...). With several secrets it sends one v1 signature per secret, as Stripe
// does while an old secret is still active.
func Stripe(secrets ...string) Signer { return sign.Stripe(secrets...) }

// GitHub returns a signer for GitHub's X-Hub-Signature-256. The id goes in
// X-GitHub-Delivery and the type, verbatim, in X-GitHub-Event: give the event name
// ("issues"), since receivers append the body's action themselves.
func GitHub(secret string) EventSigner { return sign.GitHub(secret) }

// Shopify returns a signer for Shopify's X-Shopify-Hmac-Sha256, with the id in
// X-Shopify-Event-Id and X-Shopify-Webhook-Id and the type (a topic such as
// "orders/create") in X-Shopify-Topic.
func Shopify(secret string) EventSigner { return sign.Shopify(secret) }

// Slack returns a signer for Slack's v0 scheme (X-Slack-Signature and
// X-Slack-Request-Timestamp). The event's id and type are in the body.
func Slack(secret string) Signer { return sign.Slack(secret) }

// StandardWebhooks returns a signer for the Standard Webhooks scheme (webhook-id,
// webhook-timestamp, webhook-signature), one v1 signature per secret ("whsec_" and
// base64; the prefix may be left out). The type is in the body.
func StandardWebhooks(secrets ...string) EventSigner { return sign.StandardWebhooks(secrets...) }

// Svix returns a signer for the Standard Webhooks scheme under Svix's header names:
// svix-id, svix-timestamp and svix-signature.
func Svix(secrets ...string) EventSigner { return sign.Svix(secrets...) }

// HMAC returns a signer for a generic scheme under secret, or an error if scheme has
// no header, or an unknown algorithm or encoding.
func HMAC(scheme HMACScheme, secret string) (EventSigner, error) {
	s, err := sign.HMAC(scheme, secret)
	return s, wrap(err)
}

// Discord returns a signer for Discord's interactions (X-Signature-Ed25519 and
// X-Signature-Timestamp). Discord signs with its private key: in tests, generate a
// key pair and configure the endpoint with DiscordPublicKey(key).
func Discord(key ed25519.PrivateKey) Signer { return sign.Discord(key) }

// DiscordPublicKey returns key's public key as Discord's Developer Portal shows an
// application's: 64 hex digits, what an endpoint's public_keys take.
func DiscordPublicKey(key ed25519.PrivateKey) string { return sign.DiscordPublicKey(key) }

// ParseDiscordKey reads an Ed25519 private key written in hex: its 32-byte seed or
// the 64-byte key. The error never quotes the key.
func ParseDiscordKey(s string) (ed25519.PrivateKey, error) {
	k, err := sign.ParseDiscordKey(s)
	return k, wrap(err)
}

// SendGrid returns a signer for SendGrid's signed Event Webhook (ECDSA P-256,
// X-Twilio-Email-Event-Webhook-Signature and -Timestamp). SendGrid signs with its
// private key: in tests, generate a P-256 key and configure the endpoint with
// SendGridPublicKey(key).
func SendGrid(key *ecdsa.PrivateKey) Signer { return sign.SendGrid(key) }

// SendGridPublicKey returns key's public key as SendGrid shows an Event Webhook's
// verification key: standard base64 of its DER SubjectPublicKeyInfo, what an
// endpoint's public_keys take.
func SendGridPublicKey(key *ecdsa.PrivateKey) (string, error) {
	k, err := sign.SendGridPublicKey(key)
	return k, wrap(err)
}

// ParseSendGridKey reads a P-256 private key written as standard base64 of its DER
// encoding, PKCS #8 or SEC 1. The error never quotes the key.
func ParseSendGridKey(s string) (*ecdsa.PrivateKey, error) {
	k, err := sign.ParseSendGridKey(s)
	return k, wrap(err)
}

// Twilio returns a signer for Twilio's X-Twilio-Signature, which signs the URL and
// the form body. publicURL is the webhook's URL as configured in Twilio ("" to sign
// the URL each request is sent to). For a JSON body, send it to TwilioJSONURL.
func Twilio(authToken, publicURL string) URLSigner { return sign.Twilio(authToken, publicURL) }

// TwilioJSONURL returns u with the bodySHA256 query parameter that Twilio adds when
// it posts a JSON body.
func TwilioJSONURL(u string, body []byte) string { return sign.TwilioJSONURL(u, body) }

// Square returns a signer for Square's x-square-hmacsha256-signature, which signs
// the notification URL and the body. notificationURL is the subscription's URL as
// configured in Square ("" to sign the URL each request is sent to).
func Square(signatureKey, notificationURL string) URLSigner {
	return sign.Square(signatureKey, notificationURL)
}

// Paddle returns a signer for Paddle Billing's Paddle-Signature, one h1 per secret.
// The event's id and type are in the body.
func Paddle(secrets ...string) Signer { return sign.Paddle(secrets...) }

// Linear returns a signer for Linear's Linear-Signature, with the id in
// Linear-Delivery and the type's entity in Linear-Event. Linear's timestamp is the
// body's webhookTimestamp, which the signer does not change.
func Linear(secret string) EventSigner { return sign.Linear(secret) }

// Zoom returns a signer for Zoom's v0 scheme (x-zm-signature and
// x-zm-request-timestamp). The event's type is in the body; Zoom sends no id.
func Zoom(secret string) Signer { return sign.Zoom(secret) }

// GitLab returns a signer for GitLab's webhooks, which are not signed: the token goes
// as it is in X-Gitlab-Token, the id in Idempotency-Key and X-Gitlab-Event-UUID and
// the type (e.g. "Push Hook") in X-Gitlab-Event.
func GitLab(token string) EventSigner { return sign.GitLab(token) }

// wrap names this package in err, as its errors always have.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("hookinboxtest: %w", err)
}
