package provider_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/provider"
)

// GitLab signs nothing, so there is no signature to check against a library or a
// vector: the token is compared as sent (GitLab's webhook documentation, "Validate
// requests with a secret token").

const (
	gitlabUUID        = "13792a34-cac6-4fda-95a8-c58e00a3954e"
	gitlabIdempotency = "a7d8e1b2-0c3f-4e5d-9a8b-7c6d5e4f3a2b"
)

var gitlabBody = []byte(`{"object_kind": "push", "ref": "refs/heads/main",
  "project": {"path_with_namespace": "` + testBodyMarker + `"}}`)

func gitlabHeader(token string) http.Header {
	h := http.Header{}
	if token != "" {
		h.Set("X-Gitlab-Token", token)
	}
	h.Set("X-Gitlab-Event", "Push Hook")
	h.Set("X-Gitlab-Event-UUID", gitlabUUID)
	return h
}

func newTestGitLab(t testing.TB, secrets ...string) *provider.GitLab {
	t.Helper()
	v, err := provider.NewGitLab(provider.GitLabConfig{Secrets: secrets})
	if err != nil {
		t.Fatalf("NewGitLab: %v", err)
	}
	return v
}

func TestGitLabNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestGitLab(t, testSecret)
	if v.Name() != "gitlab" || v.RetryWindow() != 7*24*time.Hour {
		t.Errorf("Name, RetryWindow = %q, %s", v.Name(), v.RetryWindow())
	}
}

func TestGitLabVerifies(t *testing.T) {
	t.Parallel()

	v := newTestGitLab(t, testSecret)
	got, err := v.Verify(gitlabHeader(testSecret), gitlabBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != gitlabUUID || got.Type != "Push Hook" || got.SecretIndex != 0 || !got.Timestamp.IsZero() {
		t.Errorf("Verify = %+v", got)
	}
	// Idempotency-Key, kept across retries, is preferred to the event's UUID.
	h := gitlabHeader(testSecret)
	h.Set("Idempotency-Key", gitlabIdempotency)
	if got, err := v.Verify(h, gitlabBody); err != nil || got.ID != gitlabIdempotency {
		t.Errorf("with Idempotency-Key: %+v, %v", got, err)
	}
}

func TestGitLabRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestGitLab(t, testSecret), gitlabRejections(), testSecret, testBodyMarker)
}

func gitlabRejections() []rejection {
	twoTokens := gitlabHeader(testSecret)
	twoTokens.Add("X-Gitlab-Token", testSecret)
	noID := gitlabHeader(testSecret)
	noID.Del("X-Gitlab-Event-UUID")
	noType := gitlabHeader(testSecret)
	noType.Del("X-Gitlab-Event")
	return []rejection{
		{"no header", http.Header{}, gitlabBody, provider.ErrMissingSignature},
		{"no token", gitlabHeader(""), gitlabBody, provider.ErrMissingSignature},
		{"two tokens", twoTokens, gitlabBody, provider.ErrMalformedSignature},
		{"wrong token", gitlabHeader(otherSecret), gitlabBody, provider.ErrNoValidSignature},
		{"prefix of the token", gitlabHeader(testSecret[:len(testSecret)-1]), gitlabBody, provider.ErrNoValidSignature},
		{"token and more", gitlabHeader(testSecret + "x"), gitlabBody, provider.ErrNoValidSignature},
		{"token in another case", gitlabHeader(strings.ToUpper(testSecret)), gitlabBody, provider.ErrNoValidSignature},
		{"no event id", noID, gitlabBody, provider.ErrUnparsableEvent},
		{"no event type", noType, gitlabBody, provider.ErrUnparsableEvent},
		{"not JSON", gitlabHeader(testSecret), []byte("payload=1"), provider.ErrUnparsableEvent},
	}
}

func TestGitLabRotation(t *testing.T) {
	t.Parallel()

	v := newTestGitLab(t, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := v.Verify(gitlabHeader(secret), gitlabBody)
		if err != nil || got.SecretIndex != i {
			t.Errorf("token %d: SecretIndex %d, error %v", i, got.SecretIndex, err)
		}
	}
	if _, err := v.Verify(gitlabHeader("third"), gitlabBody); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("unknown token: %v", err)
	}
}
