package sign

import (
	"net/http"
	"time"
)

// GitLab returns a signer for GitLab's webhooks, which are not signed: the token is
// sent as it is in X-Gitlab-Token. It sends the id as Idempotency-Key and
// X-Gitlab-Event-UUID, and the type as X-Gitlab-Event (e.g. "Push Hook"). at is
// unused.
func GitLab(token string) EventSigner { return gitlabSigner{token} }

type gitlabSigner struct{ token string }

func (s gitlabSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return signFromBody(s, "gitlab", body, at, "X-Gitlab-Event-UUID", "X-Gitlab-Event")
}

func (s gitlabSigner) SignEvent(_ []byte, _ time.Time, id, typ string) (http.Header, error) {
	if err := needEvent("gitlab", "X-Gitlab-Event-UUID", id, "X-Gitlab-Event", typ); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("X-Gitlab-Token", s.token)
	h.Set("Idempotency-Key", id)
	h.Set("X-Gitlab-Event-UUID", id)
	h.Set("X-Gitlab-Event", typ)
	return h, nil
}
