package oracle_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"net/http"
	"time"
)

const (
	// testSecret is distinctive so that a leak into an error message is easy to find.
	testSecret  = "whsec_test_SECRET_must_not_leak_4f2a"
	otherSecret = "whsec_other_SECRET_must_not_leak_9c1d"

	// testBodyMarker is in every test body, where tamper.OneByteChanged changes it.
	testBodyMarker = "BODY_MUST_NOT_LEAK"

	// fuzzSecret signs the fuzz seeds, including those in testdata/fuzz (provider's
	// fuzz targets sign theirs with the same).
	fuzzSecret = "whsec_fuzz"
)

// testNow is the fixed clock of the verifiers, except where a library checks the
// timestamp against the real clock.
var testNow = time.Unix(1_700_000_000, 0)

func fixedNow() time.Time { return testNow }

// Keys of the schemes signed with a private key: the fixed seeds of provider's tests
// for Discord, so that failures reproduce, and keys made for this run for SendGrid.
var (
	discordKey       = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	discordOtherKey  = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
	sendgridKey      = mustECDSAKey()
	sendgridOtherKey = mustECDSAKey()
)

func mustECDSAKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// headers returns the header of the name, value pairs kv, leaving out empty values.
func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

// hexMAC and base64MAC return the HMAC of the concatenated parts under secret,
// computed from the definition, for signatures no signer makes (another hash, a
// timestamp written otherwise).
func hexMAC(newHash func() hash.Hash, secret string, parts ...[]byte) string {
	return hex.EncodeToString(macOf(newHash, secret, parts))
}

func base64MAC(newHash func() hash.Hash, secret string, parts ...[]byte) string {
	return base64.StdEncoding.EncodeToString(macOf(newHash, secret, parts))
}

func macOf(newHash func() hash.Hash, secret string, parts [][]byte) []byte {
	mac := hmac.New(newHash, []byte(secret))
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}

// request returns a POST of body with header h, as a library that reads the
// request takes it.
func request(h http.Header, body []byte) *http.Request {
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/hook", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	r.Header = h.Clone()
	return r
}
