package hookinboxtest_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"testing"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// DiscordPublicKey writes the public key in hex, as the Developer Portal shows it.
// (internal/oracle checks that discordgo accepts what Discord signs with the key.)
func TestDiscordPublicKey(t *testing.T) {
	t.Parallel()

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
