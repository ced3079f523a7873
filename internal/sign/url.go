package sign

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// URLSigner is a Signer for a scheme that signs the URL the provider calls as well
// as the body: Twilio and Square. NewRequest signs with SignURL and the request's
// URL; Sign signs for the signer's configured public URL alone, and fails when
// there is none.
type URLSigner interface {
	Signer

	// SignURL returns the headers the provider would send with body at time at to
	// url: the signer's public URL (when it has one) with url's query, else url.
	SignURL(url string, body []byte, at time.Time) (http.Header, error)
}

// urlToSign is what a URL-signed scheme signs for a request to target: public with
// target's query when public is set (the provider calls the public URL; a proxy
// forwards to target), else target.
func urlToSign(scheme, public, target string) (string, error) {
	if public == "" {
		if target == "" {
			return "", fmt.Errorf("%s: the URL is signed: give the signer a public URL, or use SignURL", scheme)
		}
		return target, nil
	}
	if _, query, ok := strings.Cut(target, "?"); ok {
		return public + "?" + query, nil
	}
	return public, nil
}
