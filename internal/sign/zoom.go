package sign

import (
	"net/http"
	"time"
)

// Zoom returns a signer for Zoom's v0 scheme: x-zm-request-timestamp, and
// x-zm-signature, "v0=" and the hex HMAC-SHA256 of "v0:<timestamp>:<body>" under the
// secret token. The event's type is in the body ("event"), and Zoom sends no id.
func Zoom(secret string) Signer { return zoomSigner{secret} }

type zoomSigner struct{ secret string }

func (s zoomSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return signV0(s.secret, "X-Zm-Request-Timestamp", "X-Zm-Signature", body, at), nil
}
