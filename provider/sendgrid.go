package provider

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

const (
	// sendgridSignatureHeader carries the base64 DER ECDSA signature of the
	// timestamp followed by the body.
	sendgridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	// sendgridTimestampHeader is the signing time in Unix seconds.
	sendgridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"

	// sendgridRetryWindow is how long SendGrid retries a POST of events that was not
	// answered 2xx: 24 hours, after which it drops the events.
	sendgridRetryWindow = 24 * time.Hour

	// maxECDSASignatureLen bounds the base64 of a DER P-256 signature (at most 72
	// bytes, 96 characters), with room to spare.
	maxECDSASignatureLen = 128
)

// SendGridConfig configures a SendGrid Event Webhook verifier.
type SendGridConfig struct {
	// PublicKeys are the Event Webhook's verification keys, as SendGrid shows them:
	// standard base64 of a DER public key, ECDSA on P-256. Each Event Webhook has its
	// own; during a replacement there are several, and a signature by any is
	// accepted. At least one is required. There is no secret: SendGrid signs with
	// its private key.
	PublicKeys []string

	// Tolerance is how far X-Twilio-Email-Event-Webhook-Timestamp may be from now, in
	// either direction. Zero means DefaultTolerance. Negative is an error.
	Tolerance time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// SendGrid verifies the ECDSA signatures of SendGrid's signed Event Webhook. It is
// safe for concurrent use.
//
// SendGrid posts a JSON array of events and may put several in one POST: it is a
// BatchVerifier, and each event of the array becomes its own receipt, keyed by its
// sg_event_id, all committed together (see hookinbox's Inbox.ReceiveBatch).
type SendGrid struct {
	keys      []*ecdsa.PublicKey
	tolerance time.Duration
	now       func() time.Time
}

var (
	_ Verifier      = (*SendGrid)(nil)
	_ BatchVerifier = (*SendGrid)(nil)
)

// NewSendGrid returns a SendGrid verifier, or an error if cfg has no public key, a
// key that is not base64 DER of a P-256 key, or a negative tolerance.
func NewSendGrid(cfg SendGridConfig) (*SendGrid, error) {
	keys, err := p256Keys("sendgrid", cfg.PublicKeys)
	if err != nil {
		return nil, err
	}
	tolerance, err := toleranceOrDefault("sendgrid", cfg.Tolerance)
	if err != nil {
		return nil, err
	}
	return &SendGrid{keys: keys, tolerance: tolerance, now: nowOrDefault(cfg.NowFunc)}, nil
}

// Name returns "sendgrid".
func (*SendGrid) Name() string { return "sendgrid" }

// RetryWindow returns 24 hours, how long SendGrid retries a POST of events.
func (*SendGrid) RetryWindow() time.Duration { return sendgridRetryWindow }

// Verify accepts the POST only if X-Twilio-Email-Event-Webhook-Signature is the
// standard base64 of an ASN.1 DER ECDSA signature, by one of the configured public
// keys, of the SHA-256 of X-Twilio-Email-Event-Webhook-Timestamp exactly as sent
// followed by body exactly as received, and the timestamp is within the tolerance of
// now. SecretIndex is the position of the public key that verified.
//
// The body must be a JSON array of exactly one event: the id is its "sg_event_id",
// the type its "event" (e.g. "delivered", "bounce"). VerifyBatch takes any number.
//
// Errors wrap this package's sentinels and never contain the body.
func (s *SendGrid) Verify(h http.Header, body []byte) (Verified, error) {
	index, signedAt, err := s.verifySignature(h, body)
	if err != nil {
		return Verified{}, err
	}
	id, typ, err := sendgridEvent(body)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}, nil
}

// VerifyBatch checks the POST's signature as Verify does, once, and returns each
// event of the array with its own sg_event_id, event type and JSON as Body. One item
// without either refuses the whole POST.
func (s *SendGrid) VerifyBatch(h http.Header, body []byte) ([]Verified, error) {
	index, signedAt, err := s.verifySignature(h, body)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, fmt.Errorf("sendgrid: body is not a JSON array of events: %w", ErrUnparsableEvent)
	}
	out := make([]Verified, len(items))
	for k, item := range items {
		fields, err := eventObject("sendgrid", item)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", k, err)
		}
		id, err := eventString("sendgrid", fields, "sg_event_id", false)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", k, err)
		}
		typ, err := eventString("sendgrid", fields, "event", false)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", k, err)
		}
		out[k] = Verified{ID: id, Type: typ, Body: item, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}
	}
	return out, nil
}

// verifySignature checks the signature and the timestamp and returns the position of
// the public key that verified and the signing time.
func (s *SendGrid) verifySignature(h http.Header, body []byte) (int, time.Time, error) {
	sig, ts, signedAt, err := signatureAndTimestamp(h, "sendgrid", sendgridSignatureHeader, sendgridTimestampHeader)
	if err != nil {
		return 0, time.Time{}, err
	}
	if len(sig) > maxECDSASignatureLen {
		return 0, time.Time{}, fmt.Errorf("sendgrid: %s is %d characters, longer than any P-256 signature: %w",
			sendgridSignatureHeader, len(sig), ErrNoValidSignature)
	}
	// Strict: only the canonical encoding, as with every base64 signature here.
	der, err := base64.StdEncoding.Strict().DecodeString(sig)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("sendgrid: %s is not standard base64: %w", sendgridSignatureHeader, ErrNoValidSignature)
	}

	digest := sha256.New()
	digest.Write([]byte(ts))
	digest.Write(body)
	sum := digest.Sum(nil)
	index := -1
	for i, key := range s.keys {
		// VerifyASN1 refuses trailing data and non-minimal integers.
		if ecdsa.VerifyASN1(key, sum, der) {
			index = i
			break
		}
	}
	if index < 0 {
		return 0, time.Time{}, fmt.Errorf("sendgrid: signature matches none of %d public keys: %w", len(s.keys), ErrNoValidSignature)
	}
	if err := checkSkew("sendgrid", s.now(), signedAt, s.tolerance); err != nil {
		return 0, time.Time{}, err
	}
	return index, signedAt, nil
}

// sendgridEvent extracts the id and type of a verified body of one event.
func sendgridEvent(body []byte) (id, typ string, err error) {
	var events []json.RawMessage
	if err := json.Unmarshal(body, &events); err != nil {
		return "", "", fmt.Errorf("sendgrid: body is not a JSON array of events: %w", ErrUnparsableEvent)
	}
	if len(events) != 1 {
		return "", "", fmt.Errorf("sendgrid: body holds %d events; only one event per POST is supported: %w", len(events), ErrUnparsableEvent)
	}
	fields, err := eventObject("sendgrid", events[0])
	if err != nil {
		return "", "", err
	}
	if id, err = eventString("sendgrid", fields, "sg_event_id", false); err != nil {
		return "", "", err
	}
	if typ, err = eventString("sendgrid", fields, "event", false); err != nil {
		return "", "", err
	}
	return id, typ, nil
}
