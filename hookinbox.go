package hookinbox

import "encoding/json"

// Event is a verified webhook event as a handler sees it.
type Event struct {
	// Provider is the verifier's name, e.g. "stripe".
	Provider string
	// Endpoint is the configured endpoint that received the event.
	Endpoint string
	// ID is the provider's unique id of the event or delivery.
	ID string
	// Type is the event type, e.g. "invoice.paid".
	Type string
	// Payload is the verified body.
	Payload json.RawMessage
	// Attempt is 1 for the first processing attempt and counts up on retries by
	// workers.
	Attempt int

	// request is the receiver's record of the request (JSON), stored with the receipt
	// for the console; nil for events given to Receive directly.
	request []byte
	// payloadIsJSON: the endpoint's verifier found Payload to be valid JSON
	// (provider.Verified.BodyIsJSON), so receiving does not check it a second time.
	// Receive and ReceiveBatch clear it: an event a handler got, changed and received
	// again is checked.
	payloadIsJSON bool
}

// Outcome is what receiving or processing an event came to. It is the "outcome" of
// the HTTP answer and of the Hookinbox-Outcome header.
type Outcome string

const (
	// OutcomeProcessed means the event's handler ran and its effect is committed.
	OutcomeProcessed Outcome = "processed"
	// OutcomeDuplicate means the event was received before; nothing was written.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeIgnored means no handler is registered for the type; the receipt is kept
	// so that retries stay duplicates.
	OutcomeIgnored Outcome = "ignored"
	// OutcomeAccepted means the receipt is committed as pending and a worker will
	// process it.
	OutcomeAccepted Outcome = "accepted"
	// OutcomeChallenge means the request was a provider's verified handshake (Slack's
	// url_verification) and was answered without being recorded.
	OutcomeChallenge Outcome = "challenge"
	// OutcomeBatch is the outcome of a request that carried several events
	// (provider.BatchVerifier), every one of them committed; the answer counts each
	// event's own outcome.
	OutcomeBatch Outcome = "batch"
)

// Mode is how an endpoint processes what it receives.
type Mode string

const (
	// ModeSync processes the event in the receive transaction and answers after
	// commit. A handler failure rolls everything back and answers 5xx, so the
	// provider retries.
	ModeSync Mode = "sync"
	// ModeAsync commits the receipt as pending, answers, and lets workers process it.
	ModeAsync Mode = "async"
	// ModeHybrid tries sync; when the handler fails it rolls back, stores the receipt
	// as pending with the error and one attempt counted, answers 2xx, and lets workers
	// retry, so a bug does not depend on the provider's patience.
	ModeHybrid Mode = "hybrid"
)
