package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Paddle returns a signer for Paddle Billing's scheme: Paddle-Signature,
// "ts=<unix>;h1=<hex>", h1 the HMAC-SHA256 of "<ts>:<body>" under the secret key,
// with one h1 per secret. The event's id and type are in the body (event_id,
// event_type).
func Paddle(secrets ...string) Signer { return paddleSigner{secrets} }

type paddleSigner struct{ secrets []string }

func (s paddleSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	ts := strconv.FormatInt(at.Unix(), 10)
	parts := []string{"ts=" + ts}
	for _, secret := range s.secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts + ":"))
		mac.Write(body)
		parts = append(parts, "h1="+hex.EncodeToString(mac.Sum(nil)))
	}
	h := http.Header{}
	h.Set("Paddle-Signature", strings.Join(parts, ";"))
	return h, nil
}
