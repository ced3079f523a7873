package oracle_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v74/github"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

const githubDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"

// githubBody is an issues event with irregular spacing.
var githubBody = []byte(`{
  "action": "opened",   "issue": {"number": 1, "title": "` + testBodyMarker + `"},
  "repository": {"full_name": "octo/hello"}
}`)

// githubHeader returns the headers of a GitHub delivery with X-Hub-Signature-256 sig.
func githubHeader(sig string) http.Header {
	return headers("X-Hub-Signature-256", sig, "X-GitHub-Delivery", githubDelivery, "X-GitHub-Event", "issues")
}

// goGitHubAccepts runs go-github's ValidatePayload on the request.
func goGitHubAccepts(h http.Header, body []byte, secret string) error {
	r := request(h, body)
	if r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/json")
	}
	_, err := github.ValidatePayload(r, []byte(secret))
	return err
}

func newGitHub(t testing.TB, secret string) *provider.GitHub {
	t.Helper()
	g, err := provider.NewGitHub(provider.GitHubConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatalf("NewGitHub: %v", err)
	}
	return g
}

// GitHub's published example from "Validating webhook deliveries", which provider's
// tests verify.
func TestGitHub_PublishedVectorAcceptedByGoGitHub(t *testing.T) {
	t.Parallel()

	if err := goGitHubAccepts(headers("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"),
		[]byte("Hello, World!"), "It's a Secret to Everybody"); err != nil {
		t.Fatalf("go-github refuses the published vector: %v", err)
	}
}

// TestGitHub_VerifierAgreesWithGoGitHub cross-checks verdicts with go-github's
// ValidatePayload. The two differ only where hookinbox is deliberately stricter:
// SHA-1 and SHA-512 signatures, which go-github accepts.
func TestGitHub_VerifierAgreesWithGoGitHub(t *testing.T) {
	t.Parallel()

	g := newGitHub(t, testSecret)
	good := hexMAC(sha256.New, testSecret, githubBody)
	sha1Sig := hexMAC(sha1.New, testSecret, githubBody)
	onlySHA1 := githubHeader("")
	onlySHA1.Set("X-Hub-Signature", "sha1="+sha1Sig)

	tests := []struct {
		name       string
		header     http.Header
		body       []byte
		wantOurs   bool
		wantTheirs bool
	}{
		{"good", githubHeader("sha256=" + good), githubBody, true, true},
		{"uppercase hex", githubHeader("sha256=" + strings.ToUpper(good)), githubBody, true, true},
		{"wrong secret", githubHeader("sha256=" + hexMAC(sha256.New, otherSecret, githubBody)), githubBody, false, false},
		{"truncated", githubHeader("sha256=" + good[:32]), githubBody, false, false},
		{"last digit changed", githubHeader("sha256=" + tamper.LastHexChanged(good)), githubBody, false, false},
		{"body changed", githubHeader("sha256=" + good), tamper.OneByteChanged(githubBody, testBodyMarker), false, false},
		{"body re-serialized", githubHeader("sha256=" + good), tamper.Reserialized(githubBody), false, false},
		{"no prefix", githubHeader(good), githubBody, false, false},
		{"unknown algorithm", githubHeader("md5=" + good), githubBody, false, false},
		{"sha1 in the sha256 header", githubHeader("sha1=" + sha1Sig), githubBody, false, true},
		{"sha512", githubHeader("sha512=" + hexMAC(sha512.New, testSecret, githubBody)), githubBody, false, true},
		{"only X-Hub-Signature (SHA-1)", onlySHA1, githubBody, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, ours := g.Verify(tt.header, tt.body)
			theirs := goGitHubAccepts(tt.header, tt.body, testSecret)
			if (ours == nil) != tt.wantOurs || (theirs == nil) != tt.wantTheirs {
				t.Errorf("ours: %v, go-github: %v, want ok %t and %t", ours, theirs, tt.wantOurs, tt.wantTheirs)
			}
		})
	}
}

// TestHMAC_AsGitHubAgreesWithGoGitHub checks the generic scheme, configured as
// GitHub's, against go-github.
func TestHMAC_AsGitHubAgreesWithGoGitHub(t *testing.T) {
	t.Parallel()

	v, err := provider.New("hmac", provider.Options{Secrets: []string{testSecret}, Params: map[string]string{
		"header": "X-Hub-Signature-256", "prefix": "sha256=", "id_header": "X-GitHub-Delivery", "type_header": "X-GitHub-Event",
	}})
	if err != nil {
		t.Fatal(err)
	}
	good := "sha256=" + hexMAC(sha256.New, testSecret, githubBody)
	for _, tt := range []struct {
		name   string
		header http.Header
		body   []byte
		wantOK bool
	}{
		{"good", githubHeader(good), githubBody, true},
		{"truncated", githubHeader(good[:40]), githubBody, false},
		{"body changed", githubHeader(good), tamper.OneByteChanged(githubBody, testBodyMarker), false},
	} {
		_, ours := v.Verify(tt.header, tt.body)
		theirs := goGitHubAccepts(tt.header, tt.body, testSecret)
		if (ours == nil) != tt.wantOK || (theirs == nil) != tt.wantOK {
			t.Errorf("%s: ours: %v, go-github: %v, want ok %t", tt.name, ours, theirs, tt.wantOK)
		}
	}
}

func TestGitHub_SignerAcceptedByGoGitHub(t *testing.T) {
	t.Parallel()

	body := []byte(`{"action":"opened","issue":{"number":1}}`)
	h, err := hookinboxtest.GitHub("gh_secret").SignEvent(body, time.Now(), githubDelivery, "issues")
	if err != nil {
		t.Fatal(err)
	}
	if err := goGitHubAccepts(h, body, "gh_secret"); err != nil {
		t.Errorf("go-github: %v", err)
	}
	if err := goGitHubAccepts(h, body, "other"); err == nil {
		t.Errorf("go-github accepts the signature under another secret")
	}
}
