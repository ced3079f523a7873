package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// stripeSignatureHeader is the header Stripe signs deliveries with.
	stripeSignatureHeader = "Stripe-Signature"

	// stripeMaxHeaderLen bounds the header we are willing to parse. A real header is a
	// timestamp and a couple of 64-digit signatures; anything near this size is an
	// attempt to make us do work.
	stripeMaxHeaderLen = 8 << 10

	// stripeMaxSignatures bounds the v1 signatures we compare, per secret. Stripe sends
	// one per active secret, so a handful at most.
	stripeMaxSignatures = 32

	// stripeRetryWindow is how long Stripe retries an unacknowledged live-mode delivery.
	stripeRetryWindow = 72 * time.Hour
)

// StripeConfig configures a Stripe verifier.
type StripeConfig struct {
	// Secrets are the endpoint's signing secrets (whsec_...). During a rotation there
	// are several, and a signature by any of them is accepted. At least one is
	// required, and none may be empty or have surrounding whitespace.
	Secrets []string

	// Tolerance is how far the signed timestamp may be from now, in either direction.
	// Zero means DefaultTolerance. Negative is an error: the check can be widened but
	// never disabled, because it is the only thing that stops a captured delivery from
	// being replayed.
	Tolerance time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// Stripe verifies Stripe's v1 webhook signatures. It is safe for concurrent use.
//
// It is written against Stripe's documented scheme rather than stripe-go so that the
// receiver does not depend on an SDK whose event decoding is tied to one API version.
type Stripe struct {
	secrets   [][]byte
	tolerance time.Duration
	now       func() time.Time
}

var _ Verifier = (*Stripe)(nil)

// NewStripe returns a Stripe verifier, or an error if cfg has no secrets, an empty,
// blank or whitespace-padded secret, or a negative tolerance. Errors identify a secret
// by its position, never by its value.
func NewStripe(cfg StripeConfig) (*Stripe, error) {
	secrets, err := secretBytes("stripe", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	tolerance, err := toleranceOrDefault("stripe", cfg.Tolerance)
	if err != nil {
		return nil, err
	}
	return &Stripe{secrets: secrets, tolerance: tolerance, now: nowOrDefault(cfg.NowFunc)}, nil
}

// Name returns "stripe".
func (*Stripe) Name() string { return "stripe" }

// RetryWindow returns 72 hours: Stripe retries live-mode deliveries for up to three
// days.
func (*Stripe) RetryWindow() time.Duration { return stripeRetryWindow }

// Verify checks the Stripe-Signature header against body and returns the event's id
// and type. It accepts the delivery only if some v1 signature in the header is the
// HMAC-SHA256, under one of the configured secrets, of the header's timestamp, a dot
// and body exactly as received, and the timestamp is within the tolerance of now.
// Only then is body decoded, and it must be a JSON object with a non-empty string id
// and type.
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (s *Stripe) Verify(h http.Header, body []byte) (Verified, error) {
	values := h.Values(stripeSignatureHeader)
	switch {
	case len(values) == 0 || len(values) == 1 && values[0] == "":
		return Verified{}, fmt.Errorf("stripe: no %s header: %w", stripeSignatureHeader, ErrMissingSignature)
	case len(values) > 1:
		// Stripe sends one. Picking one of several would let whoever added the
		// others choose which is checked.
		return Verified{}, fmt.Errorf("stripe: %d %s headers, want 1: %w", len(values), stripeSignatureHeader, ErrMalformedSignature)
	}

	sh, err := parseStripeHeader(values[0])
	if err != nil {
		return Verified{}, err
	}
	if sh.v1Count == 0 {
		return Verified{}, fmt.Errorf("stripe: no v1 signature: %w", ErrNoValidSignature)
	}

	// The MAC is checked before the timestamp so that a tolerance error always means a
	// genuine Stripe signature (a replay or a skewed clock), never a forgery. The order
	// is not what makes the timestamp trustworthy: it is inside the MAC either way.
	index := s.match(sh, body)
	if index < 0 {
		return Verified{}, fmt.Errorf("stripe: none of %d v1 signatures matches any of %d secrets: %w",
			sh.v1Count, len(s.secrets), ErrNoValidSignature)
	}

	signedAt := time.Unix(sh.timestamp, 0).UTC()
	if err := checkSkew("stripe", s.now(), signedAt, s.tolerance); err != nil {
		return Verified{}, err
	}

	id, typ, err := parseStripeEvent(body)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}, nil
}

// match returns the index of the first secret whose signature over sh.timestamp and
// body is among sh's v1 signatures, or -1.
func (s *Stripe) match(sh stripeHeader, body []byte) int {
	// Stripe signs the decimal timestamp, which parseStripeHeader guarantees is what
	// the header carried, up to leading zeros.
	prefix := strconv.AppendInt(make([]byte, 0, 21), sh.timestamp, 10)
	prefix = append(prefix, '.')

	var sum [sha256.Size]byte
	for i, secret := range s.secrets {
		mac := hmac.New(sha256.New, secret)
		mac.Write(prefix)
		mac.Write(body)
		mac.Sum(sum[:0])
		for _, sig := range sh.signatures {
			if hmac.Equal(sum[:], sig[:]) {
				return i
			}
		}
	}
	return -1
}

// stripeHeader is a parsed Stripe-Signature header.
type stripeHeader struct {
	timestamp int64
	// signatures are the v1 values that are well-formed HMAC-SHA256 digests.
	signatures [][sha256.Size]byte
	// v1Count counts every v1 value, including those dropped from signatures.
	v1Count int
}

// parseStripeHeader parses "t=<unix>,v1=<hex>[,v1=<hex>...]". It refuses a header that
// is too long, has an element that is not a single key=value pair, has no t or more
// than one, a t that is not a decimal number, or too many v1 values. Other schemes
// (v0, the test-mode scheme) are ignored, and so is a v1 value that is not 64 hex
// digits: it cannot equal any HMAC-SHA256, so dropping it changes no outcome.
func parseStripeHeader(value string) (stripeHeader, error) {
	var sh stripeHeader
	if len(value) > stripeMaxHeaderLen {
		return sh, fmt.Errorf("stripe: %s header is %d bytes, limit %d: %w",
			stripeSignatureHeader, len(value), stripeMaxHeaderLen, ErrMalformedSignature)
	}

	haveTimestamp := false
	element := 0
	for pair := range strings.SplitSeq(value, ",") {
		element++
		// Exactly one '=', as stripe-go requires, so that no header we accept is one
		// Stripe's own library would refuse.
		key, val, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(val, "=") {
			return sh, fmt.Errorf("stripe: %s element %d is not a key=value pair: %w",
				stripeSignatureHeader, element, ErrMalformedSignature)
		}

		switch key {
		case "t":
			if haveTimestamp {
				return sh, fmt.Errorf("stripe: %s has more than one t: %w", stripeSignatureHeader, ErrMalformedSignature)
			}
			haveTimestamp = true
			ts, err := parseUnixDigits(val)
			if err != nil {
				return sh, fmt.Errorf("stripe: %s t is not a unix timestamp: %w", stripeSignatureHeader, ErrMalformedSignature)
			}
			sh.timestamp = ts

		case "v1":
			sh.v1Count++
			if sh.v1Count > stripeMaxSignatures {
				return sh, fmt.Errorf("stripe: %s has more than %d v1 signatures: %w",
					stripeSignatureHeader, stripeMaxSignatures, ErrMalformedSignature)
			}
			var sig [sha256.Size]byte
			if len(val) != hex.EncodedLen(len(sig)) {
				continue
			}
			if _, err := hex.Decode(sig[:], []byte(val)); err != nil {
				continue
			}
			sh.signatures = append(sh.signatures, sig)
		}
	}

	if !haveTimestamp {
		return sh, fmt.Errorf("stripe: %s has no t: %w", stripeSignatureHeader, ErrMalformedSignature)
	}
	return sh, nil
}

// parseStripeEvent extracts the id and type of a verified event body.
func parseStripeEvent(body []byte) (id, typ string, err error) {
	fields, err := eventObject("stripe", body)
	if err != nil {
		return "", "", err
	}
	if id, err = eventString("stripe", fields, "id", false); err != nil {
		return "", "", err
	}
	if typ, err = eventString("stripe", fields, "type", false); err != nil {
		return "", "", err
	}
	return id, typ, nil
}
