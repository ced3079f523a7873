package provider_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/provider"
)

// FuzzGitHubHeader checks that nothing verifies that was not signed: whenever Verify
// accepts, the header is "sha256=" and the HMAC of the body (in either case).
// (internal/oracle's FuzzGitHubHeader checks that go-github accepts the same request.)
func FuzzGitHubHeader(f *testing.F) {
	body := []byte(`{"action":"opened","issue":{"number":1}}`)
	good := "sha256=" + hexMAC(sha256.New, fuzzSecret, body)
	f.Add(good, body)
	f.Add(strings.ToUpper(good[:7])+good[7:], body)
	f.Add("sha256="+strings.ToUpper(good[7:]), body)
	f.Add(good[:40], body)
	f.Add("sha1="+good[7:47], body)
	f.Add("sha256", body)
	f.Add("=", []byte(nil))
	f.Add("", body)

	g := newTestGitHub(f, fuzzSecret)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := githubHeader("", "issues")
		h.Set("X-Hub-Signature-256", sig)
		got, err := g.Verify(h, body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if want := "sha256=" + hexMAC(sha256.New, fuzzSecret, body); "sha256="+strings.ToLower(strings.TrimPrefix(sig, "sha256=")) != want {
			t.Fatalf("accepted signature %q, want %s", sig, want)
		}
		if got.ID != githubDelivery || got.Type == "" || got.SecretIndex != 0 || string(got.Body) != string(body) {
			t.Fatalf("Verify = %+v", got)
		}
	})
}

// FuzzGitHubEvent checks the id and type of correctly signed deliveries against an
// independent reading of the body: the event header, and the action when it is a
// non-empty string.
func FuzzGitHubEvent(f *testing.F) {
	f.Add("issues", githubDelivery, []byte(`{"action":"opened"}`))
	f.Add("push", githubDelivery, []byte(`{"ref":"refs/heads/main"}`))
	f.Add("ping", githubDelivery, []byte(`{"zen":"x","hook_id":1}`))
	f.Add("issues", githubDelivery, []byte(`{"action":null}`))
	f.Add("issues", githubDelivery, []byte(`{"action":1}`))
	f.Add("issues", githubDelivery, []byte(`{"action":"a","action":"b"}`))
	f.Add("issues", githubDelivery, []byte(`{"action":"\u00e9\ud800"}`))
	f.Add("", githubDelivery, []byte(`{}`))
	f.Add("issues", "", []byte(`{}`))
	f.Add("issues", githubDelivery, []byte(`payload=%7B%7D`))

	g := newTestGitHub(f, fuzzSecret)
	f.Fuzz(func(t *testing.T, event, delivery string, body []byte) {
		h := http.Header{}
		h.Set("X-Hub-Signature-256", "sha256="+hexMAC(sha256.New, fuzzSecret, body))
		h.Set("X-GitHub-Event", event)
		h.Set("X-GitHub-Delivery", delivery)
		got, err := g.Verify(h, body)
		if err != nil {
			if !errors.Is(err, provider.ErrUnparsableEvent) {
				t.Fatalf("signed delivery refused with %v", err)
			}
			return
		}

		var fields map[string]any
		if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
			t.Fatalf("accepted a body that is not a JSON object")
		}
		want := event
		if action, _ := fields["action"].(string); action != "" {
			want += "." + action
		}
		if got.ID != delivery || got.ID == "" || got.Type != want || event == "" {
			t.Fatalf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, delivery, want)
		}
	})
}
