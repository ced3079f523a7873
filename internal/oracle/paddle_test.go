package oracle_test

import (
	"crypto/sha256"
	"net/http"
	"strconv"
	"testing"
	"time"

	paddle "github.com/PaddleHQ/paddle-go-sdk/v4"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

var paddleBody = []byte(`{"event_id": "evt_01hv8wt8nffez4p2t6typn4a5j", "event_type": "transaction.completed",
  "occurred_at": "2024-04-12T10:18:49.621022Z", "notification_id": "ntf_01hv8wt8v2g4r3ypc0r9gwbqfb",
  "data": {"id": "txn_01hv8wptq8987qeep44cyrewp9", "note": "` + testBodyMarker + `"}}`)

func paddleSignature(secret, ts string, body []byte) string {
	return hexMAC(sha256.New, secret, []byte(ts+":"), body)
}

func paddleHeader(value string) http.Header { return headers("Paddle-Signature", value) }

func paddleSigned(secret string, at time.Time, body []byte) http.Header {
	h, err := hookinboxtest.Paddle(secret).Sign(body, at)
	if err != nil {
		panic(err)
	}
	return h
}

// paddleSDKAccepts reports whether paddle-go-sdk's WebhookVerifier accepts the
// request. It checks no timestamp unless configured to, and is not here.
func paddleSDKAccepts(h http.Header, body []byte, secret string, opts ...paddle.VerifierOption) bool {
	ok, err := paddle.NewWebhookVerifier(secret, opts...).Verify(request(h, body))
	return ok && err == nil
}

func newPaddle(t testing.TB, secret string) *provider.Paddle {
	t.Helper()
	v, err := provider.NewPaddle(provider.PaddleConfig{Secrets: []string{secret}, NowFunc: fixedNow})
	if err != nil {
		t.Fatalf("NewPaddle: %v", err)
	}
	return v
}

// paddle-go-sdk verifies the example of its own (example_webhook_verifier_test.go),
// which provider's tests verify and hookinboxtest's sign.
func TestPaddle_PublishedVectorAcceptedByPaddleSDK(t *testing.T) {
	t.Parallel()

	body := []byte(`{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`)
	h := paddleHeader("ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8")
	if !paddleSDKAccepts(h, body, "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr") {
		t.Error("paddle-go-sdk refuses its own example")
	}
}

// TestPaddle_VerifierAgreesWithPaddleSDK cross-checks signature verdicts with
// paddle-go-sdk's WebhookVerifier, on timestamps within the tolerance.
func TestPaddle_VerifierAgreesWithPaddleSDK(t *testing.T) {
	t.Parallel()

	v := newPaddle(t, testSecret)
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := paddleSignature(testSecret, ts, paddleBody)
	tests := []struct {
		name, header string
		body         []byte
		wantOK       bool
	}{
		{"good", "ts=" + ts + ";h1=" + good, paddleBody, true},
		{"wrong secret", "ts=" + ts + ";h1=" + paddleSignature(otherSecret, ts, paddleBody), paddleBody, false},
		{"body changed", "ts=" + ts + ";h1=" + good, tamper.OneByteChanged(paddleBody, testBodyMarker), false},
		{"body re-serialized", "ts=" + ts + ";h1=" + good, tamper.Reserialized(paddleBody), false},
		{"other timestamp", "ts=" + strconv.FormatInt(testNow.Unix()+1, 10) + ";h1=" + good, paddleBody, false},
		{"truncated", "ts=" + ts + ";h1=" + good[:63], paddleBody, false},
		{"no ts", "h1=" + good, paddleBody, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, ours := v.Verify(paddleHeader(tt.header), tt.body)
			theirs := paddleSDKAccepts(paddleHeader(tt.header), tt.body, testSecret)
			if (ours == nil) != tt.wantOK || theirs != tt.wantOK {
				t.Errorf("ours: %v, paddle-go-sdk: %t, want ok %t", ours, theirs, tt.wantOK)
			}
		})
	}
}

func TestPaddle_SignerAcceptedByPaddleSDK(t *testing.T) {
	t.Parallel()

	body := []byte(`{"event_id":"evt_1","event_type":"transaction.completed","data":{}}`)
	h := paddleSigned("pdl_ntfset_test", time.Now(), body)
	for secret, want := range map[string]bool{"pdl_ntfset_test": true, "pdl_ntfset_other": false} {
		if got := paddleSDKAccepts(h, body, secret, paddle.VerifierWithTimestampTolerance(time.Minute)); got != want {
			t.Errorf("secret %s: paddle-go-sdk Verify = %t, want %t", secret, got, want)
		}
	}
}
