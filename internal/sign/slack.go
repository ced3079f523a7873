package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Slack returns a signer for Slack's v0 scheme: X-Slack-Request-Timestamp, and
// X-Slack-Signature, "v0=" and the hex HMAC-SHA256 of "v0:<timestamp>:<body>" under
// secret. Slack's event id and type are in the body (event_id, event.type).
func Slack(secret string) Signer { return slackSigner{secret} }

type slackSigner struct{ secret string }

func (s slackSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return signV0(s.secret, "X-Slack-Request-Timestamp", "X-Slack-Signature", body, at), nil
}

// signV0 returns the headers of the v0 scheme that Slack and Zoom share under their
// own names: the timestamp, and "v0=" and the hex HMAC-SHA256 of
// "v0:<timestamp>:<body>" under secret.
func signV0(secret, timestampHeader, signatureHeader string, body []byte, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	h := http.Header{}
	h.Set(timestampHeader, ts)
	h.Set(signatureHeader, "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}
