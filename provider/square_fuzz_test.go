package provider_test

import (
	"crypto/hmac"
	"testing"
)

// FuzzSquareHeader checks that nothing verifies that was not signed: whenever Verify
// accepts, the header is the HMAC of the notification URL and the body.
func FuzzSquareHeader(f *testing.F) {
	body := []byte(`{"event_id":"e1","type":"payment.updated"}`)
	good := squareSignature(fuzzSecret, squarePublicURL, body)
	f.Add(good, body)
	f.Add(good[:43]+"A", body)
	f.Add(squareSignature(fuzzSecret, "", body), body)
	f.Add("", []byte(nil))

	v := newTestSquare(f, squarePublicURL, fuzzSecret)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		got, err := v.Verify(squareHeader(sig), body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if !hmac.Equal([]byte(sig), []byte(squareSignature(fuzzSecret, squarePublicURL, body))) {
			t.Fatalf("accepted signature %q", sig)
		}
		if got.ID == "" || got.Type == "" {
			t.Fatalf("Verify = %+v", got)
		}
	})
}
