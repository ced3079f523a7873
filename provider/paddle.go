package provider

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const (
	// paddleSignatureHeader carries "ts=<unix>;h1=<hex HMAC-SHA256 of ts:body>".
	paddleSignatureHeader = "Paddle-Signature"

	// paddleRetryWindow is how long Paddle retries a live notification that was not
	// answered 2xx: up to 60 times over 3 days (sandbox: a few times in minutes).
	paddleRetryWindow = 72 * time.Hour

	// maxPaddleSignatures bounds the h1 entries of one header.
	maxPaddleSignatures = 8
)

// PaddleConfig configures a Paddle Billing verifier.
type PaddleConfig struct {
	// Secrets are the notification destination's secret keys (pdl_ntfset_...).
	// During a rotation there are several, and a signature by any of them is
	// accepted. At least one is required, and none may be empty or have surrounding
	// whitespace.
	Secrets []string

	// Tolerance is how far the header's ts may be from now, in either direction.
	// Zero means DefaultTolerance; Paddle suggests as little as 5 seconds, which
	// leaves no room for clock skew. Negative is an error.
	Tolerance time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// Paddle verifies Paddle Billing's webhook signatures (Paddle-Signature). It is safe
// for concurrent use.
type Paddle struct {
	secrets   [][]byte
	tolerance time.Duration
	now       func() time.Time
}

var _ Verifier = (*Paddle)(nil)

// NewPaddle returns a Paddle verifier, or an error if cfg has no secrets, an empty,
// blank or whitespace-padded secret, or a negative tolerance.
func NewPaddle(cfg PaddleConfig) (*Paddle, error) {
	secrets, err := secretBytes("paddle", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	tolerance, err := toleranceOrDefault("paddle", cfg.Tolerance)
	if err != nil {
		return nil, err
	}
	return &Paddle{secrets: secrets, tolerance: tolerance, now: nowOrDefault(cfg.NowFunc)}, nil
}

// Name returns "paddle".
func (*Paddle) Name() string { return "paddle" }

// RetryWindow returns 72 hours: Paddle retries live notifications over 3 days.
func (*Paddle) RetryWindow() time.Duration { return paddleRetryWindow }

// Verify accepts the notification only if Paddle-Signature has one ts and at least
// one h1, and an h1 is the hex HMAC-SHA256, under one of the configured secrets, of
// ts exactly as sent, ":" and body exactly as received, and ts is within the
// tolerance of now. Entries other than ts and h1 are ignored (a future scheme's);
// several h1 are accepted, as Stripe's v1, for a rotation on Paddle's side.
//
// The body must be a JSON object: the id is its "event_id", which a replay from
// Paddle keeps (each replay has a new notification_id), the type its "event_type"
// (e.g. "transaction.completed").
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (p *Paddle) Verify(h http.Header, body []byte) (Verified, error) {
	value, err := headerValue(h, "paddle", paddleSignatureHeader, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if value == "" {
		return Verified{}, fmt.Errorf("paddle: no %s header: %w", paddleSignatureHeader, ErrMissingSignature)
	}
	var ts string
	var sigs [][]byte
	for _, entry := range strings.Split(value, ";") {
		key, v, ok := strings.Cut(entry, "=")
		if !ok {
			return Verified{}, fmt.Errorf("paddle: %s entry is not key=value: %w", paddleSignatureHeader, ErrMalformedSignature)
		}
		switch key {
		case "ts":
			if ts != "" {
				return Verified{}, fmt.Errorf("paddle: %s has more than one ts: %w", paddleSignatureHeader, ErrMalformedSignature)
			}
			if v == "" {
				return Verified{}, fmt.Errorf("paddle: %s has an empty ts: %w", paddleSignatureHeader, ErrMalformedSignature)
			}
			ts = v
		case "h1":
			if len(sigs) == maxPaddleSignatures {
				return Verified{}, fmt.Errorf("paddle: %s has more than %d h1 signatures: %w", paddleSignatureHeader, maxPaddleSignatures, ErrMalformedSignature)
			}
			mac, err := decodeHexDigest("paddle", paddleSignatureHeader, v, sha256.Size)
			if err != nil {
				return Verified{}, err
			}
			sigs = append(sigs, mac)
		}
	}
	if ts == "" {
		return Verified{}, fmt.Errorf("paddle: %s has no ts: %w", paddleSignatureHeader, ErrMalformedSignature)
	}
	if len(sigs) == 0 {
		return Verified{}, fmt.Errorf("paddle: %s has no h1 signature: %w", paddleSignatureHeader, ErrNoValidSignature)
	}
	signedAt, err := parseTimestampHeader("paddle", paddleSignatureHeader+" ts", ts)
	if err != nil {
		return Verified{}, err
	}

	index := matchMAC(p.secrets, sha256.New, [][]byte{[]byte(ts), []byte(":"), body}, nil, sigs)
	if index < 0 {
		return Verified{}, fmt.Errorf("paddle: no signature matches any of %d secrets: %w", len(p.secrets), ErrNoValidSignature)
	}
	if err := checkSkew("paddle", p.now(), signedAt, p.tolerance); err != nil {
		return Verified{}, err
	}

	fields, err := eventObject("paddle", body)
	if err != nil {
		return Verified{}, err
	}
	id, err := eventString("paddle", fields, "event_id", false)
	if err != nil {
		return Verified{}, err
	}
	typ, err := eventString("paddle", fields, "event_type", false)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}, nil
}
