package hookinboxtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// The generic signer, configured as Slack's, GitHub's and Standard Webhooks', is
// accepted by each provider's library.
func TestHMAC_AsKnownSchemesAcceptedByTheirLibraries(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"e1","type":"t1"}`)
	now := time.Now()

	asSlack, err := hookinboxtest.HMAC(hookinboxtest.HMACScheme{
		Header: "X-Slack-Signature", Prefix: "v0=", TimestampHeader: "X-Slack-Request-Timestamp",
		SignedPayload: "v0:{timestamp}:{body}",
	}, "slack_secret")
	if err != nil {
		t.Fatal(err)
	}
	h, err := asSlack.Sign(body, now)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := slack.NewSecretsVerifier(h, "slack_secret")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = sv.Write(body)
	if err := sv.Ensure(); err != nil {
		t.Errorf("as Slack: slack-go: %v", err)
	}

	asGitHub, err := hookinboxtest.HMAC(hookinboxtest.HMACScheme{
		Header: "X-Hub-Signature-256", Prefix: "sha256=", IDHeader: "X-GitHub-Delivery", TypeHeader: "X-GitHub-Event",
	}, "gh_secret")
	if err != nil {
		t.Fatal(err)
	}
	if h, err = asGitHub.Sign(body, now); err != nil {
		t.Fatal(err)
	}
	if err := goGitHubValidates(h, body, "gh_secret"); err != nil {
		t.Errorf("as GitHub: go-github: %v", err)
	}
	if h.Get("X-GitHub-Delivery") != "e1" || h.Get("X-GitHub-Event") != "t1" {
		t.Errorf("as GitHub: headers = %v", h)
	}

	// The generic scheme uses secrets as they are: the decoded whsec_ key.
	asStandard, err := hookinboxtest.HMAC(hookinboxtest.HMACScheme{
		Header: "Webhook-Signature", Prefix: "v1,", Encoding: "base64", TimestampHeader: "Webhook-Timestamp",
		IDHeader: "Webhook-Id", SignedPayload: "{id}.{timestamp}.{body}",
	}, "hookinbox-other-key-2024")
	if err != nil {
		t.Fatal(err)
	}
	if h, err = asStandard.Sign(body, now); err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(swOtherSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Errorf("as Standard Webhooks: library: %v", err)
	}
}

// A body that contains a placeholder is signed as it is.
func TestHMAC_BodyWithPlaceholder(t *testing.T) {
	t.Parallel()

	s, err := hookinboxtest.HMAC(hookinboxtest.HMACScheme{Header: "X-Slack-Signature", Prefix: "v0=",
		TimestampHeader: "X-Slack-Request-Timestamp", SignedPayload: "v0:{timestamp}:{body}"}, "k")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"text":"{timestamp} and {body}"}`)
	h, err := s.Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hookinboxtest.Slack("k").Sign(body, time.Unix(mustAtoi(t, h.Get("X-Slack-Request-Timestamp")), 0))
	if h.Get("X-Slack-Signature") != want.Get("X-Slack-Signature") {
		t.Errorf("signature %s, want Slack's %s", h.Get("X-Slack-Signature"), want.Get("X-Slack-Signature"))
	}
}

func TestHMAC_Refuses(t *testing.T) {
	t.Parallel()

	for _, scheme := range []hookinboxtest.HMACScheme{
		{},
		{Header: "X-Sig", Algorithm: "sha1"},
		{Header: "X-Sig", Encoding: "base32"},
		{Header: "X-Sig", SignedPayload: "{timestamp}"},
	} {
		if _, err := hookinboxtest.HMAC(scheme, "k"); err == nil {
			t.Errorf("HMAC(%+v) succeeded", scheme)
		}
	}
	s, err := hookinboxtest.HMAC(hookinboxtest.HMACScheme{Header: "X-Sig", TypeHeader: "X-Type"}, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sign([]byte(`{"id":"e1"}`), time.Now()); err == nil || !strings.Contains(err.Error(), "X-Type") {
		t.Errorf("Sign without a type = %v, want an error naming X-Type", err)
	}
}
