package provider

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// Public keys never need hiding, but errors still name a key by its position: a
// value pasted into the wrong place may be a secret.

// ed25519Keys parses the hex public keys of the named scheme (64 hex digits each,
// as Discord shows them). It refuses no keys at all and a key that is not 32 bytes
// of hex.
func ed25519Keys(scheme string, keys []string) ([]ed25519.PublicKey, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("provider: %s: no public keys configured", scheme)
	}
	out := make([]ed25519.PublicKey, len(keys))
	for i, k := range keys {
		if strings.TrimSpace(k) != k || k == "" {
			return nil, fmt.Errorf("provider: %s: public key %d is empty or has surrounding whitespace", scheme, i)
		}
		b, err := hex.DecodeString(k)
		if err != nil || len(b) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("provider: %s: public key %d is not %d hex digits (an Ed25519 public key)", scheme, i, 2*ed25519.PublicKeySize)
		}
		out[i] = ed25519.PublicKey(b)
	}
	return out, nil
}

// p256Keys parses the public keys of the named scheme: standard base64 of a DER
// SubjectPublicKeyInfo, as SendGrid shows them, of an ECDSA key on P-256. It refuses
// no keys at all, a key that does not parse, and a key of another type or curve.
func p256Keys(scheme string, keys []string) ([]*ecdsa.PublicKey, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("provider: %s: no public keys configured", scheme)
	}
	out := make([]*ecdsa.PublicKey, len(keys))
	for i, k := range keys {
		if strings.TrimSpace(k) != k || k == "" {
			return nil, fmt.Errorf("provider: %s: public key %d is empty or has surrounding whitespace", scheme, i)
		}
		der, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			return nil, fmt.Errorf("provider: %s: public key %d is not standard base64", scheme, i)
		}
		pub, err := x509.ParsePKIXPublicKey(der)
		if err != nil {
			return nil, fmt.Errorf("provider: %s: public key %d is not a DER public key", scheme, i)
		}
		ec, ok := pub.(*ecdsa.PublicKey)
		if !ok || ec.Curve != elliptic.P256() {
			return nil, fmt.Errorf("provider: %s: public key %d is not an ECDSA P-256 key", scheme, i)
		}
		out[i] = ec
	}
	return out, nil
}
