package oracle_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// discordBody is an APPLICATION_COMMAND interaction with irregular spacing.
var discordBody = []byte(`{"id": "1234567890123456789",  "application_id": "987654321098765432",
  "type": 2, "token": "aW50ZXJhY3Rpb24", "data": {"name": "` + testBodyMarker + `"}}`)

// discordSignature returns k's signature of the timestamp as sent followed by body.
func discordSignature(k ed25519.PrivateKey, ts string, body []byte) string {
	return hex.EncodeToString(ed25519.Sign(k, append([]byte(ts), body...)))
}

func discordHeader(ts, sig string) http.Header {
	return headers("X-Signature-Timestamp", ts, "X-Signature-Ed25519", sig)
}

func discordSigned(k ed25519.PrivateKey, at time.Time, body []byte) http.Header {
	h, err := hookinboxtest.Discord(k).Sign(body, at)
	if err != nil {
		panic(err)
	}
	return h
}

// discordgoAccepts reports whether discordgo's VerifyInteraction accepts the
// request. It checks no timestamp.
func discordgoAccepts(h http.Header, body []byte, k ed25519.PrivateKey) bool {
	return discordgo.VerifyInteraction(request(h, body), k.Public().(ed25519.PublicKey))
}

func newDiscord(t testing.TB, k ed25519.PrivateKey) *provider.Discord {
	t.Helper()
	d, err := provider.NewDiscord(provider.DiscordConfig{PublicKeys: []string{hookinboxtest.DiscordPublicKey(k)}, NowFunc: fixedNow})
	if err != nil {
		t.Fatalf("NewDiscord: %v", err)
	}
	return d
}

// TestDiscord_VerifierAgreesWithDiscordgo cross-checks signature verdicts with
// discordgo's VerifyInteraction, on requests whose timestamps are all within the
// tolerance (discordgo checks none).
func TestDiscord_VerifierAgreesWithDiscordgo(t *testing.T) {
	t.Parallel()

	d := newDiscord(t, discordKey)
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := discordSignature(discordKey, ts, discordBody)
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		wantOK bool
	}{
		{"good", discordHeader(ts, good), discordBody, true},
		{"uppercase hex", discordHeader(ts, strings.ToUpper(good)), discordBody, true},
		{"leading zero in timestamp, signed as sent", discordHeader("0"+ts, discordSignature(discordKey, "0"+ts, discordBody)), discordBody, true},
		{"leading zero in timestamp, signed without", discordHeader("0"+ts, good), discordBody, false},
		{"wrong key", discordSigned(discordOtherKey, testNow, discordBody), discordBody, false},
		{"truncated", discordHeader(ts, good[:126]), discordBody, false},
		{"last digit changed", discordHeader(ts, tamper.LastHexChanged(good)), discordBody, false},
		{"body changed", discordHeader(ts, good), tamper.OneByteChanged(discordBody, testBodyMarker), false},
		{"body re-serialized", discordHeader(ts, good), tamper.Reserialized(discordBody), false},
		{"other timestamp", discordHeader(strconv.FormatInt(testNow.Unix()+1, 10), good), discordBody, false},
		{"no timestamp", discordHeader("", good), discordBody, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, ours := d.Verify(tt.header, tt.body)
			theirs := discordgoAccepts(tt.header, tt.body, discordKey)
			if (ours == nil) != tt.wantOK || theirs != tt.wantOK {
				t.Errorf("ours: %v, discordgo: %t, want ok %t", ours, theirs, tt.wantOK)
			}
		})
	}
}

func TestDiscord_SignerAcceptedByDiscordgo(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"1","type":2,"data":{"name":"ping"}}`)
	h := discordSigned(discordKey, time.Now(), body)
	for name, key := range map[string]ed25519.PrivateKey{"the key": discordKey, "another key": discordOtherKey} {
		if got := discordgoAccepts(h, body, key); got != (name == "the key") {
			t.Errorf("%s: discordgo VerifyInteraction = %t", name, got)
		}
	}
}
