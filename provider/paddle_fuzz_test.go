package provider_test

import (
	"regexp"
	"testing"
)

// FuzzPaddleHeader checks that nothing verifies that paddle-go-sdk refuses, among
// headers of the SDK's form (one ts, one h1), and that nothing verifies whose h1 is
// not the HMAC of ts:body.
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
		if paddleSDKForm.MatchString(header) && !paddleSDKAccepts(paddleHeader(header), body, fuzzSecret) {
			t.Fatalf("accepted %q, which paddle-go-sdk refuses", header)
		}
		if got.ID == "" || got.Type == "" {
			t.Fatalf("Verify = %+v", got)
		}
	})
}

// paddleSDKForm is the header form paddle-go-sdk parses.
var paddleSDKForm = regexp.MustCompile(`^ts=(\d+);h1=([a-f0-9]{64})$`)
