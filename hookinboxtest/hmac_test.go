package hookinboxtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

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
