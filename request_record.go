package hookinbox

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The record's bounds: a header value is cut at maxHeaderValue bytes, and headers
// stop being added once they hold maxHeaderBytes, so a request's headers cannot
// bloat its row.
const (
	maxHeaderValue = 512
	maxHeaderBytes = 4096
)

// credentialHeader reports whether a header may carry a credential rather than a
// signature: a bearer or basic token, a cookie, a shared secret sent as is (GitLab's
// X-Gitlab-Token), an API key. Such headers are never recorded.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	if n == "authorization" || n == "proxy-authorization" || n == "cookie" {
		return true
	}
	for _, s := range []string{"token", "secret", "password", "api-key", "apikey", "api_key"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// recordRequest returns the record of r as JSON, or nil when the inbox keeps none
// (Config.OmitRequestRecord). secretSlot is the index of the secret that verified the
// request, -1 when none says.
func (i *Inbox[TTx]) recordRequest(r *http.Request, secretSlot int) []byte {
	if i.omitRequestRecord {
		return nil
	}
	rec := hookinboxtype.RequestRecord{Method: r.Method, Path: r.URL.Path, RemoteAddr: r.RemoteAddr, ContentLength: r.ContentLength,
		Headers: map[string][]string{}}
	if secretSlot >= 0 {
		rec.SecretSlot = &secretSlot
	}
	names := make([]string, 0, len(r.Header))
	for name := range r.Header {
		if !credentialHeader(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	size := 0
	for _, name := range names {
		for _, v := range r.Header[name] {
			v = storableText(v, maxHeaderValue)
			if size += len(name) + len(v); size > maxHeaderBytes {
				break
			}
			rec.Headers[name] = append(rec.Headers[name], v)
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil
	}
	return b
}

// storableText is s cut at n bytes, as valid UTF-8 without NUL: what a JSON column
// stores (PostgreSQL's jsonb refuses \u0000).
func storableText(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\ufffd")
	}
	return strings.ReplaceAll(s, "\x00", "")
}
