package oracle_test

import (
	"crypto/sha256"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// slackBody is an event_callback with irregular spacing.
var slackBody = []byte(`{"type": "event_callback",  "event_id": "Ev08MFMKH6",
  "event": {"type": "app_mention", "text": "` + testBodyMarker + `"}}`)

// slackSignature returns Slack's v0 signature of body at ts, the timestamp as sent
// (which the signer, given a time, writes without a leading zero).
func slackSignature(secret, ts string, body []byte) string {
	return "v0=" + hexMAC(sha256.New, secret, []byte("v0:"+ts+":"), body)
}

func slackHeader(ts, sig string) http.Header {
	return headers("X-Slack-Request-Timestamp", ts, "X-Slack-Signature", sig)
}

func slackSigned(secret string, at time.Time, body []byte) http.Header {
	h, err := hookinboxtest.Slack(secret).Sign(body, at)
	if err != nil {
		panic(err)
	}
	return h
}

// slackGoAccepts reports whether slack-go's SecretsVerifier accepts the request. It
// checks the timestamp against the real clock.
func slackGoAccepts(h http.Header, body []byte, secret string) error {
	sv, err := slack.NewSecretsVerifier(h, secret)
	if err != nil {
		return err
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	return sv.Ensure()
}

func newSlack(t testing.TB, secret string) *provider.Slack {
	t.Helper()
	s, err := provider.NewSlack(provider.SlackConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatalf("NewSlack: %v", err)
	}
	return s
}

// TestSlack_VerifierAgreesWithSlackGo cross-checks verdicts with slack-go's
// SecretsVerifier on the real clock, which slack-go always uses.
func TestSlack_VerifierAgreesWithSlackGo(t *testing.T) {
	t.Parallel()

	s := newSlack(t, testSecret)
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	good := slackSignature(testSecret, ts, slackBody)

	tests := []struct {
		name   string
		header http.Header
		body   []byte
		wantOK bool
	}{
		{"good", slackHeader(ts, good), slackBody, true},
		{"uppercase hex", slackHeader(ts, "v0="+strings.ToUpper(good[3:])), slackBody, true},
		{"leading zero in timestamp, signed as sent", slackHeader("0"+ts, slackSignature(testSecret, "0"+ts, slackBody)), slackBody, true},
		{"leading zero in timestamp, signed without", slackHeader("0"+ts, good), slackBody, false},
		{"wrong secret", slackHeader(ts, slackSignature(otherSecret, ts, slackBody)), slackBody, false},
		{"truncated", slackHeader(ts, good[:35]), slackBody, false},
		{"last digit changed", slackHeader(ts, tamper.LastHexChanged(good)), slackBody, false},
		{"body changed", slackHeader(ts, good), tamper.OneByteChanged(slackBody, testBodyMarker), false},
		{"body re-serialized", slackHeader(ts, good), tamper.Reserialized(slackBody), false},
		{"v1", slackHeader(ts, "v1="+good[3:]), slackBody, false},
		{"stale", slackSigned(testSecret, now.Add(-6*time.Minute), slackBody), slackBody, false},
		{"future", slackSigned(testSecret, now.Add(6*time.Minute), slackBody), slackBody, false},
		{"no timestamp", slackHeader("", good), slackBody, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, ours := s.Verify(tt.header, tt.body)
			theirs := slackGoAccepts(tt.header, tt.body, testSecret)
			if (ours == nil) != tt.wantOK || (theirs == nil) != tt.wantOK {
				t.Errorf("ours: %v, slack-go: %v, want ok %t", ours, theirs, tt.wantOK)
			}
		})
	}
}

// TestHMAC_AsSlackAgreesWithSlackGo checks the generic scheme, configured as Slack's,
// against slack-go on the real clock.
func TestHMAC_AsSlackAgreesWithSlackGo(t *testing.T) {
	t.Parallel()

	v, err := provider.New("hmac", provider.Options{Secrets: []string{testSecret}, Params: map[string]string{
		"header": "X-Slack-Signature", "prefix": "v0=", "timestamp_header": "X-Slack-Request-Timestamp",
		"signed_payload": "v0:{timestamp}:{body}", "id_field": "event_id", "type_field": "event.type",
	}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tt := range []struct {
		name   string
		header http.Header
		body   []byte
		wantOK bool
	}{
		{"good", slackSigned(testSecret, now, slackBody), slackBody, true},
		{"wrong secret", slackSigned(otherSecret, now, slackBody), slackBody, false},
		{"stale", slackSigned(testSecret, now.Add(-6*time.Minute), slackBody), slackBody, false},
		{"future", slackSigned(testSecret, now.Add(6*time.Minute), slackBody), slackBody, false},
		{"body re-serialized", slackSigned(testSecret, now, slackBody), tamper.Reserialized(slackBody), false},
	} {
		_, ours := v.Verify(tt.header, tt.body)
		theirs := slackGoAccepts(tt.header, tt.body, testSecret)
		if (ours == nil) != tt.wantOK || (theirs == nil) != tt.wantOK {
			t.Errorf("%s: ours: %v, slack-go: %v, want ok %t", tt.name, ours, theirs, tt.wantOK)
		}
	}
}

func TestSlack_SignerAcceptedBySlackGo(t *testing.T) {
	t.Parallel()

	body := []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention"}}`)
	h, err := hookinboxtest.Slack("slack_secret").Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for secret, wantOK := range map[string]bool{"slack_secret": true, "other": false} {
		if err := slackGoAccepts(h, body, secret); (err == nil) != wantOK {
			t.Errorf("secret %s: slack-go Ensure = %v, want ok %t", secret, err, wantOK)
		}
	}
}
