package provider

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const (
	// githubSignatureHeader carries GitHub's HMAC-SHA256 signature.
	githubSignatureHeader = "X-Hub-Signature-256"
	// githubSHA1Header carries GitHub's legacy HMAC-SHA1 signature, which is never
	// accepted: SHA-1 is kept by GitHub for old receivers only.
	githubSHA1Header = "X-Hub-Signature"
	// githubDeliveryHeader is the delivery's GUID, which a redelivery keeps.
	githubDeliveryHeader = "X-GitHub-Delivery"
	// githubEventHeader is the event's name, e.g. "issues" or "ping".
	githubEventHeader = "X-GitHub-Event"

	// githubRetryWindow is how long a GitHub delivery can come again. GitHub does not
	// retry failed deliveries by itself; a person or a script redelivers them, and
	// only deliveries of the past three days can be redelivered.
	githubRetryWindow = 72 * time.Hour
)

// GitHubConfig configures a GitHub verifier.
type GitHubConfig struct {
	// Secrets are the webhook's secrets. During a rotation there are several, and a
	// signature by any of them is accepted. At least one is required, and none may be
	// empty or have surrounding whitespace.
	Secrets []string
}

// GitHub verifies GitHub's webhook signatures (X-Hub-Signature-256). It is safe for
// concurrent use.
//
// GitHub signs the body only. Its scheme has no timestamp, so a captured delivery can
// be replayed at any time, and the delivery id and event name travel in headers that
// are not signed, so a replay can carry a fresh delivery id and pass the inbox's
// duplicate check. Nothing on the receiving side can close that gap; handlers of
// GitHub events should be idempotent on the body's own identifiers.
type GitHub struct {
	secrets [][]byte
}

var _ Verifier = (*GitHub)(nil)

// NewGitHub returns a GitHub verifier, or an error if cfg has no secrets, or an empty,
// blank or whitespace-padded secret. Errors identify a secret by its position, never
// by its value.
func NewGitHub(cfg GitHubConfig) (*GitHub, error) {
	secrets, err := secretBytes("github", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	return &GitHub{secrets: secrets}, nil
}

// Name returns "github".
func (*GitHub) Name() string { return "github" }

// RetryWindow returns 72 hours. GitHub never retries by itself, but a failed delivery
// can be redelivered by hand or through the API for three days, with the same
// X-GitHub-Delivery.
func (*GitHub) RetryWindow() time.Duration { return githubRetryWindow }

// Verify accepts the delivery only if X-Hub-Signature-256 is "sha256=" followed by the
// hex HMAC-SHA256, under one of the configured secrets, of body exactly as received. A
// request that carries only the SHA-1 X-Hub-Signature is refused as missing its
// signature.
//
// The event's id is X-GitHub-Delivery. Its type is X-GitHub-Event, followed by a dot
// and the body's "action" when the body has one: "issues.opened", "pull_request.closed",
// but "push" and "ping". The body must be JSON (the webhook's content type
// application/json); a form-encoded body is refused as an unusable event. A ping is
// verified like any other delivery, with type "ping".
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (g *GitHub) Verify(h http.Header, body []byte) (Verified, error) {
	value, err := headerValue(h, "github", githubSignatureHeader, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if value == "" {
		if sha1, _ := headerValue(h, "github", githubSHA1Header, ErrMalformedSignature); sha1 != "" {
			return Verified{}, fmt.Errorf("github: only the SHA-1 %s header, which is not accepted; no %s header: %w",
				githubSHA1Header, githubSignatureHeader, ErrMissingSignature)
		}
		return Verified{}, fmt.Errorf("github: no %s header: %w", githubSignatureHeader, ErrMissingSignature)
	}

	algorithm, digits, ok := strings.Cut(value, "=")
	if !ok {
		return Verified{}, fmt.Errorf("github: %s is not algorithm=signature: %w", githubSignatureHeader, ErrMalformedSignature)
	}
	if algorithm != "sha256" {
		// sha1= in the SHA-256 header included: a downgrade is refused wherever it
		// is put.
		return Verified{}, fmt.Errorf("github: %s is not a sha256 signature: %w", githubSignatureHeader, ErrNoValidSignature)
	}
	sig, err := decodeHexDigest("github", githubSignatureHeader, digits, sha256.Size)
	if err != nil {
		return Verified{}, err
	}

	index := matchMAC(g.secrets, sha256.New, [][]byte{body}, nil, [][]byte{sig})
	if index < 0 {
		return Verified{}, fmt.Errorf("github: signature matches none of %d secrets: %w", len(g.secrets), ErrNoValidSignature)
	}

	id, typ, err := githubEvent(h, body)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, BodyIsJSON: true}, nil
}

// githubEvent extracts the id and type of a verified delivery.
func githubEvent(h http.Header, body []byte) (id, typ string, err error) {
	if id, err = headerValue(h, "github", githubDeliveryHeader, ErrUnparsableEvent); err != nil {
		return "", "", err
	}
	if id == "" {
		return "", "", fmt.Errorf("github: no %s header: %w", githubDeliveryHeader, ErrUnparsableEvent)
	}
	if typ, err = headerValue(h, "github", githubEventHeader, ErrUnparsableEvent); err != nil {
		return "", "", err
	}
	if typ == "" {
		return "", "", fmt.Errorf("github: no %s header: %w", githubEventHeader, ErrUnparsableEvent)
	}

	fields, err := eventObject("github", body)
	if err != nil {
		return "", "", err
	}
	// GitHub sends action as a non-empty string or not at all; null and "" are read as
	// "not at all" rather than refused, since GitHub would not redeliver a refused
	// event by itself.
	if raw, ok := fields["action"]; ok && string(raw) != "null" {
		var action string
		if err := json.Unmarshal(raw, &action); err != nil {
			return "", "", fmt.Errorf("github: event action is not a string: %w", ErrUnparsableEvent)
		}
		if action != "" {
			typ += "." + action
		}
	}
	return id, typ, nil
}
