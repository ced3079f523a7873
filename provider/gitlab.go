package provider

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"
)

const (
	// gitlabTokenHeader carries the webhook's secret token itself.
	gitlabTokenHeader = "X-Gitlab-Token"
	// gitlabIdempotencyHeader is the id GitLab keeps across retries of one event
	// (GitLab 17.4 and later).
	gitlabIdempotencyHeader = "Idempotency-Key"
	// gitlabEventUUIDHeader identifies the event that triggered the webhook.
	gitlabEventUUIDHeader = "X-Gitlab-Event-UUID"
	// gitlabEventHeader is the hook's name, e.g. "Push Hook".
	gitlabEventHeader = "X-Gitlab-Event"

	// gitlabRetryWindow bounds when a GitLab delivery can come again. GitLab does
	// not retry a failed delivery by itself; a person resends it from the webhook's
	// request history, which keeps the requests of the last 7 days.
	gitlabRetryWindow = 7 * 24 * time.Hour
)

// GitLabConfig configures a GitLab verifier.
type GitLabConfig struct {
	// Secrets are the webhook's secret tokens. During a rotation there are several,
	// and any of them is accepted. At least one is required, and none may be empty
	// or have surrounding whitespace.
	Secrets []string
}

// GitLab checks the secret token of GitLab webhooks (X-Gitlab-Token). It is safe for
// concurrent use.
//
// GitLab does not sign: the token is sent as it is, so it proves the sender knows
// it but not that the body is the one GitLab sent, and there is no timestamp. Only
// TLS protects the body in transit, and a captured delivery can be replayed, with a
// fresh id, at any time. Handlers of GitLab events should be idempotent on the
// body's own identifiers.
type GitLab struct {
	// tokens are the SHA-256 of each secret: comparing digests takes the same time
	// whatever the length of the token sent.
	tokens [][sha256.Size]byte
}

var _ Verifier = (*GitLab)(nil)

// NewGitLab returns a GitLab verifier, or an error if cfg has no secrets, or an
// empty, blank or whitespace-padded secret.
func NewGitLab(cfg GitLabConfig) (*GitLab, error) {
	secrets, err := secretBytes("gitlab", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	g := &GitLab{tokens: make([][sha256.Size]byte, len(secrets))}
	for i, s := range secrets {
		g.tokens[i] = sha256.Sum256(s)
	}
	return g, nil
}

// Name returns "gitlab".
func (*GitLab) Name() string { return "gitlab" }

// RetryWindow returns 7 days: GitLab never retries by itself, and a delivery can be
// resent by hand from the last 7 days of the webhook's request history.
func (*GitLab) RetryWindow() time.Duration { return gitlabRetryWindow }

// Verify accepts the delivery only if X-Gitlab-Token equals one of the configured
// secrets, compared in constant time.
//
// The id is Idempotency-Key, which GitLab keeps across the retries of one event,
// or X-Gitlab-Event-UUID when there is none (GitLab before 17.4). The type is
// X-Gitlab-Event, e.g. "Push Hook", "Merge Request Hook". The body must be a JSON
// object.
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (g *GitLab) Verify(h http.Header, body []byte) (Verified, error) {
	token, err := headerValue(h, "gitlab", gitlabTokenHeader, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if token == "" {
		return Verified{}, fmt.Errorf("gitlab: no %s header: %w", gitlabTokenHeader, ErrMissingSignature)
	}
	sum := sha256.Sum256([]byte(token))
	index := -1
	for i, want := range g.tokens {
		// Every token is compared, so the time taken does not say which matched.
		if subtle.ConstantTimeCompare(sum[:], want[:]) == 1 && index < 0 {
			index = i
		}
	}
	if index < 0 {
		return Verified{}, fmt.Errorf("gitlab: token matches none of %d secrets: %w", len(g.tokens), ErrNoValidSignature)
	}

	id, err := headerValue(h, "gitlab", gitlabIdempotencyHeader, ErrUnparsableEvent)
	if err != nil {
		return Verified{}, err
	}
	if id == "" {
		if id, err = headerValue(h, "gitlab", gitlabEventUUIDHeader, ErrUnparsableEvent); err != nil {
			return Verified{}, err
		}
	}
	if id == "" {
		return Verified{}, fmt.Errorf("gitlab: no %s or %s header: %w", gitlabIdempotencyHeader, gitlabEventUUIDHeader, ErrUnparsableEvent)
	}
	typ, err := headerValue(h, "gitlab", gitlabEventHeader, ErrUnparsableEvent)
	if err != nil {
		return Verified{}, err
	}
	if typ == "" {
		return Verified{}, fmt.Errorf("gitlab: no %s header: %w", gitlabEventHeader, ErrUnparsableEvent)
	}
	if _, err := eventObject("gitlab", body); err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, BodyIsJSON: true}, nil
}
