package sign

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// KeyPairProviders are the providers that sign with a private key of their own, so
// that an endpoint is configured with the public key: discord (Ed25519) and sendgrid
// (ECDSA P-256).
var KeyPairProviders = []string{"discord", "sendgrid"}

// PublicKey returns the public key of private, a private key of provider as For
// takes it (discord: the Ed25519 seed or key in hex; sendgrid: the P-256 key as
// base64 DER), written as an endpoint's public_keys take it: discord's 64 hex
// digits, sendgrid's base64 DER SubjectPublicKeyInfo. It fails for a provider that
// signs with a shared secret. The error never quotes the key.
func PublicKey(provider, private string) (string, error) {
	switch provider {
	case "discord":
		key, err := ParseDiscordKey(private)
		if err != nil {
			return "", err
		}
		return DiscordPublicKey(key), nil
	case "sendgrid":
		key, err := ParseSendGridKey(private)
		if err != nil {
			return "", err
		}
		return SendGridPublicKey(key)
	}
	return "", errNoKeyPair(provider)
}

// GenerateKey returns a new key pair of provider: the private key as For takes it
// (discord: the Ed25519 seed in hex; sendgrid: the P-256 key as base64 of its PKCS #8
// DER) and the public key as PublicKey returns it.
func GenerateKey(provider string) (private, public string, err error) {
	switch provider {
	case "discord":
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return "", "", fmt.Errorf("discord: %w", err)
		}
		return hex.EncodeToString(key.Seed()), DiscordPublicKey(key), nil
	case "sendgrid":
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", fmt.Errorf("sendgrid: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return "", "", fmt.Errorf("sendgrid: %w", err)
		}
		public, err := SendGridPublicKey(key)
		if err != nil {
			return "", "", err
		}
		return base64.StdEncoding.EncodeToString(der), public, nil
	}
	return "", "", errNoKeyPair(provider)
}

func errNoKeyPair(provider string) error {
	return fmt.Errorf("%s signs with a shared secret, not a key pair (only %v have public keys)", provider, KeyPairProviders)
}
