package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"
)

// GitHub returns a signer for GitHub's scheme: X-Hub-Signature-256, "sha256=" and the
// hex HMAC-SHA256 of the body under secret. It sends the id as X-GitHub-Delivery and
// the type as X-GitHub-Event, verbatim: give the event name ("issues"), since
// receivers append the body's action themselves. GitHub signs no timestamp, so at is
// unused.
func GitHub(secret string) EventSigner { return githubSigner{secret} }

type githubSigner struct{ secret string }

func (s githubSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return signFromBody(s, "github", body, at, "X-GitHub-Delivery", "X-GitHub-Event")
}

func (s githubSigner) SignEvent(body []byte, _ time.Time, id, typ string) (http.Header, error) {
	if err := needEvent("github", "X-GitHub-Delivery", id, "X-GitHub-Event", typ); err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, []byte(s.secret))
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	h.Set("X-GitHub-Delivery", id)
	h.Set("X-GitHub-Event", typ)
	return h, nil
}
