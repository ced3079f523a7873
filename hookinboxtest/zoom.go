package hookinboxtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Zoom returns a signer for Zoom's v0 scheme: x-zm-request-timestamp, and
// x-zm-signature, "v0=" and the hex HMAC-SHA256 of "v0:<timestamp>:<body>" under the
// secret token. The event's type is in the body ("event"), and Zoom sends no id.
func Zoom(secret string) Signer { return zoomSigner{secret} }

type zoomSigner struct{ secret string }

func (s zoomSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(s.secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Zm-Request-Timestamp", ts)
	h.Set("X-Zm-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h, nil
}
