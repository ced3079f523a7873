package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// standardWebhooksSecretPrefix starts a Standard Webhooks secret; the base64 key
	// follows it.
	standardWebhooksSecretPrefix = "whsec_"

	// standardWebhooksMaxSignatures bounds the v1 signatures we compare, per secret.
	// Senders send one per active secret, so a handful at most.
	standardWebhooksMaxSignatures = 32

	// standardWebhooksRetryWindow is the default retry window. Svix, the scheme's
	// main sender, retries automatically for about 28 hours after the first attempt
	// (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); the rest covers a manual resend in
	// the days after an outage.
	standardWebhooksRetryWindow = 72 * time.Hour
)

// standardWebhooksHeaders names the three headers of the scheme under one prefix.
type standardWebhooksHeaders struct{ id, timestamp, signature string }

var (
	// standardWebhooksNames are the Standard Webhooks names of the headers.
	standardWebhooksNames = standardWebhooksHeaders{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"}
	// svixNames are the same headers as Svix has long sent them.
	svixNames = standardWebhooksHeaders{"Svix-Id", "Svix-Timestamp", "Svix-Signature"}
)

// StandardWebhooksConfig configures a Standard Webhooks verifier.
type StandardWebhooksConfig struct {
	// Secrets are the endpoint's signing secrets, "whsec_" followed by the base64 of
	// the key, as Svix shows them. The prefix may be left out. During a rotation
	// there are several, and a signature by any of them is accepted. At least one is
	// required; none may be empty, have surrounding whitespace, or not be base64.
	Secrets []string

	// Tolerance is how far webhook-timestamp may be from now, in either direction.
	// Zero means DefaultTolerance, the specification's. Negative is an error.
	Tolerance time.Duration

	// RetryWindow is how long the sender may send a delivery again. Negative is an
	// error.
	//
	// Defaults to 72 hours, which covers Svix's automatic retries (about 28 hours) and
	// a manual resend in the days after.
	RetryWindow time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// StandardWebhooks verifies the Standard Webhooks scheme (standardwebhooks.com), which
// Svix sends. It is safe for concurrent use.
//
// It reads the webhook-id, webhook-timestamp and webhook-signature headers, or Svix's
// svix-id, svix-timestamp and svix-signature. The two sets are never mixed: the
// webhook-* set is used when any of its headers is present, the svix-* set otherwise.
// The id is signed, so unlike GitHub's or Shopify's a replay cannot carry a fresh one.
type StandardWebhooks struct {
	keys        [][]byte
	tolerance   time.Duration
	retryWindow time.Duration
	now         func() time.Time
}

var _ Verifier = (*StandardWebhooks)(nil)

// NewStandardWebhooks returns a Standard Webhooks verifier, or an error if cfg has no
// secrets, an empty, blank, whitespace-padded or non-base64 secret, or a negative
// tolerance or retry window. Errors identify a secret by its position, never by its
// value.
func NewStandardWebhooks(cfg StandardWebhooksConfig) (*StandardWebhooks, error) {
	secrets, err := secretBytes("standardwebhooks", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, len(secrets))
	for i, secret := range secrets {
		encoded := strings.TrimPrefix(string(secret), standardWebhooksSecretPrefix)
		// Non-strict standard decoding, as in the Standard Webhooks and Svix
		// libraries, so that a secret yields the key they would use.
		key, err := base64.StdEncoding.DecodeString(encoded)
		switch {
		case err != nil:
			// err is not wrapped: it quotes an offset into the secret.
			return nil, fmt.Errorf("provider: standardwebhooks: secret %d is not base64 after the %s prefix",
				i, standardWebhooksSecretPrefix)
		case len(key) == 0:
			return nil, fmt.Errorf("provider: standardwebhooks: secret %d is empty", i)
		}
		keys[i] = key
	}
	tolerance, err := toleranceOrDefault("standardwebhooks", cfg.Tolerance)
	if err != nil {
		return nil, err
	}
	retryWindow := cfg.RetryWindow
	switch {
	case retryWindow < 0:
		return nil, fmt.Errorf("provider: standardwebhooks: retry window %s is negative", retryWindow)
	case retryWindow == 0:
		retryWindow = standardWebhooksRetryWindow
	}
	return &StandardWebhooks{keys: keys, tolerance: tolerance, retryWindow: retryWindow, now: nowOrDefault(cfg.NowFunc)}, nil
}

// Name returns "standardwebhooks", also when New built the verifier as svix: receipts
// of the scheme are keyed alike whichever name the config uses.
func (*StandardWebhooks) Name() string { return "standardwebhooks" }

// RetryWindow returns the configured retry window, 72 hours by default.
func (s *StandardWebhooks) RetryWindow() time.Duration { return s.retryWindow }

// Verify accepts the delivery only if some v1 signature of the signature header is
// the standard base64 HMAC-SHA256, under one of the configured keys, of the id
// header, a dot, the timestamp as a decimal number, a dot and body exactly as
// received, and the timestamp is within the tolerance of now. Signatures of other
// versions (v1a) are ignored.
//
// The event's id is the id header; its type is the body's JSON "type".
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (s *StandardWebhooks) Verify(h http.Header, body []byte) (Verified, error) {
	names := svixNames
	if len(h.Values(standardWebhooksNames.id)) > 0 || len(h.Values(standardWebhooksNames.timestamp)) > 0 ||
		len(h.Values(standardWebhooksNames.signature)) > 0 {
		names = standardWebhooksNames
	}
	var id, ts, sig string
	for _, hv := range []struct {
		name  string
		value *string
	}{{names.id, &id}, {names.timestamp, &ts}, {names.signature, &sig}} {
		value, err := headerValue(h, "standardwebhooks", hv.name, ErrMalformedSignature)
		if err != nil {
			return Verified{}, err
		}
		if value == "" {
			return Verified{}, fmt.Errorf("standardwebhooks: no %s header: %w", hv.name, ErrMissingSignature)
		}
		*hv.value = value
	}

	signedAt, err := parseTimestampHeader("standardwebhooks", names.timestamp, ts)
	if err != nil {
		return Verified{}, err
	}
	sigs, v1Count, err := parseStandardWebhooksSignatures(names.signature, sig)
	if err != nil {
		return Verified{}, err
	}
	if v1Count == 0 {
		return Verified{}, fmt.Errorf("standardwebhooks: no v1 signature: %w", ErrNoValidSignature)
	}

	// The libraries sign the timestamp as a decimal number, so a header with leading
	// zeros is checked against the signature of the number it denotes.
	message := [][]byte{[]byte(id), []byte("."), strconv.AppendInt(nil, signedAt.Unix(), 10), []byte("."), body}
	index := matchMAC(s.keys, sha256.New, message, base64Std, sigs)
	if index < 0 {
		return Verified{}, fmt.Errorf("standardwebhooks: none of %d v1 signatures matches any of %d secrets: %w",
			v1Count, len(s.keys), ErrNoValidSignature)
	}
	// After the MAC, so that a tolerance error always means a genuine signature.
	if err := checkSkew("standardwebhooks", s.now(), signedAt, s.tolerance); err != nil {
		return Verified{}, err
	}

	fields, err := eventObject("standardwebhooks", body)
	if err != nil {
		return Verified{}, err
	}
	typ, err := eventString("standardwebhooks", fields, "type", false)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}, nil
}

// parseStandardWebhooksSignatures parses "v1,<base64> v1,<base64> ...": signatures
// separated by spaces, each a version, a comma and the signature. It refuses an
// element with no comma and more than standardWebhooksMaxSignatures v1 values. It
// returns the v1 values that have the length of a base64 HMAC-SHA256 (others cannot
// match, so dropping them changes no outcome) and the count of all v1 values.
func parseStandardWebhooksSignatures(name, value string) (sigs [][]byte, v1Count int, err error) {
	want := base64.StdEncoding.EncodedLen(sha256.Size)
	element := 0
	for versioned := range strings.SplitSeq(value, " ") {
		element++
		if versioned == "" {
			continue
		}
		version, sig, ok := strings.Cut(versioned, ",")
		if !ok {
			return nil, 0, fmt.Errorf("standardwebhooks: %s element %d is not version,signature: %w",
				name, element, ErrMalformedSignature)
		}
		if version != "v1" {
			continue
		}
		v1Count++
		if v1Count > standardWebhooksMaxSignatures {
			return nil, 0, fmt.Errorf("standardwebhooks: %s has more than %d v1 signatures: %w",
				name, standardWebhooksMaxSignatures, ErrMalformedSignature)
		}
		if len(sig) == want {
			sigs = append(sigs, []byte(sig))
		}
	}
	return sigs, v1Count, nil
}
