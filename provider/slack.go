package provider

import (
	"encoding/json"
	"net/http"
	"time"
)

const (
	// slackSignatureHeader carries "v0=" and the hex HMAC-SHA256 of "v0:ts:body".
	slackSignatureHeader = "X-Slack-Signature"
	// slackTimestampHeader is the signing time in Unix seconds.
	slackTimestampHeader = "X-Slack-Request-Timestamp"

	// slackURLVerification is the type of the request by which Slack checks a new
	// Events API URL, and of the Verified that stands for it.
	slackURLVerification = "url_verification"

	// slackRetryWindow covers Slack's retries with margin: Slack retries an Events API
	// delivery three times, the last about five minutes after the first attempt.
	slackRetryWindow = time.Hour
)

// slackV0 is Slack's v0 scheme under its header names.
var slackV0 = v0Scheme{scheme: "slack", signatureHeader: slackSignatureHeader, timestampHeader: slackTimestampHeader}

// SlackConfig configures a Slack verifier.
type SlackConfig struct {
	// Secrets are the app's signing secrets. During a rotation there are several, and
	// a signature by any of them is accepted. At least one is required, and none may
	// be empty or have surrounding whitespace.
	Secrets []string

	// Tolerance is how far X-Slack-Request-Timestamp may be from now, in either
	// direction. Zero means DefaultTolerance, which is what Slack recommends.
	// Negative is an error.
	Tolerance time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// Slack verifies Slack's v0 request signatures on Events API deliveries. It is safe
// for concurrent use.
//
// Slack also implements Challenger: the url_verification request by which Slack checks
// a new Request URL verifies like any delivery and is answered with its challenge.
type Slack struct {
	secrets   [][]byte
	tolerance time.Duration
	now       func() time.Time
}

var (
	_ Verifier   = (*Slack)(nil)
	_ Challenger = (*Slack)(nil)
)

// NewSlack returns a Slack verifier, or an error if cfg has no secrets, an empty,
// blank or whitespace-padded secret, or a negative tolerance. Errors identify a secret
// by its position, never by its value.
func NewSlack(cfg SlackConfig) (*Slack, error) {
	secrets, err := secretBytes("slack", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	tolerance, err := toleranceOrDefault("slack", cfg.Tolerance)
	if err != nil {
		return nil, err
	}
	return &Slack{secrets: secrets, tolerance: tolerance, now: nowOrDefault(cfg.NowFunc)}, nil
}

// Name returns "slack".
func (*Slack) Name() string { return "slack" }

// RetryWindow returns one hour: Slack's three retries end minutes after the first
// attempt.
func (*Slack) RetryWindow() time.Duration { return slackRetryWindow }

// Verify accepts the request only if X-Slack-Signature is "v0=" followed by the hex
// HMAC-SHA256, under one of the configured secrets, of "v0:", X-Slack-Request-Timestamp
// exactly as sent, ":" and body exactly as received, and the timestamp is within the
// tolerance of now.
//
// The body must then be an Events API JSON object. For an event_callback the id is
// "event_id" and the type is "event.type" (e.g. "app_mention"). For url_verification
// the type is "url_verification" and, since the request carries no event_id, the id
// is "url_verification:" followed by its challenge; Challenge gives the answer.
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (s *Slack) Verify(h http.Header, body []byte) (Verified, error) {
	index, signedAt, err := slackV0.verify(h, body, s.secrets, s.now(), s.tolerance)
	if err != nil {
		return Verified{}, err
	}

	id, typ, err := slackEvent(body)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}, nil
}

// Challenge returns the answer to a verified url_verification request, the JSON object
// {"challenge": "..."} to send with status 200 and Content-Type application/json, and
// true. For any other event it returns nil and false. v must come from Verify.
func (*Slack) Challenge(v Verified) ([]byte, bool) {
	if v.Type != slackURLVerification {
		return nil, false
	}
	fields, err := eventObject("slack", v.Body)
	if err != nil {
		return nil, false
	}
	challenge, err := slackChallenge(fields)
	if err != nil {
		return nil, false
	}
	response, err := json.Marshal(struct {
		Challenge string `json:"challenge"`
	}{challenge})
	if err != nil {
		return nil, false
	}
	return response, true
}

// slackEvent extracts the id and type of a verified Events API body.
func slackEvent(body []byte) (id, typ string, err error) {
	fields, err := eventObject("slack", body)
	if err != nil {
		return "", "", err
	}
	if envelope, err := eventString("slack", fields, "type", false); err == nil && envelope == slackURLVerification {
		challenge, err := slackChallenge(fields)
		if err != nil {
			return "", "", err
		}
		return slackURLVerification + ":" + challenge, slackURLVerification, nil
	}
	if id, err = eventString("slack", fields, "event_id", false); err != nil {
		return "", "", err
	}
	if typ, err = eventString("slack", fields, "event.type", false); err != nil {
		return "", "", err
	}
	return id, typ, nil
}

// slackChallenge returns the challenge of a url_verification body.
func slackChallenge(fields map[string]json.RawMessage) (string, error) {
	return eventString("slack", fields, "challenge", false)
}
