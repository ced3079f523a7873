package provider_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

const (
	// githubVectorSecret, githubVectorBody and githubVectorSignature are GitHub's
	// published example from "Validating webhook deliveries".
	githubVectorSecret    = "It's a Secret to Everybody"
	githubVectorBody      = "Hello, World!"
	githubVectorSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

	githubDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
)

// githubBody is an issues event with irregular spacing, so that re-serializing it
// changes its bytes.
var githubBody = []byte(`{
  "action": "opened",   "issue": {"number": 1, "title": "` + testBodyMarker + `"},
  "repository": {"full_name": "octo/hello"}
}`)

// hexMAC returns the hex HMAC of body under secret, computed directly from the
// definition.
func hexMAC(newHash func() hash.Hash, secret string, body ...[]byte) string {
	mac := hmac.New(newHash, []byte(secret))
	for _, b := range body {
		mac.Write(b)
	}
	return hex.EncodeToString(mac.Sum(nil))
}

// githubHeader returns the headers of a GitHub delivery with signature sig.
func githubHeader(sig, event string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Hub-Signature-256", sig)
	}
	h.Set("X-GitHub-Delivery", githubDelivery)
	h.Set("X-GitHub-Event", event)
	h.Set("Content-Type", "application/json")
	return h
}

func newTestGitHub(t testing.TB, secrets ...string) *provider.GitHub {
	t.Helper()
	g, err := provider.NewGitHub(provider.GitHubConfig{Secrets: secrets})
	if err != nil {
		t.Fatalf("NewGitHub: %v", err)
	}
	return g
}

func TestGitHubNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestGitHub(t, testSecret)
	if got := v.Name(); got != "github" {
		t.Errorf("Name() = %q, want %q", got, "github")
	}
	if got := v.RetryWindow(); got != 72*time.Hour {
		t.Errorf("RetryWindow() = %s, want 72h", got)
	}
}

// TestGitHubPublishedVector checks GitHub's published example. Its body is not JSON,
// so Verify refuses the event after the signature matched: ErrUnparsableEvent, where a
// signature mismatch would be ErrNoValidSignature.
func TestGitHubPublishedVector(t *testing.T) {
	t.Parallel()

	body := []byte(githubVectorBody)
	if got := "sha256=" + hexMAC(sha256.New, githubVectorSecret, body); got != githubVectorSignature {
		t.Fatalf("the test's HMAC = %s, want the published %s", got, githubVectorSignature)
	}

	g := newTestGitHub(t, githubVectorSecret)
	_, err := g.Verify(githubHeader(githubVectorSignature, "push"), body)
	if !errors.Is(err, provider.ErrUnparsableEvent) {
		t.Errorf("Verify(published vector) error = %v, want %v (signature accepted, body not JSON)", err, provider.ErrUnparsableEvent)
	}
	_, err = g.Verify(githubHeader(tamper.LastHexChanged(githubVectorSignature), "push"), body)
	if !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("Verify(vector with a digit changed) error = %v, want %v", err, provider.ErrNoValidSignature)
	}
}

func TestGitHubVerifies(t *testing.T) {
	t.Parallel()

	g := newTestGitHub(t, testSecret)
	got, err := g.Verify(githubHeader("sha256="+hexMAC(sha256.New, testSecret, githubBody), "issues"), githubBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := provider.Verified{ID: githubDelivery, Type: "issues.opened", Body: githubBody}
	if got.ID != want.ID || got.Type != want.Type || !bytes.Equal(got.Body, want.Body) || got.SecretIndex != 0 || !got.Timestamp.IsZero() {
		t.Errorf("Verify = %+v, want %+v", got, want)
	}
}

func TestGitHubRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestGitHub(t, testSecret), githubRejections(), testSecret, testBodyMarker)
}

