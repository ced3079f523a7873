// Package provider turns a webhook request (its headers and the exact bytes of its body)
// into a verified event, or into a typed error that says why it was refused.
//
// A Verifier never parses or re-serializes the body before checking its signature:
// providers sign the bytes they send, and any re-encoding breaks the signature.
//
// Nothing unverified is written: callers run Verify on the exact bytes received, before
// any database call, and write only what it returned without an error.
package provider

import (
	"errors"
	"net/http"
	"time"
)

// Verifier checks one provider's signature scheme.
//
// Implementations are safe for concurrent use.
type Verifier interface {
	// Name is the provider's name as stored in hookinbox_inbox.provider, e.g. "stripe":
	// the name of the scheme, which is also the name New selects it by, except for
	// an alias (svix builds the verifier named "standardwebhooks").
	Name() string

	// Verify checks the signature of body as received, with the headers that came with
	// it, and extracts the event's id and type. The returned error wraps one of the
	// sentinel errors of this package.
	Verify(header http.Header, body []byte) (Verified, error)

	// RetryWindow is how long the provider keeps retrying a delivery that was not
	// acknowledged. Processed receipts must be kept at least this long, or a late
	// retry is processed again.
	RetryWindow() time.Duration
}

// Challenger is implemented by verifiers of schemes in which the provider checks an
// endpoint with a signed challenge before it delivers events there, such as Slack's
// url_verification. Receivers test for it with a type assertion:
//
//	if c, ok := verifier.(provider.Challenger); ok {
//		if response, ok := c.Challenge(v); ok {
//			// answer 200 with response, Content-Type application/json
//		}
//	}
//
// A challenge is verified like any delivery, so Challenge is only asked after Verify
// succeeded, with the Verified it returned. It is not a business event: no handler is
// registered for its type, and the receiver need not record it.
type Challenger interface {
	// Challenge returns the body to answer a verified challenge with, and true; or
	// nil and false if v is not a challenge.
	Challenge(v Verified) (response []byte, ok bool)
}

// BatchVerifier is implemented by verifiers of schemes in which one request carries
// several events, such as SendGrid's event webhook (a JSON array) or Adyen's
// notifications (notificationItems). Receivers test for it with a type assertion and
// then call VerifyBatch instead of Verify.
//
// VerifyBatch checks the request's signature once, on the exact bytes received, and
// returns each event with its own id and type, and its own JSON as Body (the item, not
// the whole request), in the order of the request. It refuses the whole request,
// wrapping ErrUnparsableEvent, when any item has no id or type: the request is the
// provider's unit of delivery and of retry.
type BatchVerifier interface {
	VerifyBatch(header http.Header, body []byte) ([]Verified, error)
}

// MediaTyper is implemented by verifiers of schemes whose requests carry bodies other
// than JSON, such as Twilio's form-encoded callbacks. MediaTypes lists those media
// types (no parameters, lower case); receivers refuse any other Content-Type than
// JSON and these before reading the body (415).
type MediaTyper interface {
	MediaTypes() []string
}

// Verified is an event whose signature matched one of the endpoint's secrets.
type Verified struct {
	// ID is the provider's unique id of the event or delivery.
	ID string
	// Type is the event's type, e.g. "invoice.paid".
	Type string
	// Body is the verified body, exactly as received; it is what receivers store.
	// The one exception is a scheme whose bodies are not JSON: Twilio's form
	// posts are given as the JSON object of the verified form parameters.
	Body []byte
	// SecretIndex is the position, in the verifier's configured secrets, of the secret
	// whose signature matched. It tells an operator during a rotation whether the old
	// secret is still in use; it never identifies the secret itself.
	SecretIndex int
	// Timestamp is the signing time the provider sent, or the zero time if the scheme
	// has none.
	Timestamp time.Time
	// BodyIsJSON reports that the verifier found Body to be valid JSON, as every scheme
	// whose verifier parses the body does: a receiver need not check it again. False
	// says nothing either way (Shopify's verifier, and hmac's with the id and type in
	// headers, do not parse the body). A wrapper that changes Body must clear it.
	BodyIsJSON bool
}

// Errors returned by verifiers. Each is wrapped with detail; test with errors.Is.
var (
	// ErrMissingSignature means the signature header (or a header the scheme needs,
	// such as the timestamp) is absent.
	ErrMissingSignature = errors.New("missing signature header")

	// ErrMalformedSignature means a signature or timestamp header is present but cannot
	// be parsed.
	ErrMalformedSignature = errors.New("malformed signature header")

	// ErrNoValidSignature means the header parsed but none of its signatures matches any
	// configured secret.
	ErrNoValidSignature = errors.New("no valid signature")

	// ErrTimestampOutOfTolerance means the signing timestamp is further from the
	// receiver's clock than the tolerance, in the past or in the future.
	ErrTimestampOutOfTolerance = errors.New("timestamp outside tolerance")

	// ErrUnparsableEvent means the body verified but is not the JSON the scheme
	// promises, or carries no event id or type.
	ErrUnparsableEvent = errors.New("verified body is not a usable event")
)

// IsUnauthorized reports whether err means the request was not proved to come from the
// provider (a signature that does not match, or a stale or future timestamp), as
// opposed to a request that is malformed. Receivers answer the first with 401 and the
// second with 400.
func IsUnauthorized(err error) bool {
	return errors.Is(err, ErrNoValidSignature) || errors.Is(err, ErrTimestampOutOfTolerance)
}

// DefaultTolerance is how far a signing timestamp may be from the receiver's clock,
// in either direction, when a verifier's config leaves the tolerance at zero. It is
// Stripe's library default.
const DefaultTolerance = 5 * time.Minute
