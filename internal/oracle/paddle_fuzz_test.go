package oracle_test

import (
	"regexp"
	"testing"
)

// FuzzPaddleHeader checks that nothing provider.Paddle accepts is refused by
// paddle-go-sdk, among headers of the SDK's form (one ts, one h1): the oracle half of
// provider's FuzzPaddleHeader, whose seeds it shares.
func FuzzPaddleHeader(f *testing.F) {
	body := []byte(`{"event_id":"evt_1","event_type":"transaction.completed"}`)
	f.Add("ts=1700000000;h1="+paddleSignature(fuzzSecret, "1700000000", body), body)
	f.Add("ts=01700000000;h1="+paddleSignature(fuzzSecret, "01700000000", body), body)

	v := newPaddle(f, fuzzSecret)
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if _, err := v.Verify(paddleHeader(header), body); err != nil {
			return
		}
		if paddleSDKForm.MatchString(header) && !paddleSDKAccepts(paddleHeader(header), body, fuzzSecret) {
			t.Fatalf("accepted %q, which paddle-go-sdk refuses", header)
		}
	})
}

// paddleSDKForm is the header form paddle-go-sdk parses.
var paddleSDKForm = regexp.MustCompile(`^ts=(\d+);h1=([a-f0-9]{64})$`)
