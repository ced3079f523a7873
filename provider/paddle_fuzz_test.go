package provider_test

import (
	"testing"
)

// FuzzPaddleHeader checks that nothing verifies whose h1 is not the HMAC of ts:body
// for the header's one ts. (internal/oracle's FuzzPaddleHeader checks that
// paddle-go-sdk accepts the same request, among headers of the SDK's form.)
func FuzzPaddleHeader(f *testing.F) {
	body := []byte(`{"event_id":"evt_1","event_type":"transaction.completed"}`)
	good := "ts=1700000000;h1=" + paddleSignature(fuzzSecret, "1700000000", body)
	f.Add(good, body)
	f.Add(good+";h1="+paddleSignature("x", "1700000000", body), body)
	f.Add("ts=01700000000;h1="+paddleSignature(fuzzSecret, "01700000000", body), body)
	f.Add("ts=1700000000", body)
	f.Add("", []byte(nil))

	v := newTestPaddle(f, fixedNow, fuzzSecret)
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		got, err := v.Verify(paddleHeader(header), body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if !paddleSignedBy(fuzzSecret, paddleHeader(header), body) {
			t.Fatalf("accepted %q, which has no h1 of ts:body", header)
		}
		if got.ID == "" || got.Type == "" {
			t.Fatalf("Verify = %+v", got)
		}
	})
}
