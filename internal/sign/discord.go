package sign

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Discord returns a signer for Discord's interaction scheme: X-Signature-Timestamp,
// and X-Signature-Ed25519, the hex Ed25519 signature by key of the timestamp
// followed by the body. The interaction's id and type are in the body.
//
// Discord signs with its private key, which nobody else has: in tests, generate a
// key pair and configure the endpoint with DiscordPublicKey(key).
func Discord(key ed25519.PrivateKey) Signer { return discordSigner{key} }

// DiscordPublicKey returns key's public key as Discord's Developer Portal shows an
// application's: 64 hex digits, what an endpoint's public_keys take.
func DiscordPublicKey(key ed25519.PrivateKey) string {
	return hex.EncodeToString(key.Public().(ed25519.PublicKey))
}

// ParseDiscordKey reads an Ed25519 private key written in hex: its 32-byte seed or
// the 64-byte key. The error never quotes the key.
func ParseDiscordKey(s string) (ed25519.PrivateKey, error) {
	b, err := hex.DecodeString(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("discord: the private key is not hex")
	case len(b) == ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), nil
	case len(b) == ed25519.PrivateKeySize:
		return ed25519.PrivateKey(b), nil
	}
	return nil, fmt.Errorf("discord: the private key is %d bytes, want a %d-byte seed or a %d-byte key",
		len(b), ed25519.SeedSize, ed25519.PrivateKeySize)
}

type discordSigner struct{ key ed25519.PrivateKey }

func (s discordSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	ts := strconv.FormatInt(at.Unix(), 10)
	sig := ed25519.Sign(s.key, append([]byte(ts), body...))
	h := http.Header{}
	h.Set("X-Signature-Timestamp", ts)
	h.Set("X-Signature-Ed25519", hex.EncodeToString(sig))
	return h, nil
}
