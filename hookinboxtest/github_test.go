package hookinboxtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// GitHub's published example from "Validating webhook deliveries".
func TestGitHub_PublishedVector(t *testing.T) {
	t.Parallel()

	h, err := hookinboxtest.GitHub("It's a Secret to Everybody").SignEvent([]byte("Hello, World!"), time.Now(), "d1", "push")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get("X-Hub-Signature-256"), "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"; got != want {
		t.Errorf("X-Hub-Signature-256 = %s, want %s", got, want)
	}
}

// SignEvent sends the id and event as given, and no SHA-1 signature. (internal/oracle
// checks that go-github accepts the signature.)
func TestGitHub_SendsDeliveryAndEventWithoutSHA1(t *testing.T) {
	t.Parallel()

	body := []byte(`{"action":"opened","issue":{"number":1}}`)
	h, err := hookinboxtest.GitHub("gh_secret").SignEvent(body, time.Now(), "72d3162e-cc78-11e3-81ab-4c9367dc0958", "issues")
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("X-GitHub-Delivery") != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || h.Get("X-GitHub-Event") != "issues" {
		t.Errorf("headers = %v", h)
	}
	if h.Get("X-Hub-Signature") != "" {
		t.Errorf("a SHA-1 signature was sent")
	}
}

func TestGitHub_SignTakesIDAndTypeFromBody(t *testing.T) {
	t.Parallel()

	s := hookinboxtest.GitHub("gh_secret")
	h, err := s.Sign([]byte(`{"id":42,"type":"ping","zen":"x"}`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("X-GitHub-Delivery") != "42" || h.Get("X-GitHub-Event") != "ping" {
		t.Errorf("headers = %v", h)
	}
	for body, missing := range map[string]string{`{"type":"ping"}`: `"id"`, `{"id":"d1"}`: `"type"`, `not json`: `"id"`} {
		_, err := s.Sign([]byte(body), time.Now())
		if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "SignEvent") {
			t.Errorf("Sign(%s) error = %v, want one naming %s and SignEvent", body, err, missing)
		}
	}
	if _, err := s.SignEvent([]byte(`{}`), time.Now(), "", "push"); err == nil {
		t.Errorf("SignEvent with no id succeeded")
	}
}
