package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

const (
	// twilioSignatureHeader carries the base64 HMAC-SHA1 of the URL and the sorted
	// form parameters.
	twilioSignatureHeader = "X-Twilio-Signature"
	// twilioBodyHashParam is the query parameter by which Twilio signs a JSON body:
	// the URL, with the body's hex SHA-256 in it, is signed without parameters.
	twilioBodyHashParam = "bodySHA256"

	// twilioRetryWindow: Twilio retries a webhook only when its URL asks for it
	// (connection overrides, #rc= up to 5 retries), each within the request's
	// timeout of at most 15 seconds: minutes in all. An hour is the margin.
	twilioRetryWindow = time.Hour
)

// twilioResources map the Sid parameter that names what a callback is about to the
// noun of its Type and the parameter that holds its status, most specific first: a
// recording's status callback also carries the CallSid of its call.
var twilioResources = []struct{ sid, noun, status string }{
	{"RecordingSid", "recording", "RecordingStatus"},
	{"TranscriptionSid", "transcription", "TranscriptionStatus"},
	{"MessageSid", "message", "MessageStatus"},
	{"SmsSid", "message", "SmsStatus"},
	{"CallSid", "call", "CallStatus"},
}

// TwilioConfig configures a Twilio verifier.
type TwilioConfig struct {
	// Secrets are the account's auth tokens: the primary, and the secondary during
	// a rotation. A signature by any of them is accepted. At least one is required,
	// and none may be empty or have surrounding whitespace.
	Secrets []string

	// PublicURL is the webhook's URL as configured in Twilio, without its query
	// (param public_url), e.g. https://hooks.example.com/webhooks/twilio. Twilio
	// signs the URL it called; behind a proxy or load balancer that changes the
	// scheme, host or path, only this URL is the one Twilio signed. Empty means the
	// URL of the request as this server received it.
	PublicURL string
}

// Twilio verifies Twilio's request signatures (X-Twilio-Signature) on webhooks and
// status callbacks. It is safe for concurrent use. It is a RequestVerifier: the
// signature covers the URL Twilio called.
//
// Twilio signs no timestamp, so a captured request can be replayed at any time, and
// sends no event id. The id is derived from what is signed (see VerifyRequest), so
// a replay of a recorded request is a duplicate for as long as receipts are kept.
type Twilio struct {
	secrets   [][]byte
	publicURL string
}

var _ RequestVerifier = (*Twilio)(nil)