// githubRejections returns the requests a GitHub verifier of testSecret must refuse.
func githubRejections() []rejection {
	good := "sha256=" + hexMAC(sha256.New, testSecret, githubBody)
	sig := func(v string) http.Header { return githubHeader(v, "issues") }

	empty := sig("")
	empty.Set("X-Hub-Signature-256", "")
	twoHeaders := sig(good)
	twoHeaders.Add("X-Hub-Signature-256", good)
	onlySHA1 := sig("")
	onlySHA1.Set("X-Hub-Signature", "sha1="+hexMAC(sha1.New, testSecret, githubBody))

	return []rejection{
		{"no header", sig(""), githubBody, provider.ErrMissingSignature},
		{"nil header", nil, githubBody, provider.ErrMissingSignature},
		{"empty header", empty, githubBody, provider.ErrMissingSignature},
		{"only the SHA-1 header, validly signed", onlySHA1, githubBody, provider.ErrMissingSignature},
		{"two headers", twoHeaders, githubBody, provider.ErrMalformedSignature},
		{"garbage", sig("garbage"), githubBody, provider.ErrMalformedSignature},
		{"header too long", sig(good + strings.Repeat("0", 8<<10)), githubBody, provider.ErrMalformedSignature},
		{"wrong secret", sig("sha256=" + hexMAC(sha256.New, otherSecret, githubBody)), githubBody, provider.ErrNoValidSignature},
		{"truncated signature", sig(good[:len(good)-32]), githubBody, provider.ErrNoValidSignature},
		{"signature one digit short", sig(good[:len(good)-1]), githubBody, provider.ErrNoValidSignature},
		{"empty signature", sig("sha256="), githubBody, provider.ErrNoValidSignature},
		{"last digit changed", sig(tamper.LastHexChanged(good)), githubBody, provider.ErrNoValidSignature},
		{"non-hex signature", sig("sha256=" + strings.Repeat("zz", 32)), githubBody, provider.ErrNoValidSignature},
		{"one byte changed in body", sig(good), tamper.OneByteChanged(githubBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", sig(good), tamper.Reserialized(githubBody), provider.ErrNoValidSignature},
		{"empty body", sig(good), nil, provider.ErrNoValidSignature},
		{"unknown version alone (sha512)", sig("sha512=" + hexMAC(sha512.New, testSecret, githubBody)), githubBody, provider.ErrNoValidSignature},
		{"sha1 in the sha256 header", sig("sha1=" + hexMAC(sha1.New, testSecret, githubBody)), githubBody, provider.ErrNoValidSignature},
		{"prefix in other case", sig("SHA256=" + good[len("sha256="):]), githubBody, provider.ErrNoValidSignature},
	}
}

func TestGitHubRotation(t *testing.T) {
	t.Parallel()

	g := newTestGitHub(t, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := g.Verify(githubHeader("sha256="+hexMAC(sha256.New, secret, githubBody), "issues"), githubBody)
		if err != nil {
			t.Fatalf("secret %d: Verify: %v", i, err)
		}
		if got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex = %d", i, got.SecretIndex)
		}
	}
}

func TestGitHubEventIDAndType(t *testing.T) {
	t.Parallel()

	g := newTestGitHub(t, testSecret)
	tests := []struct {
		name     string
		event    string
		body     string
		wantType string
	}{
		{"action appended", "issues", `{"action":"opened"}`, "issues.opened"},
		{"no action", "push", `{"ref":"refs/heads/main"}`, "push"},
		{"ping is verified like any event", "ping", `{"zen":"Keep it logically awesome.","hook_id":1}`, "ping"},
		{"null action", "issues", `{"action":null}`, "issues"},
		{"empty action", "issues", `{"action":""}`, "issues"},
		{"nested action is not the action", "workflow_run", `{"workflow":{"action":"x"}}`, "workflow_run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			body := []byte(tt.body)
			got, err := g.Verify(githubHeader("sha256="+hexMAC(sha256.New, testSecret, body), tt.event), body)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.ID != githubDelivery || got.Type != tt.wantType {
				t.Errorf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, githubDelivery, tt.wantType)
			}
		})
	}
}

func TestGitHubUnparsableEvent(t *testing.T) {
	t.Parallel()

	g := newTestGitHub(t, testSecret)
	signed := func(body []byte, edit func(http.Header)) (http.Header, []byte) {
		h := githubHeader("sha256="+hexMAC(sha256.New, testSecret, body), "issues")
		if edit != nil {
			edit(h)
		}
		return h, body
	}
	tests := []struct {
		name     string
		body     string
		edit     func(http.Header)
		wantText string
	}{
		{"no delivery", `{}`, func(h http.Header) { h.Del("X-GitHub-Delivery") }, "no X-GitHub-Delivery"},
		{"no event", `{}`, func(h http.Header) { h.Del("X-GitHub-Event") }, "no X-GitHub-Event"},
		{"two deliveries", `{}`, func(h http.Header) { h.Add("X-GitHub-Delivery", "other") }, "2 X-GitHub-Delivery headers"},
		{"action not a string", `{"action":1}`, nil, "action is not a string"},
		{"form-encoded body", `payload=%7B%22action%22%3A%22opened%22%7D`, nil, "not a JSON object"},
		{"array", `[]`, nil, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, err := g.Verify(signed([]byte(tt.body), tt.edit))
			if !errors.Is(err, provider.ErrUnparsableEvent) {
				t.Fatalf("Verify error = %v, want %v", err, provider.ErrUnparsableEvent)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Verify error = %q, want it to mention %q", err, tt.wantText)
			}
		})
	}
}
