package oracle_test

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// FuzzGitHubHeader checks that whatever provider.GitHub accepts, go-github accepts
// too: the oracle half of provider's FuzzGitHubHeader, whose seeds it shares.
func FuzzGitHubHeader(f *testing.F) {
	body := []byte(`{"action":"opened","issue":{"number":1}}`)
	good := "sha256=" + hexMAC(sha256.New, fuzzSecret, body)
	f.Add(good, body)
	f.Add("sha256="+strings.ToUpper(good[7:]), body)

	g := newGitHub(f, fuzzSecret)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := githubHeader("")
		h.Set("X-Hub-Signature-256", sig)
		if _, err := g.Verify(h, body); err != nil {
			return
		}
		if err := goGitHubAccepts(h, body, fuzzSecret); err != nil {
			t.Fatalf("accepted a request that go-github refuses: %v", err)
		}
	})
}
