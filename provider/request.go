package provider

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// RequestVerifier is implemented by verifiers of schemes that sign the URL the
// provider called as well as the body (Twilio, Square), which Verify's headers and
// body alone do not carry. Receivers test for it and verify the whole request:
//
//	if rv, ok := verifier.(provider.RequestVerifier); ok {
//		v, err = rv.VerifyRequest(r, body)
//	} else {
//		v, err = verifier.Verify(r.Header, body)
//	}
//
// Such a verifier's Verify checks the signature against its configured public URL
// with no query string, and refuses every request when none is configured.
type RequestVerifier interface {
	Verifier

	// VerifyRequest is Verify for the request r, whose body (already read) is body.
	// The signed URL is the verifier's configured public URL, when there is one,
	// followed by r's query string as received; otherwise r's own URL: http or
	// https (r.TLS), r.Host, and the path and query as received. Only the public URL
	// is right behind a proxy or load balancer that changes the host, scheme or
	// path.
	VerifyRequest(r *http.Request, body []byte) (Verified, error)
}

// checkPublicURL refuses a configured public URL that cannot be the URL a provider
// calls: it must be an absolute http or https URL with a host, and no query or
// fragment (the query is the request's own). "" is accepted: none configured.
func checkPublicURL(scheme, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("provider: %s: public_url %q is not a URL", scheme, raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("provider: %s: public_url %q is not an http or https URL", scheme, raw)
	case u.Host == "":
		return fmt.Errorf("provider: %s: public_url %q has no host", scheme, raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#"):
		return fmt.Errorf("provider: %s: public_url %q has a query or fragment; give the URL without them (the request's query is appended)", scheme, raw)
	case u.User != nil:
		return fmt.Errorf("provider: %s: public_url must not carry a user or password", scheme)
	}
	return nil
}

// signedURL returns the URL a provider signed for r: public followed by r's raw
// query when public is set, else the URL r was sent to as this server saw it. The
// path and query are taken as received (RequestURI), not re-encoded: the provider
// signs the text of the URL it was configured with.
func signedURL(r *http.Request, public string) string {
	target := r.RequestURI
	if target == "" || !strings.HasPrefix(target, "/") {
		// A client-side request (tests) or an absolute-form target.
		target = r.URL.RequestURI()
	}
	if public != "" {
		_, query, ok := strings.Cut(target, "?")
		if !ok {
			return public
		}
		return public + "?" + query
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	return scheme + "://" + host + target
}