// NewTwilio returns a Twilio verifier, or an error if cfg has no secrets, an empty,
// blank or whitespace-padded secret, or a PublicURL that is not an absolute http(s)
// URL without query.
func NewTwilio(cfg TwilioConfig) (*Twilio, error) {
	secrets, err := secretBytes("twilio", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	if err := checkPublicURL("twilio", cfg.PublicURL); err != nil {
		return nil, err
	}
	return &Twilio{secrets: secrets, publicURL: cfg.PublicURL}, nil
}

// Name returns "twilio".
func (*Twilio) Name() string { return "twilio" }

// MediaTypes returns the form encoding of Twilio's callbacks (their JSON bodies,
// signed with bodySHA256, are JSON already).
func (*Twilio) MediaTypes() []string { return []string{"application/x-www-form-urlencoded"} }

// RetryWindow returns one hour: Twilio retries only on request, within minutes.
func (*Twilio) RetryWindow() time.Duration { return twilioRetryWindow }

// Verify is VerifyRequest for a request to the configured PublicURL with no query.
// Without a PublicURL it refuses every request: the signed URL is unknown.
func (t *Twilio) Verify(h http.Header, body []byte) (Verified, error) {
	return t.verify(h, t.publicURL, body)
}

// VerifyRequest accepts the request only if X-Twilio-Signature is the standard
// base64 HMAC-SHA1, under one of the configured auth tokens, of the signed URL (see
// RequestVerifier) followed by every form parameter of body, sorted by name, each
// as its name and value with nothing between. As twilio-go does, the URL is also
// tried with the scheme's default port added when it has none, or without its port
// when it has one: Twilio signs ports inconsistently. When the URL's query has bodySHA256, the body is JSON: the URL
// alone is signed, and bodySHA256 must be the hex SHA-256 of body.
//
// A form body is refused when a parameter is repeated: Twilio's libraries disagree
// on how it is signed. The stored payload (Verified.Body) of a form body is the JSON
// object of its parameters, since receipts hold JSON; a JSON body is kept as is.
//
// Twilio sends no event id, none in status callbacks in particular. The id is
// derived from what is signed: the Sid the request is about (RecordingSid,
// TranscriptionSid, MessageSid, SmsSid or CallSid), ":", and the first 32 hex digits
// of the SHA-256 of the payload. Every retry of a request carries the same
// parameters, so it is a duplicate; each status change of a message or call is a
// request of its own. The type is the resource and its status, e.g.
// "message.delivered", "call.completed", "recording.completed"; "request" when the
// request names none.
func (t *Twilio) VerifyRequest(r *http.Request, body []byte) (Verified, error) {
	return t.verify(r.Header, signedURL(r, t.publicURL), body)
}

func (t *Twilio) verify(h http.Header, rawURL string, body []byte) (Verified, error) {
	sig, err := headerValue(h, "twilio", twilioSignatureHeader, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if sig == "" {
		return Verified{}, fmt.Errorf("twilio: no %s header: %w", twilioSignatureHeader, ErrMissingSignature)
	}
	if want := base64.StdEncoding.EncodedLen(sha1.Size); len(sig) != want {
		return Verified{}, fmt.Errorf("twilio: %s is %d characters, want %d: %w", twilioSignatureHeader, len(sig), want, ErrNoValidSignature)
	}
	if rawURL == "" {
		return Verified{}, fmt.Errorf("twilio: the request's URL is signed and no public_url is configured: %w", ErrNoValidSignature)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return Verified{}, fmt.Errorf("twilio: the request's URL does not parse: %w", ErrNoValidSignature)
	}

	bodyHash := u.Query()[twilioBodyHashParam]
	var params string
	var payload []byte
	if len(bodyHash) == 0 {
		if params, payload, err = twilioForm(body); err != nil {
			return Verified{}, err
		}
	}

	candidates := [][]byte{[]byte(sig)}
	index := -1
	for _, variant := range twilioURLVariants(u, rawURL) {
		if index = matchMAC(t.secrets, sha1.New, [][]byte{[]byte(variant), []byte(params)}, base64Std, candidates); index >= 0 {
			break
		}
	}
	if index < 0 {
		return Verified{}, fmt.Errorf("twilio: signature matches none of %d auth tokens: %w", len(t.secrets), ErrNoValidSignature)
	}

	if len(bodyHash) > 0 {
		// The signature covers the URL; the URL covers the body through its hash.
		sum := sha256.Sum256(body)
		if len(bodyHash) != 1 || subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(bodyHash[0])) != 1 {
			return Verified{}, fmt.Errorf("twilio: body does not match the signed %s: %w", twilioBodyHashParam, ErrNoValidSignature)
		}
		if !json.Valid(body) {
			return Verified{}, fmt.Errorf("twilio: body signed by %s is not JSON: %w", twilioBodyHashParam, ErrUnparsableEvent)
		}
		payload = body
	}

	id, typ := twilioEvent(payload)
	return Verified{ID: id, Type: typ, Body: payload, SecretIndex: index, BodyIsJSON: true}, nil
}

// twilioForm parses a form body and returns the signed text of its parameters
// (sorted names, each name followed by its value) and their JSON object.
func twilioForm(body []byte) (signed string, payload []byte, err error) {
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return "", nil, fmt.Errorf("twilio: body is not form-encoded: %w", ErrUnparsableEvent)
	}
	names := make([]string, 0, len(values))
	params := make(map[string]string, len(values))
	for name, vs := range values {
		if len(vs) != 1 {
			return "", nil, fmt.Errorf("twilio: a form parameter is repeated: %w", ErrUnparsableEvent)
		}
		names = append(names, name)
		params[name] = vs[0]
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		b.WriteString(name)
		b.WriteString(params[name])
	}
	// json.Marshal sorts map keys: the same parameters always give the same bytes,
	// which the derived id depends on.
	payload, err = json.Marshal(params)
	if err != nil {
		return "", nil, fmt.Errorf("twilio: form parameters are not valid UTF-8 text: %w", ErrUnparsableEvent)
	}
	return b.String(), payload, nil
}

// twilioURLVariants returns raw and, as Twilio's own validators accept (Twilio signs
// ports inconsistently), raw with the scheme's default port added when it has no
// port, or with its port removed when it has one.
func twilioURLVariants(u *url.URL, raw string) []string {
	other := *u
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		other.Host = u.Host + ":" + port
	} else {
		other.Host = u.Hostname()
	}
	return []string{raw, other.String()}
}

// twilioEvent derives the id and type of a verified payload (a JSON object).
func twilioEvent(payload []byte) (id, typ string) {
	sum := sha256.Sum256(payload)
	digest := hex.EncodeToString(sum[:])
	var fields map[string]any
	_ = json.Unmarshal(payload, &fields)
	for _, r := range twilioResources {
		sid, _ := fields[r.sid].(string)
		if sid == "" {
			continue
		}
		typ = r.noun
		if status, _ := fields[r.status].(string); status != "" {
			typ += "." + status
		}
		return sid + ":" + digest[:32], typ
	}
	return digest, "request"
}
