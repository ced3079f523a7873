package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"
)

// Square returns a signer for Square's scheme: x-square-hmacsha256-signature, the
// base64 HMAC-SHA256 under signatureKey of the notification URL followed by the
// body. notificationURL is the subscription's URL as configured in Square ("" to
// sign the URL each request is sent to). The event's id and type are in the body
// (event_id, type); Square signs no timestamp, so at is unused.
func Square(signatureKey, notificationURL string) URLSigner {
	return squareSigner{signatureKey, notificationURL}
}

type squareSigner struct{ key, publicURL string }

func (s squareSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return s.SignURL("", body, at)
}

func (s squareSigner) SignURL(target string, body []byte, _ time.Time) (http.Header, error) {
	signed, err := urlToSign("square", s.publicURL, target)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, []byte(s.key))
	mac.Write([]byte(signed))
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Square-Hmacsha256-Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return h, nil
}
