package provider_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// slackBody is an event_callback with irregular spacing, so that re-serializing it
// changes its bytes.
var slackBody = []byte(`{"token": "XXYYZZ",  "team_id": "T123ABC456", "type": "event_callback",
  "event_id": "Ev08MFMKH6", "event_time": 1700000000,
  "event": {"type": "app_mention", "text": "` + testBodyMarker + `"}}`)

// slackSignature returns Slack's v0 signature of body at ts, computed directly from the
// definition.
func slackSignature(secret, ts string, body []byte) string {
	return "v0=" + hexMAC(sha256.New, secret, []byte("v0:"+ts+":"), body)
}

func slackHeader(ts, sig string) http.Header {
	h := http.Header{}
	if ts != "" {
		h.Set("X-Slack-Request-Timestamp", ts)
	}
	if sig != "" {
		h.Set("X-Slack-Signature", sig)
	}
	return h
}

// slackSigned returns the headers of body signed with secret at at.
func slackSigned(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	return slackHeader(ts, slackSignature(secret, ts, body))
}

func newTestSlack(t testing.TB, now func() time.Time, secrets ...string) *provider.Slack {
	t.Helper()
	s, err := provider.NewSlack(provider.SlackConfig{Secrets: secrets, NowFunc: now})
	if err != nil {
		t.Fatalf("NewSlack: %v", err)
	}
	return s
}

func fixedNow() time.Time { return testNow }

func TestSlackNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestSlack(t, fixedNow, testSecret)
	if got := v.Name(); got != "slack" {
		t.Errorf("Name() = %q, want %q", got, "slack")
	}
	if got := v.RetryWindow(); got != time.Hour {
		t.Errorf("RetryWindow() = %s, want 1h", got)
	}
}

func TestSlackVerifies(t *testing.T) {
	t.Parallel()

	got, err := newTestSlack(t, fixedNow, testSecret).Verify(slackSigned(testSecret, testNow, slackBody), slackBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != "Ev08MFMKH6" || got.Type != "app_mention" || !bytes.Equal(got.Body, slackBody) ||
		got.SecretIndex != 0 || !got.Timestamp.Equal(testNow) {
		t.Errorf("Verify = %+v", got)
	}
}

func TestSlackRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestSlack(t, fixedNow, testSecret), slackRejections(), testSecret, testBodyMarker)
}

