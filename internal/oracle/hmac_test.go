package oracle_test

import (
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// The generic signer, configured as Slack's, GitHub's and Standard Webhooks', is
// accepted by each provider's library.
func TestHMAC_SignerAsKnownSchemesAcceptedByTheirLibraries(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"e1","type":"t1"}`)
	now := time.Now()
	sign := func(scheme hookinboxtest.HMACScheme, secret string) http.Header {
		t.Helper()
		s, err := hookinboxtest.HMAC(scheme, secret)
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.Sign(body, now)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	asSlack := sign(hookinboxtest.HMACScheme{
		Header: "X-Slack-Signature", Prefix: "v0=", TimestampHeader: "X-Slack-Request-Timestamp",
		SignedPayload: "v0:{timestamp}:{body}",
	}, "slack_secret")
	if err := slackGoAccepts(asSlack, body, "slack_secret"); err != nil {
		t.Errorf("as Slack: slack-go: %v", err)
	}

	asGitHub := sign(hookinboxtest.HMACScheme{
		Header: "X-Hub-Signature-256", Prefix: "sha256=", IDHeader: "X-GitHub-Delivery", TypeHeader: "X-GitHub-Event",
	}, "gh_secret")
	if err := goGitHubAccepts(asGitHub, body, "gh_secret"); err != nil {
		t.Errorf("as GitHub: go-github: %v", err)
	}
	if asGitHub.Get("X-GitHub-Delivery") != "e1" || asGitHub.Get("X-GitHub-Event") != "t1" {
		t.Errorf("as GitHub: headers = %v", asGitHub)
	}

	// The generic scheme uses secrets as they are: the decoded whsec_ key.
	asStandard := sign(hookinboxtest.HMACScheme{
		Header: "Webhook-Signature", Prefix: "v1,", Encoding: "base64", TimestampHeader: "Webhook-Timestamp",
		IDHeader: "Webhook-Id", SignedPayload: "{id}.{timestamp}.{body}",
	}, "hookinbox-other-key-2024")
	wh, err := standardwebhooks.NewWebhook(swOtherSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, asStandard); err != nil {
		t.Errorf("as Standard Webhooks: library: %v", err)
	}
}
