package provider_test

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// The example of paddle-go-sdk (example_webhook_verifier_test.go): secret key,
// payload and Paddle-Signature.
const (
	paddleVectorSecret = "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr"
	paddleVectorHeader = "ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8"
	paddleVectorBody   = `{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`
)

var paddleBody = []byte(`{"event_id": "evt_01hv8wt8nffez4p2t6typn4a5j", "event_type": "transaction.completed",
  "occurred_at": "2024-04-12T10:18:49.621022Z", "notification_id": "ntf_01hv8wt8v2g4r3ypc0r9gwbqfb",
  "data": {"id": "txn_01hv8wptq8987qeep44cyrewp9", "note": "` + testBodyMarker + `"}}`)

func paddleSignature(secret, ts string, body []byte) string {
	return hexMAC(sha256.New, secret, []byte(ts+":"), body)
}

func paddleHeader(value string) http.Header {
	h := http.Header{}
	if value != "" {
		h.Set("Paddle-Signature", value)
	}
	return h
}

func paddleSigned(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	return paddleHeader("ts=" + ts + ";h1=" + paddleSignature(secret, ts, body))
}

// paddleSignedBy reports whether h's Paddle-Signature has one ts and an h1 (in
// either case) that is secret's signature of ts:body: the signature check alone, no
// timestamp.
func paddleSignedBy(secret string, h http.Header, body []byte) bool {
	var ts string
	var h1 []string
	for _, entry := range strings.Split(h.Get("Paddle-Signature"), ";") {
		key, value, _ := strings.Cut(entry, "=")
		switch {
		case key == "ts" && ts != "":
			return false
		case key == "ts":
			ts = value
		case key == "h1":
			h1 = append(h1, strings.ToLower(value))
		}
	}
	return ts != "" && slices.Contains(h1, paddleSignature(secret, ts, body))
}

func newTestPaddle(t testing.TB, now func() time.Time, secrets ...string) *provider.Paddle {
	t.Helper()
	v, err := provider.NewPaddle(provider.PaddleConfig{Secrets: secrets, NowFunc: now})
	if err != nil {
		t.Fatalf("NewPaddle: %v", err)
	}
	return v
}

func TestPaddleNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestPaddle(t, fixedNow, testSecret)
	if v.Name() != "paddle" || v.RetryWindow() != 72*time.Hour {
		t.Errorf("Name, RetryWindow = %q, %s", v.Name(), v.RetryWindow())
	}
}

func TestPaddlePublishedVector(t *testing.T) {
	t.Parallel()

	v := newTestPaddle(t, func() time.Time { return time.Unix(1710929255, 0) }, paddleVectorSecret)
	got, err := v.Verify(paddleHeader(paddleVectorHeader), []byte(paddleVectorBody))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != "evt_01hsdn97563968dy0szkmgjwh3" || got.Type != "price.created" || got.Timestamp.Unix() != 1710929255 {
		t.Errorf("Verify = %+v", got)
	}
}

func TestPaddleRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestPaddle(t, fixedNow, testSecret), paddleRejections(), testSecret, testBodyMarker)
}

func paddleRejections() []rejection {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := paddleSignature(testSecret, ts, paddleBody)
	h := func(v string) http.Header { return paddleHeader(v) }
	twoHeaders := h("ts=" + ts + ";h1=" + good)
	twoHeaders.Add("Paddle-Signature", "ts="+ts+";h1="+good)
	signedAt := func(at time.Time) http.Header { return paddleSigned(testSecret, at, paddleBody) }
	return []rejection{
		{"no header", http.Header{}, paddleBody, provider.ErrMissingSignature},
		{"two headers", twoHeaders, paddleBody, provider.ErrMalformedSignature},
		{"garbage", h("garbage"), paddleBody, provider.ErrMalformedSignature},
		{"no ts", h("h1=" + good), paddleBody, provider.ErrMalformedSignature},
		{"two ts", h("ts=" + ts + ";ts=" + ts + ";h1=" + good), paddleBody, provider.ErrMalformedSignature},
		{"ts not a number", h("ts=soon;h1=" + good), paddleBody, provider.ErrMalformedSignature},
		{"no h1", h("ts=" + ts), paddleBody, provider.ErrNoValidSignature},
		{"only an unknown scheme", h("ts=" + ts + ";h2=" + good), paddleBody, provider.ErrNoValidSignature},
		{"wrong secret", paddleSigned(otherSecret, testNow, paddleBody), paddleBody, provider.ErrNoValidSignature},
		{"truncated signature", h("ts=" + ts + ";h1=" + good[:63]), paddleBody, provider.ErrNoValidSignature},
		{"last digit changed", h("ts=" + ts + ";h1=" + tamper.LastHexChanged(good)), paddleBody, provider.ErrNoValidSignature},
		{"one byte changed in body", h("ts=" + ts + ";h1=" + good), tamper.OneByteChanged(paddleBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", h("ts=" + ts + ";h1=" + good), tamper.Reserialized(paddleBody), provider.ErrNoValidSignature},
		{"too old", signedAt(testNow.Add(-provider.DefaultTolerance - time.Second)), paddleBody, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", signedAt(testNow.Add(provider.DefaultTolerance + time.Second)), paddleBody, provider.ErrTimestampOutOfTolerance},
	}
}

func TestPaddleRotation(t *testing.T) {
	t.Parallel()

	v := newTestPaddle(t, fixedNow, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := v.Verify(paddleSigned(secret, testNow, paddleBody), paddleBody)
		if err != nil || got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex %d, error %v", i, got.SecretIndex, err)
		}
	}
	// Two h1 in one header, one per secret on Paddle's side: either matches.
	ts := strconv.FormatInt(testNow.Unix(), 10)
	both := paddleHeader("ts=" + ts + ";h1=" + paddleSignature("unknown", ts, paddleBody) + ";h1=" + paddleSignature(testSecret, ts, paddleBody))
	if got, err := newTestPaddle(t, fixedNow, testSecret).Verify(both, paddleBody); err != nil || got.SecretIndex != 0 {
		t.Errorf("two h1: %+v, %v", got, err)
	}
}

func TestPaddleUnparsableEvent(t *testing.T) {
	t.Parallel()

	v := newTestPaddle(t, fixedNow, testSecret)
	for _, body := range []string{`{"event_type":"x"}`, `{"event_id":"e"}`, `[]`, `{"event_id":"e","event_type":7}`} {
		b := []byte(body)
		if _, err := v.Verify(paddleSigned(testSecret, testNow, b), b); !errors.Is(err, provider.ErrUnparsableEvent) {
			t.Errorf("%s: Verify error %v", body, err)
		}
	}
}
