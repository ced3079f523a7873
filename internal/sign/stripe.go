package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Stripe returns a signer for Stripe's v1 scheme with secret (whsec_...). With more
// than one secret it sends one v1 signature per secret, as Stripe does while an old
// secret is still active.
func Stripe(secrets ...string) Signer { return stripeSigner{secrets} }

type stripeSigner struct{ secrets []string }

func (s stripeSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	ts := strconv.FormatInt(at.Unix(), 10)
	header := "t=" + ts
	for _, secret := range s.secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts))
		mac.Write([]byte("."))
		mac.Write(body)
		header += ",v1=" + hex.EncodeToString(mac.Sum(nil))
	}
	h := http.Header{}
	h.Set("Stripe-Signature", header)
	return h, nil
}
