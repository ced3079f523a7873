package hookinboxtest_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
)

// Test keys of the schemes the provider signs with its private key.
var (
	discordTestKey  = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	sendgridTestKey = func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	}()
)

// privateKeys are the keys as SignerFor (and `hookinbox send`) take them.
func privateKeys() map[string]string {
	der, err := x509.MarshalPKCS8PrivateKey(sendgridTestKey)
	if err != nil {
		panic(err)
	}
	return map[string]string{
		"discord":  hex.EncodeToString(discordTestKey.Seed()),
		"sendgrid": base64.StdEncoding.EncodeToString(der),
	}
}
