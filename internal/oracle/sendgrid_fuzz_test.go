package oracle_test

import "testing"

// FuzzSendGridHeaders checks that whatever provider.SendGrid accepts, sendgrid-go's
// VerifySignature accepts too: the oracle half of provider's FuzzSendGridHeaders,
// whose seeds it shares.
func FuzzSendGridHeaders(f *testing.F) {
	body := []byte(`[{"event":"delivered","sg_event_id":"e1"}]`)
	signed := sendgridSigned(sendgridKey, testNow, body)
	ts, good := signed.Get("X-Twilio-Email-Event-Webhook-Timestamp"), signed.Get("X-Twilio-Email-Event-Webhook-Signature")
	f.Add(ts, good, body)
	f.Add(ts, good+"=", body)

	public := sendgridPublic(sendgridKey)
	s := newSendGrid(f, public)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := sendgridHeader("", "")
		h.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
		h.Set("X-Twilio-Email-Event-Webhook-Signature", sig)
		if _, err := s.Verify(h, body); err != nil {
			return
		}
		if !sendgridGoAccepts(h, body, public) {
			t.Fatalf("accepted a request sendgrid-go refuses")
		}
	})
}
