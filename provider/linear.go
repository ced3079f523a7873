package provider

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

const (
	// linearSignatureHeader carries the hex HMAC-SHA256 of the body.
	linearSignatureHeader = "Linear-Signature"
	// linearDeliveryHeader is the delivery's UUID.
	linearDeliveryHeader = "Linear-Delivery"
	// linearTimestampField is the body's signing time, in Unix milliseconds.
	linearTimestampField = "webhookTimestamp"

	// linearRetryWindow covers Linear's retries with margin: three retries, 1
	// minute, 1 hour and 6 hours after a failed attempt.
	linearRetryWindow = 24 * time.Hour
)

// LinearConfig configures a Linear verifier.
type LinearConfig struct {
	// Secrets are the webhook's signing secrets. During a rotation there are
	// several, and a signature by any of them is accepted. At least one is
	// required, and none may be empty or have surrounding whitespace.
	Secrets []string

	// Tolerance is how far the body's webhookTimestamp may be from now, in either
	// direction. Zero means DefaultTolerance; Linear suggests one minute. Negative is
	// an error.
	Tolerance time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// Linear verifies Linear's webhook signatures (Linear-Signature). It is safe for
// concurrent use.
//
// Linear signs the body only, and its timestamp is inside the body
// (webhookTimestamp): it is checked after the signature, like a header's.
type Linear struct {
	secrets   [][]byte
	tolerance time.Duration
	now       func() time.Time
}

var _ Verifier = (*Linear)(nil)

// NewLinear returns a Linear verifier, or an error if cfg has no secrets, an empty,
// blank or whitespace-padded secret, or a negative tolerance.
func NewLinear(cfg LinearConfig) (*Linear, error) {
	secrets, err := secretBytes("linear", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	tolerance, err := toleranceOrDefault("linear", cfg.Tolerance)
	if err != nil {
		return nil, err
	}
	return &Linear{secrets: secrets, tolerance: tolerance, now: nowOrDefault(cfg.NowFunc)}, nil
}

// Name returns "linear".
func (*Linear) Name() string { return "linear" }

// RetryWindow returns 24 hours: Linear's last retry comes about 7 hours after the
// first attempt.
func (*Linear) RetryWindow() time.Duration { return linearRetryWindow }

// Verify accepts the delivery only if Linear-Signature is the hex HMAC-SHA256, under
// one of the configured secrets, of body exactly as received, and the body's
// webhookTimestamp (Unix milliseconds) is within the tolerance of now.
//
// The id is Linear-Delivery, the delivery's UUID. The type is the body's "type"
// (the entity: "Issue", "Comment", ...) and its "action" after a dot:
// "Issue.create", "Comment.remove"; the type alone when there is no action.
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (l *Linear) Verify(h http.Header, body []byte) (Verified, error) {
	value, err := headerValue(h, "linear", linearSignatureHeader, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if value == "" {
		return Verified{}, fmt.Errorf("linear: no %s header: %w", linearSignatureHeader, ErrMissingSignature)
	}
	sig, err := decodeHexDigest("linear", linearSignatureHeader, value, sha256.Size)
	if err != nil {
		return Verified{}, err
	}
	index := matchMAC(l.secrets, sha256.New, [][]byte{body}, nil, [][]byte{sig})
	if index < 0 {
		return Verified{}, fmt.Errorf("linear: signature matches none of %d secrets: %w", len(l.secrets), ErrNoValidSignature)
	}

	fields, err := eventObject("linear", body)
	if err != nil {
		return Verified{}, err
	}
	signedAt, err := linearTimestamp(fields)
	if err != nil {
		return Verified{}, err
	}
	if err := checkSkew("linear", l.now(), signedAt, l.tolerance); err != nil {
		return Verified{}, err
	}

	id, err := headerValue(h, "linear", linearDeliveryHeader, ErrUnparsableEvent)
	if err != nil {
		return Verified{}, err
	}
	if id == "" {
		return Verified{}, fmt.Errorf("linear: no %s header: %w", linearDeliveryHeader, ErrUnparsableEvent)
	}
	typ, err := eventString("linear", fields, "type", false)
	if err != nil {
		return Verified{}, err
	}
	if _, ok := fields["action"]; ok {
		action, err := eventString("linear", fields, "action", false)
		if err != nil {
			return Verified{}, err
		}
		typ += "." + action
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}, nil
}

// linearTimestamp reads the signed webhookTimestamp, Unix milliseconds. Its absence
// or another form is a malformed signature rather than an unusable event: without
// it the delivery's age is unknown.
func linearTimestamp(fields map[string]json.RawMessage) (time.Time, error) {
	raw, ok := fields[linearTimestampField]
	if !ok {
		return time.Time{}, fmt.Errorf("linear: body has no %s: %w", linearTimestampField, ErrMalformedSignature)
	}
	if len(raw) > maxTimestampLen {
		return time.Time{}, fmt.Errorf("linear: %s is longer than any Unix time: %w", linearTimestampField, ErrMalformedSignature)
	}
	ms, err := parseUnixDigits(string(raw))
	if err != nil {
		return time.Time{}, fmt.Errorf("linear: %s is not Unix milliseconds: %w", linearTimestampField, ErrMalformedSignature)
	}
	return time.UnixMilli(ms).UTC(), nil
}
