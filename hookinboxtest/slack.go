package hookinboxtest

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
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(s.secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h, nil
}
