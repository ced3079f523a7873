package oracle_test

import (
	"strings"
	"testing"
)

// FuzzDiscordHeaders checks that whatever provider.Discord accepts, discordgo's
// VerifyInteraction accepts too: the oracle half of provider's FuzzDiscordHeaders,
// whose seeds it shares.
func FuzzDiscordHeaders(f *testing.F) {
	body := []byte(`{"id":"1","type":1}`)
	ts := "1700000000"
	good := discordSignature(discordKey, ts, body)
	f.Add(ts, good, body)
	f.Add(ts, strings.ToUpper(good), body)

	d := newDiscord(f, discordKey)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := discordHeader("", "")
		h.Set("X-Signature-Timestamp", ts)
		h.Set("X-Signature-Ed25519", sig)
		if _, err := d.Verify(h, body); err != nil {
			return
		}
		if !discordgoAccepts(h, body, discordKey) {
			t.Fatalf("accepted a request discordgo refuses")
		}
	})
}
