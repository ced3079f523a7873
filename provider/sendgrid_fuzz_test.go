package provider_test

import (
	"testing"
)

// FuzzSendGridHeaders checks that nothing verifies that was not signed: whenever
// Verify accepts, the request is signed by the test key over the timestamp as sent
// and the body. (internal/oracle's FuzzSendGridHeaders checks that sendgrid-go's
// VerifySignature accepts the same request.)
func FuzzSendGridHeaders(f *testing.F) {
	body := []byte(`[{"event":"delivered","sg_event_id":"e1"}]`)
	ts := "1700000000"
	good := sendgridSignature(sendgridKey, ts, body)
	f.Add(ts, good, body)
	f.Add(ts, good+"=", body)
	f.Add("0"+ts, good, body)
	f.Add(ts, good[:20], body)
	f.Add("", "", []byte(nil))

	s := newTestSendGrid(f, fixedNow, sendgridPublic(sendgridKey))
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := sendgridHeader("", "")
		h.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
		h.Set("X-Twilio-Email-Event-Webhook-Signature", sig)
		got, err := s.Verify(h, body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if !sendgridSignedBy(&sendgridKey.PublicKey, h, body) {
			t.Fatalf("accepted a request the test key did not sign")
		}
		if got.ID == "" || got.Type == "" || string(got.Body) != string(body) {
			t.Fatalf("Verify = %+v", got)
		}
	})
}
