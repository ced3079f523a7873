package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"
)

const (
	// zoomSignatureHeader carries "v0=" and the hex HMAC-SHA256 of "v0:ts:body".
	zoomSignatureHeader = "X-Zm-Signature"
	// zoomTimestampHeader is the signing time in Unix seconds.
	zoomTimestampHeader = "X-Zm-Request-Timestamp"

	// zoomURLValidation is the event by which Zoom checks an endpoint (when it is
	// added, and every 72 hours), and the Type of the Verified that stands for it.
	zoomURLValidation = "endpoint.url_validation"

	// zoomRetryWindow covers Zoom's retries with margin: three retries, 5, 30 and
	// 90 minutes after a delivery that was not answered 2xx within 3 seconds.
	zoomRetryWindow = 24 * time.Hour
)

// zoomV0 is the v0 scheme Zoom shares with Slack, under Zoom's header names.
var zoomV0 = v0Scheme{scheme: "zoom", signatureHeader: zoomSignatureHeader, timestampHeader: zoomTimestampHeader}

// ZoomConfig configures a Zoom verifier.
type ZoomConfig struct {
	// Secrets are the app's webhook secret tokens. During a rotation there are
	// several, and a signature by any of them is accepted. At least one is
	// required, and none may be empty or have surrounding whitespace.
	Secrets []string

	// Tolerance is how far x-zm-request-timestamp may be from now, in either
	// direction. Zero means DefaultTolerance. Negative is an error.
	Tolerance time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// Zoom verifies Zoom's webhook signatures (x-zm-signature, v0). It is safe for
// concurrent use.
//
// Zoom also implements Challenger: the endpoint.url_validation request verifies like
// any event and is answered with its plainToken and encryptedToken.
type Zoom struct {
	secrets   [][]byte
	tolerance time.Duration
	now       func() time.Time
}

var (
	_ Verifier   = (*Zoom)(nil)
	_ Challenger = (*Zoom)(nil)
)

// NewZoom returns a Zoom verifier, or an error if cfg has no secrets, an empty,
// blank or whitespace-padded secret, or a negative tolerance.
func NewZoom(cfg ZoomConfig) (*Zoom, error) {
	secrets, err := secretBytes("zoom", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	tolerance, err := toleranceOrDefault("zoom", cfg.Tolerance)
	if err != nil {
		return nil, err
	}
	return &Zoom{secrets: secrets, tolerance: tolerance, now: nowOrDefault(cfg.NowFunc)}, nil
}

// Name returns "zoom".
func (*Zoom) Name() string { return "zoom" }

// RetryWindow returns 24 hours: Zoom's last retry comes about two hours after the
// first attempt.
func (*Zoom) RetryWindow() time.Duration { return zoomRetryWindow }

// Verify accepts the request only if x-zm-signature is "v0=" followed by the hex
// HMAC-SHA256, under one of the configured secrets, of "v0:", x-zm-request-timestamp
// exactly as sent, ":" and body exactly as received, and the timestamp is within the
// tolerance of now.
//
// The body must be a JSON object with an "event" (the type, e.g.
// "meeting.started") and its "event_ts" (Unix milliseconds). Zoom sends no event or
// delivery id, and a retry carries the same body (only the header timestamp is new),
// so the id is derived from the body: event, ":", event_ts, ":", and the first 32 hex
// digits of the SHA-256 of the body. A retry is a duplicate; two events of one type
// in the same millisecond differ in their payload. For endpoint.url_validation the
// id is "endpoint.url_validation:" and its plainToken; Challenge gives the answer.
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (z *Zoom) Verify(h http.Header, body []byte) (Verified, error) {
	index, signedAt, err := zoomV0.verify(h, body, z.secrets, z.now(), z.tolerance)
	if err != nil {
		return Verified{}, err
	}

	id, typ, err := zoomEvent(body)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}, nil
}

// Challenge answers a verified endpoint.url_validation with the JSON object
// {"plainToken": ..., "encryptedToken": ...}, encryptedToken the hex HMAC-SHA256 of
// plainToken under the secret that verified the request, and true. Any other event
// gets nil and false. v must come from this verifier's Verify.
func (z *Zoom) Challenge(v Verified) ([]byte, bool) {
	if v.Type != zoomURLValidation || v.SecretIndex < 0 || v.SecretIndex >= len(z.secrets) {
		return nil, false
	}
	fields, err := eventObject("zoom", v.Body)
	if err != nil {
		return nil, false
	}
	plain, err := eventString("zoom", fields, "payload.plainToken", false)
	if err != nil {
		return nil, false
	}
	mac := hmac.New(sha256.New, z.secrets[v.SecretIndex])
	mac.Write([]byte(plain))
	response, err := json.Marshal(struct {
		PlainToken     string `json:"plainToken"`
		EncryptedToken string `json:"encryptedToken"`
	}{plain, hex.EncodeToString(mac.Sum(nil))})
	if err != nil {
		return nil, false
	}
	return response, true
}

// zoomEvent derives the id and type of a verified body.
func zoomEvent(body []byte) (id, typ string, err error) {
	fields, err := eventObject("zoom", body)
	if err != nil {
		return "", "", err
	}
	if typ, err = eventString("zoom", fields, "event", false); err != nil {
		return "", "", err
	}
	if typ == zoomURLValidation {
		plain, err := eventString("zoom", fields, "payload.plainToken", false)
		if err != nil {
			return "", "", err
		}
		return zoomURLValidation + ":" + plain, typ, nil
	}
	ts, err := eventString("zoom", fields, "event_ts", true)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(body)
	return typ + ":" + ts + ":" + hex.EncodeToString(sum[:])[:32], typ, nil
}
