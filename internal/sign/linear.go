package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// Linear returns a signer for Linear's scheme: Linear-Signature, the hex
// HMAC-SHA256 of the body under secret. It sends the id as Linear-Delivery and the
// type's entity (before its first dot) as Linear-Event. Linear's timestamp is in the
// body (webhookTimestamp, Unix milliseconds), which the signer does not change: give
// a body that carries the time it is sent at. at is unused.
func Linear(secret string) EventSigner { return linearSigner{secret} }

type linearSigner struct{ secret string }

func (s linearSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return signFromBody(s, "linear", body, at, "Linear-Delivery", "")
}

func (s linearSigner) SignEvent(body []byte, _ time.Time, id, typ string) (http.Header, error) {
	if err := needEvent("linear", "Linear-Delivery", id, "", ""); err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, []byte(s.secret))
	mac.Write(body)
	h := http.Header{}
	h.Set("Linear-Signature", hex.EncodeToString(mac.Sum(nil)))
	h.Set("Linear-Delivery", id)
	if entity, _, _ := strings.Cut(typ, "."); entity != "" {
		h.Set("Linear-Event", entity)
	}
	return h, nil
}
