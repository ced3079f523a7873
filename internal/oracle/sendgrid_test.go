package oracle_test

import (
	"crypto/ecdsa"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sendgrid/sendgrid-go/helpers/eventwebhook"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// sendgridBody is one event, as SendGrid posts it: an array, irregular spacing.
var sendgridBody = []byte(`[{"email": "` + testBodyMarker + `@example.com", "timestamp": 1700000000,
  "event": "delivered", "sg_event_id": "ZGVsaXZlcmVkLTAtMTIzNDU2", "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"}]`)

func sendgridHeader(ts, sig string) http.Header {
	return headers("X-Twilio-Email-Event-Webhook-Timestamp", ts, "X-Twilio-Email-Event-Webhook-Signature", sig)
}

func sendgridSigned(k *ecdsa.PrivateKey, at time.Time, body []byte) http.Header {
	h, err := hookinboxtest.SendGrid(k).Sign(body, at)
	if err != nil {
		panic(err)
	}
	return h
}

func sendgridPublic(k *ecdsa.PrivateKey) string {
	public, err := hookinboxtest.SendGridPublicKey(k)
	if err != nil {
		panic(err)
	}
	return public
}

// sendgridGoAccepts reports whether sendgrid-go's eventwebhook.VerifySignature
// accepts the request. It checks no timestamp.
func sendgridGoAccepts(h http.Header, body []byte, publicKey string) bool {
	key, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(publicKey)
	if err != nil {
		panic(err)
	}
	ok, err := eventwebhook.VerifySignature(key, body, h.Get(eventwebhook.VerificationHTTPHeader), h.Get(eventwebhook.TimestampHTTPHeader))
	return ok && err == nil
}

func newSendGrid(t testing.TB, publicKey string) *provider.SendGrid {
	t.Helper()
	s, err := provider.NewSendGrid(provider.SendGridConfig{PublicKeys: []string{publicKey}, NowFunc: fixedNow})
	if err != nil {
		t.Fatalf("NewSendGrid: %v", err)
	}
	return s
}

// sendgrid-go verifies the example of its own tests, which provider's tests verify
// (helpers/eventwebhook/eventwebhook_test.go: publicKey, signature, timestamp, and
// the payload of generateTestPayload, which ends in CRLF).
func TestSendGrid_PublishedVectorAcceptedBySendGridGo(t *testing.T) {
	t.Parallel()

	payload := []byte(`[{"email":"hello@world.com","event":"dropped","reason":"Bounced Address","sg_event_id":"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA","sg_message_id":"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0","smtp-id":"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>","timestamp":1600112492}]` + "\r\n")
	h := sendgridHeader("1600112502", "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM=")
	if !sendgridGoAccepts(h, payload, "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==") {
		t.Error("sendgrid-go refuses its own example")
	}
}

// TestSendGrid_VerifierAgreesWithSendGridGo cross-checks signature verdicts with
// sendgrid-go's VerifySignature, on timestamps within the tolerance.
func TestSendGrid_VerifierAgreesWithSendGridGo(t *testing.T) {
	t.Parallel()

	public := sendgridPublic(sendgridKey)
	s := newSendGrid(t, public)
	signed := sendgridSigned(sendgridKey, testNow, sendgridBody)
	ts, good := signed.Get("X-Twilio-Email-Event-Webhook-Timestamp"), signed.Get("X-Twilio-Email-Event-Webhook-Signature")
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		wantOK bool
	}{
		{"good", sendgridHeader(ts, good), sendgridBody, true},
		{"another signature of the same", sendgridSigned(sendgridKey, testNow, sendgridBody), sendgridBody, true},
		{"wrong key", sendgridSigned(sendgridOtherKey, testNow, sendgridBody), sendgridBody, false},
		{"body changed", sendgridHeader(ts, good), tamper.OneByteChanged(sendgridBody, testBodyMarker), false},
		{"body re-serialized", sendgridHeader(ts, good), tamper.Reserialized(sendgridBody), false},
		{"other timestamp", sendgridHeader(strconv.FormatInt(testNow.Unix()+1, 10), good), sendgridBody, false},
		{"truncated", sendgridHeader(ts, good[:len(good)-4]), sendgridBody, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, ours := s.Verify(tt.header, tt.body)
			theirs := sendgridGoAccepts(tt.header, tt.body, public)
			if (ours == nil) != tt.wantOK || theirs != tt.wantOK {
				t.Errorf("ours: %v, sendgrid-go: %t, want ok %t", ours, theirs, tt.wantOK)
			}
		})
	}
}

func TestSendGrid_SignerAcceptedBySendGridGo(t *testing.T) {
	t.Parallel()

	body := []byte(`[{"event":"delivered","sg_event_id":"e1"}]`)
	h := sendgridSigned(sendgridKey, time.Now(), body)
	if !sendgridGoAccepts(h, body, sendgridPublic(sendgridKey)) {
		t.Error("sendgrid-go refuses the signature")
	}
	if sendgridGoAccepts(h, append(body, ' '), sendgridPublic(sendgridKey)) {
		t.Error("sendgrid-go accepts another body")
	}
}
