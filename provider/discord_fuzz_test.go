package provider_test

import (
	"strings"
	"testing"
)

// FuzzDiscordHeaders checks that nothing verifies that was not signed: whenever
// Verify accepts, the signature is the test key's Ed25519 signature of the timestamp
// as sent and the body. (internal/oracle's FuzzDiscordHeaders checks that discordgo's
// VerifyInteraction accepts the same request.)
func FuzzDiscordHeaders(f *testing.F) {
	body := []byte(`{"id":"1","type":1}`)
	ts := "1700000000"
	good := discordSignature(discordKey, ts, body)
	f.Add(ts, good, body)
	f.Add(ts, strings.ToUpper(good), body)
	f.Add("0"+ts, good, body)
	f.Add(ts, good[:100], body)
	f.Add("", "", []byte(nil))

	d := newTestDiscord(f, fixedNow, discordKey)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := discordHeader("", "")
		h.Set("X-Signature-Timestamp", ts)
		h.Set("X-Signature-Ed25519", sig)
		got, err := d.Verify(h, body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if !discordSignedBy(discordKey, h, body) {
			t.Fatalf("accepted a request the test key did not sign")
		}
		if got.ID == "" || got.Type == "" || string(got.Body) != string(body) {
			t.Fatalf("Verify = %+v", got)
		}
	})
}