// slackRejections returns the requests a Slack verifier of testSecret at testNow must
// refuse.
func slackRejections() []rejection {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := slackSignature(testSecret, ts, slackBody)
	h := func(sig string) http.Header { return slackHeader(ts, sig) }

	emptySig := h("")
	emptySig.Set("X-Slack-Signature", "")
	twoSigs := h(good)
	twoSigs.Add("X-Slack-Signature", good)
	twoTimestamps := h(good)
	twoTimestamps.Add("X-Slack-Request-Timestamp", ts)
	signedAt := func(at time.Time) http.Header { return slackSigned(testSecret, at, slackBody) }

	return []rejection{
		{"no header", http.Header{}, slackBody, provider.ErrMissingSignature},
		{"nil header", nil, slackBody, provider.ErrMissingSignature},
		{"no signature", h(""), slackBody, provider.ErrMissingSignature},
		{"empty signature header", emptySig, slackBody, provider.ErrMissingSignature},
		{"no timestamp", slackHeader("", good), slackBody, provider.ErrMissingSignature},
		{"two signature headers", twoSigs, slackBody, provider.ErrMalformedSignature},
		{"two timestamp headers", twoTimestamps, slackBody, provider.ErrMalformedSignature},
		{"garbage", h("garbage"), slackBody, provider.ErrMalformedSignature},
		{"header too long", h(good + strings.Repeat("0", 8<<10)), slackBody, provider.ErrMalformedSignature},
		{"timestamp not a number", slackHeader("soon", good), slackBody, provider.ErrMalformedSignature},
		{"timestamp signed", slackHeader("+"+ts, slackSignature(testSecret, "+"+ts, slackBody)), slackBody, provider.ErrMalformedSignature},
		{"timestamp negative", slackHeader("-1", slackSignature(testSecret, "-1", slackBody)), slackBody, provider.ErrMalformedSignature},
		{"timestamp too long", slackHeader("0"+strings.Repeat("0", 19)+ts, good), slackBody, provider.ErrMalformedSignature},
		{"timestamp overflows", slackHeader("9999999999999999999", good), slackBody, provider.ErrMalformedSignature},
		{"wrong secret", slackSigned(otherSecret, testNow, slackBody), slackBody, provider.ErrNoValidSignature},
		{"truncated signature", h(good[:35]), slackBody, provider.ErrNoValidSignature},
		{"empty signature", h("v0="), slackBody, provider.ErrNoValidSignature},
		{"last digit changed", h(tamper.LastHexChanged(good)), slackBody, provider.ErrNoValidSignature},
		{"non-hex signature", h("v0=" + strings.Repeat("zz", 32)), slackBody, provider.ErrNoValidSignature},
		{"one byte changed in body", h(good), tamper.OneByteChanged(slackBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", h(good), tamper.Reserialized(slackBody), provider.ErrNoValidSignature},
		{"empty body", h(good), nil, provider.ErrNoValidSignature},
		{"signature for another timestamp", slackHeader(strconv.FormatInt(testNow.Unix()+1, 10), good), slackBody, provider.ErrNoValidSignature},
		{"unknown version alone (v1)", h("v1=" + good[3:]), slackBody, provider.ErrNoValidSignature},
		{"too old", signedAt(testNow.Add(-provider.DefaultTolerance - time.Second)), slackBody, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", signedAt(testNow.Add(provider.DefaultTolerance + time.Second)), slackBody, provider.ErrTimestampOutOfTolerance},
		{"epoch", signedAt(time.Unix(0, 0)), slackBody, provider.ErrTimestampOutOfTolerance},
	}
}

func TestSlackTolerance(t *testing.T) {
	t.Parallel()

	for _, skew := range []time.Duration{-provider.DefaultTolerance, provider.DefaultTolerance, -time.Minute, time.Minute} {
		s := newTestSlack(t, fixedNow, testSecret)
		if _, err := s.Verify(slackSigned(testSecret, testNow.Add(skew), slackBody), slackBody); err != nil {
			t.Errorf("signed %s from now: Verify: %v", skew, err)
		}
	}
	s, err := provider.NewSlack(provider.SlackConfig{Secrets: []string{testSecret}, Tolerance: 10 * time.Minute, NowFunc: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, skew := range []time.Duration{-9 * time.Minute, 9 * time.Minute} {
		if _, err := s.Verify(slackSigned(testSecret, testNow.Add(skew), slackBody), slackBody); err != nil {
			t.Errorf("tolerance 10m, signed %s from now: Verify: %v", skew, err)
		}
	}
}

func TestSlackRotation(t *testing.T) {
	t.Parallel()

	s := newTestSlack(t, fixedNow, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := s.Verify(slackSigned(secret, testNow, slackBody), slackBody)
		if err != nil {
			t.Fatalf("secret %d: Verify: %v", i, err)
		}
		if got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex = %d", i, got.SecretIndex)
		}
	}
}

func TestSlackURLVerification(t *testing.T) {
	t.Parallel()

	s := newTestSlack(t, fixedNow, testSecret)
	body := []byte(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	got, err := s.Verify(slackSigned(testSecret, testNow, body), body)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.Type != "url_verification" || got.ID != "url_verification:3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("ID, Type = %q, %q", got.ID, got.Type)
	}

	var c provider.Challenger = s
	response, ok := c.Challenge(got)
	if !ok || string(response) != `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}` {
		t.Errorf("Challenge = %s, %t", response, ok)
	}

	event, err := s.Verify(slackSigned(testSecret, testNow, slackBody), slackBody)
	if err != nil {
		t.Fatal(err)
	}
	if response, ok := c.Challenge(event); ok || response != nil {
		t.Errorf("Challenge(event_callback) = %s, %t, want nil, false", response, ok)
	}
}

// TestSlackURLVerificationIsSigned checks that a challenge is only answered after its
// signature verified: an unsigned one is refused like any request.
func TestSlackURLVerificationIsSigned(t *testing.T) {
	t.Parallel()

	body := []byte(`{"challenge":"c","type":"url_verification"}`)
	_, err := newTestSlack(t, fixedNow, testSecret).Verify(slackSigned(otherSecret, testNow, body), body)
	if !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("Verify error = %v, want %v", err, provider.ErrNoValidSignature)
	}
}

func TestSlackUnparsableEvent(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		body     string
		wantText string
	}{
		{"no event_id", `{"type":"event_callback","event":{"type":"message"}}`, "no event_id"},
		{"no event", `{"type":"event_callback","event_id":"Ev1"}`, "no event.type"},
		{"event not an object", `{"type":"event_callback","event_id":"Ev1","event":"message"}`, "no event.type"},
		{"event type not a string", `{"type":"event_callback","event_id":"Ev1","event":{"type":1}}`, "event.type is not a string"},
		{"numeric event_id", `{"type":"event_callback","event_id":1,"event":{"type":"message"}}`, "event_id is not a string"},
		{"url_verification without challenge", `{"type":"url_verification"}`, "no challenge"},
		{"url_verification with empty challenge", `{"type":"url_verification","challenge":""}`, "no challenge"},
		{"app_rate_limited", `{"type":"app_rate_limited","team_id":"T1","minute_rate_limited":1518467820}`, "no event_id"},
		{"form-encoded", `payload=%7B%7D`, "not a JSON object"},
		{"array", `[]`, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			body := []byte(tt.body)
			_, err := newTestSlack(t, fixedNow, testSecret).Verify(slackSigned(testSecret, testNow, body), body)
			if !errors.Is(err, provider.ErrUnparsableEvent) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Verify error = %v, want %v mentioning %q", err, provider.ErrUnparsableEvent, tt.wantText)
			}
		})
	}
}
