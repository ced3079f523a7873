package hookinboxtest_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

func TestDiscord_AcceptedByDiscordgo(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"1","type":2,"data":{"name":"ping"}}`)
	h, err := hookinboxtest.Discord(discordTestKey).Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize))
	for name, key := range map[string]ed25519.PrivateKey{"the key": discordTestKey, "another key": other} {
		r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		r.Header = h
		if got := discordgo.VerifyInteraction(r, key.Public().(ed25519.PublicKey)); got != (name == "the key") {
			t.Errorf("%s: discordgo VerifyInteraction = %t", name, got)
		}
	}
	if got := hookinboxtest.DiscordPublicKey(discordTestKey); got != hex.EncodeToString(discordTestKey.Public().(ed25519.PublicKey)) {
		t.Errorf("DiscordPublicKey = %s", got)
	}
}

func TestParseDiscordKey(t *testing.T) {
	t.Parallel()

	for _, s := range []string{hex.EncodeToString(discordTestKey.Seed()), hex.EncodeToString(discordTestKey)} {
		k, err := hookinboxtest.ParseDiscordKey(s)
		if err != nil || !k.Equal(discordTestKey) {
			t.Errorf("ParseDiscordKey(%d hex digits) = %v", len(s), err)
		}
	}
	if _, err := hookinboxtest.ParseDiscordKey("abcd"); err == nil {
		t.Error("a 2-byte key parsed")
	}
}
