package provider_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"
)

// FuzzLinearHeader checks that nothing verifies that was not signed: whenever
// Verify accepts, the header is the hex HMAC of the body.
func FuzzLinearHeader(f *testing.F) {
	body := linearBody(testNow)
	good := hexMAC(sha256.New, fuzzSecret, body)
	f.Add(good, body)
	f.Add(strings.ToUpper(good), body)
	f.Add(good[:62], body)
	f.Add("", []byte(nil))

	v := newTestLinear(f, fixedNow, fuzzSecret)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		got, err := v.Verify(linearHeader(sig, linearDelivery), body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if !hmac.Equal([]byte(strings.ToLower(sig)), []byte(hexMAC(sha256.New, fuzzSecret, body))) {
			t.Fatalf("accepted signature %q", sig)
		}
		if got.ID == "" || got.Type == "" {
			t.Fatalf("Verify = %+v", got)
		}
	})
}
